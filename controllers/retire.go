package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

// handoverRecheck is how often an install whose Service a CRD still points
// at, while another install is taking the CRD over, looks again.
const handoverRecheck = 5 * time.Second

// retire runs instead of the pipeline while the install is deleted, or
// replaced by newer (nil when none). For each CRD it owns (listed, or
// claimed and no longer listed):
//   - a CRD newer lists is left to newer, which takes it over once its own
//     webhook serves (step_handover.go); until then this install keeps
//     serving it and writes nothing that newer may adopt;
//   - any other is released: conversion None when that is harmless, else
//     kept serving (keepalive.go): its webhook's certificates, Deployment,
//     Service and the CRD's caBundle are maintained by the usual steps;
//   - a CRD another install has claimed but not yet pointed at its own
//     webhook keeps this install's Service until it has.
//
// Only when nothing converts through the install any more does a deleted
// install remove its Deployments, Services, Secrets and ServiceAccounts and
// let go, and a replaced one turn Replaced.
//
// Its admission configurations go first (admission_delete.go): a deleted
// install's at once, a replaced install's once newer has succeeded (newer
// registers its own, under its own name, before it can succeed: the
// webhooks never go unregistered during an upgrade, and both versions see
// requests meanwhile); and the Deployments, Services and Secrets they call
// are removed only once a live read confirms they are gone.
func (r *WebhookInstallReconciler) retire(ctx context.Context, s *installState, newer *v1alpha1.WebhookInstall) (ctrl.Result, error) {
	deleting := !s.install.DeletionTimestamp.IsZero()
	if deleting && !controllerutil.ContainsFinalizer(s.install, Finalizer) {
		return ctrl.Result{}, nil
	}
	me := installRef(s.install)
	why := "was deleted"
	if deleting {
		terminating, err := r.namespaceTerminating(ctx, s.install.Namespace)
		if err != nil {
			return ctrl.Result{}, err
		}
		if s.namespaceTerminating = terminating; terminating {
			why = "was deleted with its namespace"
		}
	}
	if newer != nil {
		why = "is replaced by WebhookInstall " + installRef(newer) + ", which does not list it"
	}
	// A Replaced install owns nothing: its resyncs read only the cache.
	replacedDone := !deleting && s.install.Status.Phase == v1alpha1.PhaseReplaced
	newerDone := newer != nil && newer.Status.Phase == v1alpha1.PhaseSucceeded && newer.Status.ObservedGeneration == newer.Generation
	switch {
	case deleting:
		if err := r.dropAdmission(ctx, s.install, "was deleted"); err != nil {
			return ctrl.Result{}, err
		}
	case newerDone && !replacedDone:
		if err := r.dropAdmission(ctx, s.install, "is replaced by WebhookInstall "+installRef(newer)+", which has succeeded"); err != nil {
			return ctrl.Result{}, err
		}
	}
	names, err := r.claimedCRDNames(ctx, s.install)
	if err != nil {
		return ctrl.Result{}, err
	}
	var handing, waiting []string
	var handingCRDs []*apiextensionsv1.CustomResourceDefinition
	for _, name := range names {
		cached := crdMetadata()
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, cached); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return ctrl.Result{}, err
		}
		if cached.Annotations[v1alpha1.AnnotationOwner] != me && replacedDone {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return ctrl.Result{}, fmt.Errorf("reading CRD %s: %w", name, err)
		}
		if owner := crd.Annotations[v1alpha1.AnnotationOwner]; owner != me {
			ours, err := r.ownService(ctx, s, crd)
			if err != nil || !ours {
				if err != nil {
					return ctrl.Result{}, err
				}
				continue
			}
			holder, err := r.ownerInstall(ctx, owner)
			if err != nil {
				return ctrl.Result{}, err
			}
			if holder != nil {
				waiting = append(waiting, fmt.Sprintf("%s (claimed by WebhookInstall %s)", name, owner))
				continue
			}
			// Nobody owns a CRD that converts through this install's
			// Service: the install takes it back, to keep it served.
			if err := r.claim(ctx, s.install, crd); err != nil {
				if !apierrors.IsConflict(err) {
					return ctrl.Result{}, fmt.Errorf("claiming CRD %s back: %w", name, err)
				}
				waiting = append(waiting, name)
				continue
			}
		}
		if newer != nil && slices.Contains(conversionCRDNames(newer), name) {
			handing = append(handing, name)
			if pointsAtInstall(crd, s.install) {
				handingCRDs = append(handingCRDs, crd)
			}
			continue
		}
		kept, err := r.releaseOrKeep(ctx, s, crd, why)
		if err != nil {
			return ctrl.Result{}, err
		}
		if kept != nil {
			s.crds = append(s.crds, kept)
		}
	}

	if len(s.crds) > 0 {
		return r.keepAlive(ctx, s, newer, handing, handingCRDs)
	}
	if len(waiting) > 0 {
		return ctrl.Result{RequeueAfter: handoverRecheck}, r.writeReplacementStatus(ctx, s.install, s.install.Status.Phase, v1alpha1.ReasonKeptAlive, fmt.Sprintf(
			"keeps its services while CRD(s) %v still convert through them: another install has claimed them and is pointing them at its own webhook", waiting))
	}
	if newer != nil {
		if len(handing) > 0 || (!deleting && !newerDone) {
			return ctrl.Result{}, r.writeReplacementStatus(ctx, s.install, v1alpha1.PhaseReplacing, v1alpha1.ReasonReplacing, replacingMessage(newer, handing))
		}
	}
	if deleting {
		return r.letGo(ctx, s)
	}
	if s.install.Status.Phase != v1alpha1.PhaseReplaced { // done once: a resync reads nothing live
		left, err := r.confirmAdmissionGone(ctx, s.install, "is replaced by WebhookInstall "+installRef(newer)+", which has succeeded")
		if err != nil {
			return ctrl.Result{}, err
		}
		if left != "" {
			return ctrl.Result{RequeueAfter: handoverRecheck}, r.writeReplacementStatus(ctx, s.install, v1alpha1.PhaseReplacing, v1alpha1.ReasonReplacing,
				replacingMessage(newer, handing)+"; its workloads are removed once its admission configurations are gone: "+left)
		}
		if err := r.deleteOwned(ctx, s.install); err != nil {
			return ctrl.Result{}, err
		}
		forgetInstallMetrics(s.install)
	}
	return ctrl.Result{}, r.writeReplacementStatus(ctx, s.install, v1alpha1.PhaseReplaced, v1alpha1.ReasonReplaced, fmt.Sprintf(
		"replaced by WebhookInstall %s, which serves its CRDs; this install's deployments, services and secrets are removed. Delete it when convenient: it no longer touches any CRD",
		installRef(newer)))
}

