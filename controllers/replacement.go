package controllers

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// indexReplaces indexes WebhookInstalls by the install they replace, so an
// install finds its replacement, and a replacement's events wake it.
const indexReplaces = "spec.replaces"

// replacement returns the live (not deleting) install of the namespace
// whose spec.replaces names install, or nil.
func (r *WebhookInstallReconciler) replacement(ctx context.Context, install *v1alpha1.WebhookInstall) (*v1alpha1.WebhookInstall, error) {
	var newer v1alpha1.WebhookInstallList
	if err := r.Client.List(ctx, &newer, client.InNamespace(install.Namespace), client.MatchingFields{indexReplaces: install.Name}); err != nil {
		return nil, fmt.Errorf("listing installs that replace %s: %w", installRef(install), err)
	}
	for i := range newer.Items {
		if newer.Items[i].DeletionTimestamp.IsZero() {
			return &newer.Items[i], nil
		}
	}
	return nil, nil
}

// yieldToReplacement runs instead of the pipeline while a newer install
// replaces this one. This install writes nothing to its workloads or CRDs
// (the newer one adopts same-named objects and takes the CRDs over), so
// the two never fight. CRDs the newer install does not list are released
// with deletion's never-unreadable rule. Once the newer install owns the
// rest and is Succeeded, this install's remaining Deployments, Services
// and Secrets are deleted and it is marked Replaced; its claims are gone,
// so deleting it later touches no CRD. Deleting the newer install before
// that rolls back: this install resumes where it was.
func (r *WebhookInstallReconciler) yieldToReplacement(ctx context.Context, s *installState, newer *v1alpha1.WebhookInstall) error {
	var serving []string
	for _, name := range conversionCRDNames(s.install) {
		crd := crdMetadata()
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return err
			}
			continue
		}
		if crd.Annotations[v1alpha1.AnnotationOwner] != installRef(s.install) {
			continue
		}
		if !slices.Contains(conversionCRDNames(newer), name) {
			if err := r.release(ctx, s, name, "is replaced by WebhookInstall "+installRef(newer)+", which does not list it"); err != nil {
				return err
			}
			continue
		}
		serving = append(serving, name)
	}
	newerDone := newer.Status.Phase == v1alpha1.PhaseSucceeded && newer.Status.ObservedGeneration == newer.Generation
	if len(serving) > 0 || !newerDone {
		return r.writeReplacementStatus(ctx, s.install, v1alpha1.PhaseReplacing, v1alpha1.ReasonReplacing, fmt.Sprintf(
			"WebhookInstall %s replaces this install, which keeps serving CRDs %v until %s has taken them over and succeeded (delete %s to roll back)",
			installRef(newer), serving, newer.Name, newer.Name))
	}
	if s.install.Status.Phase != v1alpha1.PhaseReplaced { // done once: a resync reads nothing live
		if err := r.deleteOwned(ctx, s.install); err != nil {
			return err
		}
		forgetInstallMetrics(s.install)
	}
	return r.writeReplacementStatus(ctx, s.install, v1alpha1.PhaseReplaced, v1alpha1.ReasonReplaced, fmt.Sprintf(
		"replaced by WebhookInstall %s, which serves its CRDs; this install's deployments, services and secrets are removed. Delete it when convenient: it no longer touches any CRD",
		installRef(newer)))
}

// writeReplacementStatus sets the phase and the Ready condition, keeping
// the rest of the status (the rotation history stays readable), and
// writes only when that changes something.
func (r *WebhookInstallReconciler) writeReplacementStatus(ctx context.Context, install *v1alpha1.WebhookInstall, phase v1alpha1.InstallPhase, reason, message string) error {
	next := install.Status.DeepCopy()
	next.Phase, next.Reason, next.Message = phase, reason, message
	meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: v1alpha1.TypeReady, Status: metav1.ConditionFalse,
		ObservedGeneration: install.Generation, Reason: reason, Message: message})
	if equality.Semantic.DeepEqual(&install.Status, next) {
		return nil
	}
	old := install.Status
	updated := install.DeepCopy()
	updated.Status = *next
	if err := r.Client.Status().Update(ctx, updated); err != nil {
		return ignoreConflict(err)
	}
	r.recordTransitions(install, old, *next)
	return nil
}
