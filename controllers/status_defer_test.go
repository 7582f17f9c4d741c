package controllers

import (
	"errors"
	"testing"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

func TestDeferStatusToVerification(t *testing.T) {
	installing := v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling, ObservedGeneration: 1}
	succeeded := v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseSucceeded, ObservedGeneration: 1}
	failed := v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseFailed, ObservedGeneration: 1}
	pointed := func() *installState { return &installState{crds: []*crdState{{name: "a"}, {name: "b", written: true}}} }
	for _, tc := range []struct {
		name      string
		state     func() *installState
		stepErr   error
		old, next v1alpha1.WebhookInstallStatus
		want      bool
	}{
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := deferStatusToVerification(tc.state(), tc.stepErr, tc.old, tc.next); got != tc.want {
				t.Errorf("deferStatusToVerification = %v, want %v", got, tc.want)
			}
		})
	}
}
