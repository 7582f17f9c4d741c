package controllers

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// Event reasons of storage migrations (besides ReasonMigrationFailed and
// ReasonMigrationForbidden, which are also condition reasons).
const (
	eventMigrationStarted   = "MigrationStarted"
	eventMigrationSucceeded = "MigrationSucceeded"
)

// migrationReasonRank orders why CRDs are not migrated, the one a person
// must act on first.
var migrationReasonRank = []string{v1alpha1.ReasonMigrationFailed, v1alpha1.ReasonMigrationForbidden, v1alpha1.ReasonMigrationWaiting, v1alpha1.ReasonMigrationNotRequested, v1alpha1.ReasonMigrationRunning}

// setMigrationConditions sets StorageMigrated and OldVersionsRemovable
// from the live CRDs and the migration records. Neither counts towards
// Ready: the webhook serves whatever versions are stored.
func setMigrationConditions(st *v1alpha1.WebhookInstallStatus, s *installState, waiting func(string) (string, string)) {
	var live int
	var stale, removable []string
	reason, rank := "", len(migrationReasonRank)
	for _, c := range s.crds {
		if c.crd == nil {
			continue
		}
		live++
		if versions := removableVersions(c.crd); len(versions) > 0 {
			removable = append(removable, fmt.Sprintf("%s of %s", strings.Join(versions, ", "), c.name))
		}
		if len(staleVersions(c.crd)) == 0 {
			continue
		}
		m := recordOf(st.StorageMigrations, c.name)
		if m == nil {
			stale = append(stale, fmt.Sprintf("%s: objects are stored in %v", c.name, c.crd.Status.StoredVersions))
			continue
		}
		r := m.Reason
		if m.State == v1alpha1.MigrationRunning {
			r = v1alpha1.ReasonMigrationRunning
		}
		if i := indexOf(migrationReasonRank, r); i >= 0 && i < rank {
			reason, rank = r, i
		}
		stale = append(stale, fmt.Sprintf("%s: %s", c.name, m.Message))
	}
	if live == 0 {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.TypeStorageMigrated)
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.TypeOldVersionsRemovable)
		return
	}
	gen := s.observedGeneration()
	setCondition(st, gen, v1alpha1.TypeStorageMigrated, len(stale) == 0, "every conversion CRD stores its objects in its storage version only", func(t string) (string, string) {
		if reason == "" {
			return waiting(t)
		}
		return reason, strings.Join(stale, "; ")
	})
	c := metav1.Condition{Type: v1alpha1.TypeOldVersionsRemovable, ObservedGeneration: gen, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNoVersionRemovable,
		Message: "every version of the conversion CRDs is the storage version or stores objects"}
	if len(removable) > 0 {
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonVersionsRemovable
		c.Message = fmt.Sprintf("no object is stored in %s: such a version may be removed from the CRD's spec.versions once no client uses it "+
			"(set served: false first to find out); with one version left, the conversion webhook is no longer needed", strings.Join(removable, "; "))
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

// mergeMigrations is the status' migration records with this pass's
// changes: a record the pass did not change is the one the status holds
// when it is written, so a pass that began from a stale cache (and, on the
// write's conflict, recomputes on the live status) never writes an older
// record back, nor drops one.
func mergeMigrations(current, changed []v1alpha1.StorageMigrationStatus) []v1alpha1.StorageMigrationStatus {
	out := append([]v1alpha1.StorageMigrationStatus(nil), current...)
	for _, m := range changed {
		if i := slices.IndexFunc(out, func(x v1alpha1.StorageMigrationStatus) bool { return x.Name == m.Name }); i >= 0 {
			out[i] = m
		} else {
			out = append(out, m)
		}
	}
	return out
}

func recordOf(records []v1alpha1.StorageMigrationStatus, crd string) *v1alpha1.StorageMigrationStatus {
	for i := range records {
		if records[i].Name == crd {
			return &records[i]
		}
	}
	return nil
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// recordMigrations emits an Event and counts the metrics of each
// migration transition a written status shows: started, succeeded,
// failed, stopped by RBAC.
func (r *WebhookInstallReconciler) recordMigrations(install *v1alpha1.WebhookInstall, old, next []v1alpha1.StorageMigrationStatus) {
	for i := range next {
		m, was := &next[i], recordOf(old, next[i].Name)
		started := m.StartedAt != nil && (was == nil || was.StartedAt == nil || !was.StartedAt.Equal(m.StartedAt))
		changed := was == nil || was.State != m.State || was.Reason != m.Reason
		if started {
			r.Recorder.Eventf(install, nil, corev1.EventTypeNormal, eventMigrationStarted, "MigrateStorage",
				"migrating %s from %s to %s (%s)", m.Name, strings.Join(m.From, ", "), m.To, m.Method)
		}
		if !changed {
			continue
		}
		switch {
		case m.State == v1alpha1.MigrationSucceeded && m.CompletedAt != nil && (was == nil || was.State != v1alpha1.MigrationSucceeded):
			r.Recorder.Eventf(install, nil, corev1.EventTypeNormal, eventMigrationSucceeded, "MigrateStorage", "%s: %s", m.Name, m.Message)
			migrationsTotal.WithLabelValues(m.Method, "succeeded").Inc()
			if m.StartedAt != nil {
				migrationDuration.WithLabelValues(m.Method).Observe(m.CompletedAt.Sub(m.StartedAt.Time).Seconds())
			}
		case m.State == v1alpha1.MigrationFailed:
			r.Recorder.Eventf(install, nil, corev1.EventTypeWarning, v1alpha1.ReasonMigrationFailed, "MigrateStorage", "%s: %s", m.Name, m.Message)
			migrationsTotal.WithLabelValues(m.Method, "failed").Inc()
		case m.Reason == v1alpha1.ReasonMigrationForbidden:
			r.Recorder.Eventf(install, nil, corev1.EventTypeWarning, v1alpha1.ReasonMigrationForbidden, "MigrateStorage", "%s: %s", m.Name, m.Message)
		}
	}
}
