package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// takeOver moves a CRD from the install this one replaces (spec.replaces),
// or from a deleted install that kept serving it, to this one. It waits
// until every webhook Deployment of this install is fully rolled out on
// its current certificate: until then the previous owner keeps serving
// the CRD, so no conversion request ever reaches a
// webhook that is not ready. The claim is written with optimistic
// concurrency; the caller then points spec.conversion at this install's
// Service and CA in one write, which the API server applies atomically.
func (r *WebhookInstallReconciler) takeOver(ctx context.Context, s *installState, c *crdState) (bool, error) {
	if len(s.rollingOut) > 0 {
		c.state, c.message = v1alpha1.ConversionPending, "served by WebhookInstall "+c.from+" until this install's webhooks are rolled out"
		s.stop(v1alpha1.PhaseInstalling, v1alpha1.ReasonHandoverPending, fmt.Sprintf(
			"taking over CRD %s from WebhookInstall %s once deployments %v are fully rolled out", c.name, c.from, s.rollingOut))
		return false, nil
	}
	if err := r.claim(ctx, s.install, c.crd); err != nil {
		if apierrors.IsConflict(err) {
			s.stop(v1alpha1.PhaseInstalling, v1alpha1.ReasonHandoverPending, fmt.Sprintf("CRD %s changed while taking it over; retrying", c.name))
			s.retryWithin(retrySoon)
			return false, nil
		}
		return false, fmt.Errorf("taking over CRD %s: %w", c.name, err)
	}
	c.handover = false
	r.Recorder.Eventf(s.install, c.crd, corev1.EventTypeNormal, "TookOver", "Claim",
		"Took over conversion of CRD %s from WebhookInstall %s", c.name, c.from)
	return true, nil
}

// replacedRef is "<namespace>/<spec.replaces>", or "" when the install
// replaces nothing.
func replacedRef(install *v1alpha1.WebhookInstall) string {
	if install.Spec.Replaces == "" {
		return ""
	}
	return install.Namespace + "/" + install.Spec.Replaces
}
