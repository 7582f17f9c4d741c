package controllers

import (
	"testing"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

func TestPhaseChangeTold(t *testing.T) {
	st := func(phase v1alpha1.InstallPhase, reason string) v1alpha1.WebhookInstallStatus {
		return v1alpha1.WebhookInstallStatus{Phase: phase, Reason: reason}
	}
	installing := func(reason string) v1alpha1.WebhookInstallStatus { return st(v1alpha1.PhaseInstalling, reason) }
	succeeded := st(v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
	for _, tc := range []struct {
		name      string
		old, next v1alpha1.WebhookInstallStatus
		want      bool
	}{
		{"a new install starts installing", v1alpha1.WebhookInstallStatus{}, installing(v1alpha1.ReasonDeploymentUnavailable), false},
		{"a new install moves to its next step", installing(v1alpha1.ReasonDeploymentUnavailable), installing(v1alpha1.ReasonInProgress), false},
		{"a pending install starts installing once its CRD exists", st(v1alpha1.PhasePending, v1alpha1.ReasonCRDNotFound), installing(v1alpha1.ReasonInProgress), false},
		{"a new install waits for its CRD", v1alpha1.WebhookInstallStatus{}, st(v1alpha1.PhasePending, v1alpha1.ReasonCRDNotFound), true},
		{"an install succeeds", installing(v1alpha1.ReasonInProgress), succeeded, true},
		{"an install fails", installing(v1alpha1.ReasonInProgress), st(v1alpha1.PhaseFailed, v1alpha1.ReasonOwnerConflict), true},
		{"a served install goes back to installing", succeeded, installing(v1alpha1.ReasonDeploymentUnavailable), true},
		{"a failed install retries", st(v1alpha1.PhaseFailed, v1alpha1.ReasonOwnerConflict), installing(v1alpha1.ReasonInProgress), true},
		{"a failure changes its reason", st(v1alpha1.PhaseFailed, v1alpha1.ReasonOwnerConflict), st(v1alpha1.PhaseFailed, v1alpha1.ReasonForeignConversion), true},
		{"nothing changed", succeeded, succeeded, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := phaseChangeTold(tc.old, tc.next); got != tc.want {
				t.Errorf("phaseChangeTold(%s/%s -> %s/%s) = %v, want %v", tc.old.Phase, tc.old.Reason, tc.next.Phase, tc.next.Reason, got, tc.want)
			}
		})
	}
}
