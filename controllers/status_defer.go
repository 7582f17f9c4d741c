package controllers

import (
	"time"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/rotation"
)

// firstStatusGrace is how long a new install's first status may wait for
// its webhook Deployments to turn available (deferFirstStatus).
const firstStatusGrace = 5 * time.Second

// deferStatusToVerification: during an install's first convergence, the
// pass that points the CRDs (or admission configurations) at the webhook
// leaves the status to the pass that verifies them. That pass follows at
// once (the CRD and configuration watches wake it; verifyDelay is the
// fallback), so the status skips only "configured, verification follows",
// which no one acts on: one write and one Event less per install.
//
// Only a pass with nothing else to record defers: no certificate issued,
// no rotation or migration started, no manual request handled, no drift
// restored, no error. Everything else the status says is recomputed by the
// next pass from the cluster, so a crash in between loses nothing. A drift
// restore is not: its fight counter is carried from the old status alone.
// And only a first convergence (Pending or Installing, or no status yet:
// deferFirstStatus) defers: an install that says Failed or Succeeded says
// so until this pass's status replaces it.
//
// The same holds for a pass that finds a webhook Deployment available but
// its Service without a ready endpoint yet, within endpointsRetry of the
// Deployment turning available (endpointsJustLate): the EndpointSlice
// controller usually follows within a second (`make bench` P1 saw 12 of
// 100 installs wait on its 1 s retry, each with one more status write,
// "available, but no ready endpoint yet"), and the slice's update wakes
// the pass that points the CRDs. A wait that lasts is told: the pass
// endpointsRetry later (awaitReadyEndpoints asks for it) no longer
// defers. Until then the status still says the Deployment is not
// available, at most endpointsRetry longer than it is true.
func deferStatusToVerification(s *installState, stepErr error, old, next v1alpha1.WebhookInstallStatus) bool {
	if stepErr != nil || next.Phase != v1alpha1.PhaseInstalling {
		return false
	}
	if old.Phase != "" && old.Phase != v1alpha1.PhasePending && old.Phase != v1alpha1.PhaseInstalling {
		return false
	}
	if s.issuedCerts || len(s.rotations) > 0 || len(s.migrations) > 0 || s.handledRequest != "" || restoredDrift(s) {
		return false
	}
	if old.Phase != "" && old.ObservedGeneration != next.ObservedGeneration {
		return false // the status says which spec it reflects; a new one is told at once
	}
	return writtenThisPass(s) || s.endpointsJustLate
}

// writtenThisPass: a CRD's conversion or an admission configuration was
// written this pass and left to the verification pass its watch event
// wakes (not a new CA's publication, whose pass schedules the next:
// own_echo.go).
func writtenThisPass(s *installState) bool {
	for _, c := range s.crds {
		if c.written && !c.echoDropped {
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

// restoredDrift: this pass restored a CRD's conversion or an admission
// webhook that another field manager had rewritten.
func restoredDrift(s *installState) bool {
	for _, c := range s.crds {
		if c.driftManager != "" {
			return true
		}
	}
	for _, a := range s.admission {
		if a.driftManager != "" {
			return true
		}
	}
	return false
}

// deferFirstStatus: a new install's first pass issues its certificates,
// creates its webhook Deployments and can then only say "waiting for the
// deployments to be available". They usually are within a second (`make
// bench` P4, N=100 and 300: 0.4-0.9 s at p50), and the pass their
// availability wakes points the CRDs, verifies them and writes the
// status. So the first
// status waits for that pass, or until the Deployments are
// firstStatusGrace old (ensureWorkloads asks for a pass then), whichever
// comes first: a Deployment that does not start is told within seconds,
// and a new install makes one status write less.
//
// The first certificates' records are on their Secrets, written in the
// same requests (step_rotation.go): the status that follows takes them
// from there, with when they were issued (withStoredRotations,
// latestIssuance), and its one Event tells them. Only a pass with
// nothing else to record waits: no error, no rotation but the first
// certificates, no manual request, migration or drift restored. And
// only the first status: an install's status, once written, says what
// is true until the next one replaces it.
func deferFirstStatus(s *installState, stepErr error, old, next v1alpha1.WebhookInstallStatus) bool {
	if stepErr != nil || old.Phase != "" || next.Phase != v1alpha1.PhaseInstalling || next.Reason != v1alpha1.ReasonDeploymentUnavailable {
		return false
	}
	if s.startingFor <= 0 || len(s.migrations) > 0 || s.handledRequest != "" || restoredDrift(s) {
		return false
	}
	for _, rec := range s.rotations {
		if rec.Reason != rotation.ReasonInitial {
			return false
		}
	}
	return true
}

// startingFor is how long until the oldest of the Deployments created at
// created is firstStatusGrace old: zero when one already is, or when the
// API server's clock and ours disagree by more than that (a creation
// time that far ahead would keep a first status waiting).
func startingFor(created []time.Time, now time.Time) time.Duration {
	if len(created) == 0 {
		return 0
	}
	oldest := created[0]
	for _, c := range created[1:] {
		if c.Before(oldest) {
			oldest = c
		}
	}
	age := now.Sub(oldest)
	if age >= firstStatusGrace || age <= -firstStatusGrace {
		return 0
	}
	return min(firstStatusGrace-age, firstStatusGrace)
}