// namespaceTerminating reads the namespace live: it is being deleted (or
// already gone).
func (r *WebhookInstallReconciler) namespaceTerminating(ctx context.Context, name string) (bool, error) {
	ns := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("reading namespace %s: %w", name, err)
	}
	return !ns.DeletionTimestamp.IsZero(), nil
}

func replacingMessage(newer *v1alpha1.WebhookInstall, handing []string) string {
	return fmt.Sprintf("WebhookInstall %s replaces this install, which keeps serving CRDs %v until %s has taken them over and succeeded (delete %s to roll back)",
		installRef(newer), handing, newer.Name, newer.Name)
}

// keepAlive maintains the webhooks of the kept CRDs (s.crds) with the
// usual steps, and only those: certificates and their rotation,
// Deployments (with their certificate mount), Services, the CRDs'
// caBundle, verification. CRDs being handed over to newer through the
// same Services follow their certificates until newer takes them.
func (r *WebhookInstallReconciler) keepAlive(ctx context.Context, s *installState, newer *v1alpha1.WebhookInstall, handing []string, handingCRDs []*apiextensionsv1.CustomResourceDefinition) (ctrl.Result, error) {
	for _, crd := range handingCRDs {
		service := crd.Spec.Conversion.Webhook.ClientConfig.Service.Name
		if !slices.ContainsFunc(s.crds, func(c *crdState) bool { return c.webhook.Service == service }) {
			continue
		}
		c, err := r.keepState(ctx, s, crd, "until WebhookInstall "+installRef(newer)+" takes it over")
		if err != nil {
			return ctrl.Result{}, err
		}
		if c != nil {
			c.kept = false // newer's to take, not kept: named as handed over
			s.crds = append(s.crds, c)
		}
	}
	s.webhooks = slices.DeleteFunc(s.webhooks, func(w desired.Webhook) bool {
		return !slices.ContainsFunc(s.crds, func(c *crdState) bool { return c.webhook.Service == w.Service })
	})
	s.keepOnly = true

	switch {
	case newer == nil:
		s.keepAlive = &keepAliveNote{reason: v1alpha1.ReasonKeptAlive, message: func() string { return deletedKeepMessage(s) }}
	case len(handing) > 0 || newer.Status.Phase != v1alpha1.PhaseSucceeded:
		s.keepAlive = &keepAliveNote{phase: v1alpha1.PhaseReplacing, reason: v1alpha1.ReasonReplacing,
			message: func() string { return replacingMessage(newer, handing) + "; " + replacedKeepMessage(s, newer) }}
	default:
		s.keepAlive = &keepAliveNote{phase: v1alpha1.PhaseReplacing, reason: v1alpha1.ReasonKeptAlive, message: func() string { return replacedKeepMessage(s, newer) }}
	}
	var stepErr error
	for _, run := range []step{r.ensureCertificates, r.ensureWorkloads, r.configureConversion, r.verifyConversion} {
		if stepErr = run(ctx, s); stepErr != nil || s.halt != nil {
			break
		}
	}
	r.wakeWhenDue(s)
	if err := r.writeStatus(ctx, s, stepErr); err != nil || stepErr != nil {
		return ctrl.Result{}, errors.Join(stepErr, err)
	}
	return ctrl.Result{RequeueAfter: r.nextPass(s)}, nil
}

