package controllers

import (
	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// deferStatusToVerification: during an install's first convergence, the
// pass that points the CRDs (or admission configurations) at the webhook
// leaves the status to the pass that verifies them. That pass follows at
// once (the CRD and configuration watches wake it; verifyDelay is the
// fallback), so the status skips only "configured, verification follows",
// which no one acts on: one write and one Event less per install.
//
// Only a pass with nothing else to record defers: no certificate issued,
// no rotation or migration started, no manual request handled, no error.
// Everything else the status says is recomputed by the next pass from the
// cluster, so a crash in between loses nothing.
func deferStatusToVerification(s *installState, stepErr error, old, next v1alpha1.WebhookInstallStatus) bool {
	if stepErr != nil || old.Phase == v1alpha1.PhaseSucceeded || next.Phase != v1alpha1.PhaseInstalling {
		return false
	}
	if s.issuedCerts || len(s.rotations) > 0 || len(s.migrations) > 0 || s.handledRequest != "" {
		return false
	}
	if old.ObservedGeneration != next.ObservedGeneration {
		return false // the status says which spec it reflects; a new one is told at once
	}
	return writtenThisPass(s)
}

// writtenThisPass: a CRD's conversion or an admission configuration was
// written this pass, so a verification pass follows.
func writtenThisPass(s *installState) bool {
	for _, c := range s.crds {
		if c.written {
			return true
		}
	}
	for _, a := range s.admission {
		if a.written {
			return true
		}
	}
	return false
}
