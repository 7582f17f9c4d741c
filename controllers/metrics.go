package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// Metrics on the manager's registry (served at its /metrics endpoint).
var (
	certificateExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hookwright_certificate_expiry_timestamp_seconds",
		Help: "When each webhook Service's current CA and serving certificate expire (Unix seconds).",
	}, []string{"namespace", "install", "service", "kind"})
	rotationsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookwright_rotations_total",
		Help: "Certificate rotations that ended, by kind (CA, Serving), reason and outcome.",
	}, []string{"kind", "reason", "outcome"})
	rotationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "hookwright_rotation_duration_seconds",
		Help:    "Time from the start of a rotation to its completion.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 12), // 1 s .. ~1 h
	}, []string{"kind"})
	verificationsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookwright_conversion_verifications_total",
		Help: "Conversions through the API server done to verify a webhook, by result (success, failure, unverifiable).",
	}, []string{"result"})
	admissionGuardInForce = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "hookwright_admission_guard_in_force",
		Help: "1 when the admission guard (ValidatingAdmissionPolicy hookwright-install-authority and its binding) was in force at the last check before a CRD claim, else 0.",
	})
	claimsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookwright_claims_refused_total",
		Help: "CRD claims Hookwright refused to make on an install's behalf, by reason.",
	}, []string{"reason"})
	admissionVerificationsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookwright_admission_verifications_total",
		Help: "Requests through the API server made to verify an admission webhook, by webhook type and result (success, failure, unverifiable).",
	}, []string{"type", "result"})
	admissionDriftRestores = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookwright_admission_drift_restores_total",
		Help: "Admission configurations Hookwright rewrote because another field manager had changed a webhook it configured, by webhook type.",
	}, []string{"type"})
	migratedObjects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookwright_storage_migration_objects_total",
		Help: "Objects Hookwright's own storage migrator rewrote in their CRD's storage version (or found rewritten or deleted since the list).",
	}, []string{"method"})
	migrationsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookwright_storage_migrations_total",
		Help: "Storage migrations that ended, by method (Hookwright, StorageVersionMigration) and result (succeeded, failed).",
	}, []string{"method", "result"})
	migrationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "hookwright_storage_migration_duration_seconds",
		Help:    "Time from the start of a storage migration to its success.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14), // 1 s .. ~4.5 h
	}, []string{"method"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(certificateExpiry, rotationsTotal, rotationDuration, verificationsTotal, admissionGuardInForce, claimsRefused,
		admissionVerificationsTotal, admissionDriftRestores, migratedObjects, migrationsTotal, migrationDuration)
	// Alerts use increase(): a series must exist at 0 before its first event.
	claimsRefused.WithLabelValues(v1alpha1.ReasonAdmissionGuardNotInForce)
	for _, kind := range admissionKinds {
		for _, result := range []string{"success", "failure", "unverifiable"} {
			admissionVerificationsTotal.WithLabelValues(string(kind), result)
		}
		admissionDriftRestores.WithLabelValues(string(kind))
	}
	for _, method := range []string{v1alpha1.MethodHookwright, v1alpha1.MethodStorageVersionMigration} {
		migratedObjects.WithLabelValues(method)
		migrationsTotal.WithLabelValues(method, "succeeded")
		migrationsTotal.WithLabelValues(method, "failed")
	}
}

// observeStatusMetrics publishes what a written status says.
func observeStatusMetrics(install *v1alpha1.WebhookInstall, old []v1alpha1.RotationRecord, next v1alpha1.WebhookInstallStatus) {
	ended := map[string]bool{}
	for _, rec := range old {
		if rec.Outcome != v1alpha1.RotationInProgress {
			ended[rotationKey(rec)] = true
		}
	}
	for _, rec := range next.Rotations {
		if rec.Outcome == v1alpha1.RotationInProgress || ended[rotationKey(rec)] || rec.Completed == nil {
			continue
		}
		rotationsTotal.WithLabelValues(string(rec.Kind), rec.Reason, string(rec.Outcome)).Inc()
		rotationDuration.WithLabelValues(string(rec.Kind)).Observe(rec.Completed.Sub(rec.Started.Time).Seconds())
	}
}

// observeExpiry sets the expiry gauges on every pass, written or not, so
// a restarted operator exports them at once: alerts must not go blind
// until the next status change (weeks away for a steady install).
func observeExpiry(install *v1alpha1.WebhookInstall, next v1alpha1.WebhookInstallStatus) {
	for _, svc := range next.Services {
		if svc.CANotAfter != nil {
			certificateExpiry.WithLabelValues(install.Namespace, install.Name, svc.Name, string(v1alpha1.RotationCA)).Set(float64(svc.CANotAfter.Unix()))
		}
		if svc.ServingNotAfter != nil {
			certificateExpiry.WithLabelValues(install.Namespace, install.Name, svc.Name, string(v1alpha1.RotationServing)).Set(float64(svc.ServingNotAfter.Unix()))
		}
	}
}

// forgetInstallMetrics drops the series of a deleted install.
func forgetInstallMetrics(install *v1alpha1.WebhookInstall) {
	certificateExpiry.DeletePartialMatch(prometheus.Labels{"namespace": install.Namespace, "install": install.Name})
	forgetInstallSeries(install)
}