// letGo removes what the deleted install made and its finalizer: its
// admission configurations first, then, once a live read confirms they are
// gone, the Deployments, Services and Secrets they called.
func (r *WebhookInstallReconciler) letGo(ctx context.Context, s *installState) (ctrl.Result, error) {
	left, err := r.confirmAdmissionGone(ctx, s.install, "was deleted")
	if err != nil {
		return ctrl.Result{}, err
	}
	if left != "" {
		ctrl.LoggerFrom(ctx).Info("Waiting for the admission configurations to be gone before removing the webhooks they call", "left", left)
		return ctrl.Result{RequeueAfter: handoverRecheck}, nil
	}
	if err := r.deleteOwned(ctx, s.install); err != nil {
		return ctrl.Result{}, err
	}
	forgetInstallMetrics(s.install)
	patch := client.MergeFromWithOptions(s.install.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(s.install, Finalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, s.install, patch, client.FieldOwner(desired.FieldManager)))
}

// claimedCRDNames are the CRDs the install lists, then those it still
// claims without listing them (a new version dropped them), from the
// metadata cache's owner index.
func (r *WebhookInstallReconciler) claimedCRDNames(ctx context.Context, install *v1alpha1.WebhookInstall) ([]string, error) {
	names := conversionCRDNames(install)
	claimed := &metav1.PartialObjectMetadataList{}
	claimed.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	if err := r.Client.List(ctx, claimed, client.MatchingFields{indexCRDOwner: installRef(install)}); err != nil {
		return nil, fmt.Errorf("listing CRDs: %w", err)
	}
	for _, crd := range claimed.Items {
		if !slices.Contains(names, crd.Name) {
			names = append(names, crd.Name)
		}
	}
	return names, nil
}
