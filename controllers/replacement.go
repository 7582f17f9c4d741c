package controllers

import (
	"context"
	"fmt"

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

// writeReplacementStatus sets the phase and the Ready condition, keeping
// the rest of the status (the rotation history stays readable), and
// writes only when that changes something (updateStatus: a conflict is
// retried on the live object, and a replaced install whose Deployment its
// replacement adopted has no other event to come, so a dropped write would
// stay unwritten).
func (r *WebhookInstallReconciler) writeReplacementStatus(ctx context.Context, install *v1alpha1.WebhookInstall, phase v1alpha1.InstallPhase, reason, message string) error {
	seen := install.Generation // the spec this pass decided on, whatever a retry reads
	from, written, err := r.updateStatus(ctx, install, func(install *v1alpha1.WebhookInstall) (v1alpha1.WebhookInstallStatus, bool) {
		next := install.Status.DeepCopy()
		next.Phase, next.Reason, next.Message = phase, reason, message
		meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: v1alpha1.TypeReady, Status: metav1.ConditionFalse,
			ObservedGeneration: seen, Reason: reason, Message: message})
		return *next, !equality.Semantic.DeepEqual(&install.Status, next)
	})
	if err != nil || written == nil {
		return err
	}
	r.recordTransitions(from, from.Status, written.Status)
	return nil
}
