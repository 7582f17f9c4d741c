package controllers

import (
	"errors"
	"testing"
	"time"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/rotation"
)

func TestDeferStatusToVerification(t *testing.T) {
	installing := v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling, ObservedGeneration: 1}
	succeeded := v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseSucceeded, ObservedGeneration: 1}
	failed := v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseFailed, ObservedGeneration: 1}
	pointed := func() *installState { return &installState{crds: []*crdState{{name: "a"}, {name: "b", written: true}}} }
	runDeferCases(t, "deferStatusToVerification", deferStatusToVerification, []deferCase{
		{"first convergence, CRD just pointed: the verifying pass writes", pointed, nil, installing, installing, true},
		{"admission configuration just written", func() *installState {
			return &installState{admission: []*admissionState{{written: true}}}
		}, nil, installing, installing, true},
		{"nothing written this pass", func() *installState { return &installState{crds: []*crdState{{name: "a"}}} }, nil, installing, installing, false},
		{"already served: a rewrite (rotation, drift) is told at once", pointed, nil, succeeded, succeeded, false},
		{"the pass failed", pointed, nil, installing, failed, false},
		{"a step erred", pointed, errors.New("boom"), installing, installing, false},
		{"certificates issued this pass", func() *installState { s := pointed(); s.issuedCerts = true; return s }, nil, installing, installing, false},
		{"a rotation started this pass", func() *installState {
			s := pointed()
			s.rotations = []v1alpha1.RotationRecord{{Kind: v1alpha1.RotationCA}}
			return s
		}, nil, installing, installing, false},
		{"a migration record changed", func() *installState {
			s := pointed()
			s.migrations = []v1alpha1.StorageMigrationStatus{{Name: "a"}}
			return s
		}, nil, installing, installing, false},
		{"a manual request handled", func() *installState { s := pointed(); s.handledRequest = "ca: leak"; return s }, nil, installing, installing, false},
		{"a conversion drift restored: its fight counter lives only in the status", func() *installState {
			s := pointed()
			s.crds[1].driftManager = "argocd-controller"
			return s
		}, nil, installing, installing, false},
		{"an admission drift restored", func() *installState {
			return &installState{admission: []*admissionState{{written: true, driftManager: "flux"}}}
		}, nil, installing, installing, false},
		{"recovering from Failed: the status says Failed until written", pointed, nil, failed, installing, false},
		{"a new generation observed", pointed, nil, installing, v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling, ObservedGeneration: 2}, false},
		{"no status yet (the first pass left it to a later one): the verifying pass writes", pointed, nil, v1alpha1.WebhookInstallStatus{}, installing, true},
		{"no status yet, the Deployment available, its Service's endpoints a moment late", func() *installState {
			return &installState{endpointsJustLate: true}
		}, nil, v1alpha1.WebhookInstallStatus{}, installing, true},
	})
}

func TestDeferFirstStatus(t *testing.T) {
	waiting := v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling, Reason: v1alpha1.ReasonDeploymentUnavailable, ObservedGeneration: 1}
	never := v1alpha1.WebhookInstallStatus{}
	first := func() *installState {
		return &installState{startingFor: 3 * time.Second, issuedCerts: true, rotations: []v1alpha1.RotationRecord{
			{Kind: v1alpha1.RotationCA, Reason: rotation.ReasonInitial}, {Kind: v1alpha1.RotationServing, Reason: rotation.ReasonInitial},
		}}
	}
	with := func(change func(*installState)) func() *installState {
		return func() *installState { s := first(); change(s); return s }
	}
	runDeferCases(t, "deferFirstStatus", deferFirstStatus, []deferCase{
		{"a new install's first pass, its Deployments just created: the pass their availability wakes writes", first, nil, never, waiting, true},
		{"the Deployments are older than the grace: the wait is told", with(func(s *installState) { s.startingFor = 0 }), nil, never, waiting, false},
		{"a status was written before: it is replaced at once", first, nil, waiting, v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling, Reason: v1alpha1.ReasonDeploymentUnavailable, ObservedGeneration: 2}, false},
		{"a step erred", first, errors.New("boom"), never, waiting, false},
		{"the first pass failed", first, nil, never, v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseFailed, Reason: v1alpha1.ReasonOwnerConflict}, false},
		{"waiting for something else than the Deployments", first, nil, never, v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling, Reason: v1alpha1.ReasonInProgress}, false},
		{"a rotation other than the first certificates", with(func(s *installState) {
			s.rotations = append(s.rotations, v1alpha1.RotationRecord{Kind: v1alpha1.RotationCA, Reason: rotation.ReasonManual})
		}), nil, never, waiting, false},
		{"a manual request handled", with(func(s *installState) { s.handledRequest = "ca: leak" }), nil, never, waiting, false},
		{"a migration record changed", with(func(s *installState) { s.migrations = []v1alpha1.StorageMigrationStatus{{Name: "a"}} }), nil, never, waiting, false},
		{"a drift restored", with(func(s *installState) {
			s.crds = []*crdState{{name: "a", driftManager: "argocd-controller"}}
		}), nil, never, waiting, false},
	})
}

func TestStartingFor(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		created []time.Time
		want    time.Duration
	}{
		{"none waits", nil, 0},
		{"created 2 s ago: 3 s left", []time.Time{now.Add(-2 * time.Second)}, 3 * time.Second},
		{"the oldest counts", []time.Time{now.Add(-time.Second), now.Add(-4 * time.Second)}, time.Second},
		{"one is 5 s old", []time.Time{now.Add(-time.Second), now.Add(-firstStatusGrace)}, 0},
		{"the API server's clock is a second ahead: the wait stays within the grace", []time.Time{now.Add(time.Second)}, firstStatusGrace},
		{"the clocks disagree by more than the grace", []time.Time{now.Add(time.Minute)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := startingFor(tc.created, now); got != tc.want {
				t.Errorf("startingFor = %v, want %v", got, tc.want)
			}
		})
	}
}

// deferCase is one pass's state and statuses, and whether its status waits.
type deferCase struct {
	name      string
	state     func() *installState
	stepErr   error
	old, next v1alpha1.WebhookInstallStatus
	want      bool
}

func runDeferCases(t *testing.T, name string, deferred func(*installState, error, v1alpha1.WebhookInstallStatus, v1alpha1.WebhookInstallStatus) bool, cases []deferCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := deferred(tc.state(), tc.stepErr, tc.old, tc.next); got != tc.want {
				t.Errorf("%s = %v, want %v", name, got, tc.want)
			}
		})
	}
}
