package controllers

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/rotation"
)

// watchedWithin bounds how long the pass that pointed a CRD at the
// webhook waits for Hookwright's CRD watch to show that write. The watch
// shows it within milliseconds; a busy API server may take longer, and
// then the pass leaves the verification to the pass the watch event wakes
// rather than hold a reconcile worker.
const watchedWithin = time.Second

// writeWatched: the CRD's conversion written this pass may be verified in
// this same pass, because Hookwright's CRD watch now shows the write.
//
// The API server loads a CRD change through a watch of its own, so a
// verification right after the write could convert through the previous
// configuration (for a new install, None: nothing to prove). Before, the
// pass that wrote left the verification to the pass the CRD's watch event
// woke. Waiting here for that same event (the cache holding the written
// resourceVersion) is the same sign, without the round trip through the
// work queue and the next pass's live reads: a new install reaches
// ConversionVerified sooner, in one pass and one status write.
//
// Only during an install's first convergence, with no certificate in
// flight but its first: a certificate rotation moves step by step, a
// status write apart, each step proven by the trust probe
// (trustprobe.go), and stays as it is. A hand-over or a restored drift is
// verified by the next pass too.
func (r *WebhookInstallReconciler) writeWatched(ctx context.Context, s *installState, c *crdState) bool {
	if c.writtenVersion == "" || c.handover || c.driftManager != "" || !firstConvergence(s, c.webhook.Service) {
		return false
	}
	cached := crdMetadata()
	err := wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, watchedWithin, true, func(ctx context.Context) (bool, error) {
		if err := r.Client.Get(ctx, client.ObjectKey{Name: c.name}, cached); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return cached.ResourceVersion == c.writtenVersion, nil
	})
	return err == nil
}

// firstConvergence: the install is converging (its status says Pending or
// Installing, or nothing yet), and the only certificates in flight for the
// Service are its first ones.
func firstConvergence(s *installState, service string) bool {
	switch s.install.Status.Phase {
	case "", v1alpha1.PhasePending, v1alpha1.PhaseInstalling:
	default:
		return false
	}
	for _, rec := range inProgressRotations(s) {
		if rec.Service == service && rec.Reason != rotation.ReasonInitial {
			return false
		}
	}
	return true
}
