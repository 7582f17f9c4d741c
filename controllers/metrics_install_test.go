package controllers

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// TestAlertedCountersStartAtZero: every series an alert's increase()
// reads exists from the start, so the first failure after a restart is an
// increase from 0 (config/prometheus/promtool_test.yaml shows the alert
// missing it otherwise).
func TestAlertedCountersStartAtZero(t *testing.T) {
	// Exported means gathered: a vector's series exist only once created.
	// An exact count also catches a rotation reason missing from
	// rotationReasons, should the suite's rotations run first.
	if n := testutil.CollectAndCount(rotationsTotal); n != 2*len(rotationReasons)*2 {
		t.Errorf("rotations_total has %d series, want one per kind, reason and outcome (%d)", n, 2*len(rotationReasons)*2)
	}
	if n := testutil.CollectAndCount(verificationsTotal); n != 3 {
		t.Errorf("conversion_verifications_total has %d series at start, want success, failure and unverifiable", n)
	}
	if n := testutil.CollectAndCount(conversionDriftRestores); n != 1 {
		t.Errorf("conversion_drift_restores_total is not exported at start")
	}
}

func TestInstallSeriesFollowThePhaseAndGoWithTheInstall(t *testing.T) {
	install := &v1alpha1.WebhookInstall{ObjectMeta: metav1.ObjectMeta{Namespace: "metrics-test", Name: "crontab"}}
	due := metav1.Unix(1_900_000_000, 0)
	observeInstall(install, v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling, CertsRotateAt: &due})
	observeInstall(install, v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseSucceeded, CertsRotateAt: &due})
	for phase, want := range map[string]float64{"Succeeded": 1, "Installing": 0, "Failed": 0, "Pending": 0} {
		if got := testutil.ToFloat64(installPhase.WithLabelValues("metrics-test", "crontab", phase)); got != want {
			t.Errorf("install_phase{phase=%s} = %v, want %v", phase, got, want)
		}
	}
	if got := testutil.ToFloat64(nextRotation.WithLabelValues("metrics-test", "crontab")); got != 1_900_000_000 {
		t.Errorf("next_rotation_timestamp_seconds = %v, want status.certsRotateAt", got)
	}
	forgetInstallMetrics(install)
	for _, phase := range installPhases {
		if installPhase.DeleteLabelValues("metrics-test", "crontab", string(phase)) {
			t.Errorf("install_phase{phase=%s} left after the install went", phase)
		}
	}
	if nextRotation.DeleteLabelValues("metrics-test", "crontab") {
		t.Errorf("next_rotation_timestamp_seconds left after the install went")
	}
}
