package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/rotation"
)

// Metrics the shipped alerts read (config/prometheus): per install, its
// phase and its next renewal; cluster-wide, the conversion drift restores.
var (
	installPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hookwright_install_phase",
		Help: "1 for the phase each WebhookInstall is in (Pending, Installing, Succeeded, Failed, Replacing, Replaced), 0 for the others.",
	}, []string{"namespace", "install", "phase"})
	nextRotation = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hookwright_next_rotation_timestamp_seconds",
		Help: "When the earliest certificate renewal of each WebhookInstall is due (status.certsRotateAt, Unix seconds).",
	}, []string{"namespace", "install"})
	conversionDriftRestores = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "hookwright_conversion_drift_restores_total",
		Help: "CRD spec.conversion stanzas Hookwright restored because another field manager had changed them.",
	})
)

// installPhases are every phase an install can be in.
var installPhases = []v1alpha1.InstallPhase{
	v1alpha1.PhasePending, v1alpha1.PhaseInstalling, v1alpha1.PhaseSucceeded,
	v1alpha1.PhaseFailed, v1alpha1.PhaseReplacing, v1alpha1.PhaseReplaced,
}

// rotationReasons are every reason a rotation record can carry: the
// certificate checks' (certs), the planner's (rotation) and the serving
// move of a CA rotation (step_rotation.go).
var rotationReasons = []string{
	string(certs.ReasonMissing), string(certs.ReasonInvalid), string(certs.ReasonExpiring),
	string(certs.ReasonPolicyChanged), string(certs.ReasonNamesChanged), string(certs.ReasonCAChanged),
	rotation.ReasonManual, rotation.ReasonInitial, rotation.ReasonCAExpired, reasonCARotation,
}

// reasonCARotation: a serving certificate reissued because its CA was
// promoted.
const reasonCARotation = "CARotation"

func init() {
	ctrlmetrics.Registry.MustRegister(installPhase, nextRotation, conversionDriftRestores)
	// Alerts use increase(): every series they read exists at 0 from the
	// start, so the first event after a restart is an increase.
	for _, kind := range []v1alpha1.RotationKind{v1alpha1.RotationCA, v1alpha1.RotationServing} {
		for _, reason := range rotationReasons {
			for _, outcome := range []v1alpha1.RotationOutcome{v1alpha1.RotationSucceeded, v1alpha1.RotationFailed} {
				rotationsTotal.WithLabelValues(string(kind), reason, string(outcome))
			}
		}
	}
	for _, result := range []string{verifySuccess, verifyFailure, verifyUnverifiable} {
		verificationsTotal.WithLabelValues(result)
	}
}

// The results verificationsTotal counts.
const (
	verifySuccess      = "success"
	verifyFailure      = "failure"
	verifyUnverifiable = "unverifiable"
)

// observeInstall sets an install's phase and next-renewal gauges; like the
// expiry gauges, on every pass, so a restarted manager exports them at once.
func observeInstall(install *v1alpha1.WebhookInstall, next v1alpha1.WebhookInstallStatus) {
	for _, phase := range installPhases {
		value := 0.0
		if next.Phase == phase {
			value = 1
		}
		installPhase.WithLabelValues(install.Namespace, install.Name, string(phase)).Set(value)
	}
	if next.CertsRotateAt != nil {
		nextRotation.WithLabelValues(install.Namespace, install.Name).Set(float64(next.CertsRotateAt.Unix()))
	} else {
		nextRotation.DeleteLabelValues(install.Namespace, install.Name)
	}
}

// forgetInstallSeries drops the per-install series of a deleted install.
func forgetInstallSeries(install *v1alpha1.WebhookInstall) {
	labels := prometheus.Labels{"namespace": install.Namespace, "install": install.Name}
	installPhase.DeletePartialMatch(labels)
	nextRotation.DeletePartialMatch(labels)
}
