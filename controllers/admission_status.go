package controllers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// admissionStatuses are the status entries of the pass's admission
// webhooks, with their fight counters carried over.
func admissionStatuses(s *installState) []v1alpha1.AdmissionWebhookStatus {
	var out []v1alpha1.AdmissionWebhookStatus
	for _, a := range s.admission {
		st := v1alpha1.AdmissionWebhookStatus{
			Name: a.name, Type: string(a.kind), Configuration: a.configName,
			State: a.state, Message: a.message, VerifyReason: a.verifyReason,
			ExcludedNamespaces: slices.Clone(a.excluded), VerifiedSince: admissionVerifiedSince(s, a),
		}
		if st.Message == "" && st.State == v1alpha1.AdmissionPending {
			st.Message = "registered once its deployment is available"
		}
		admissionDriftStatus(s, a, &st)
		out = append(out, st)
	}
	return out
}

// admissionVerifiedSince is the VerifiedSince of the webhook's new
// status, as crdVerifiedSince is a CRD's.
func admissionVerifiedSince(s *installState, a *admissionState) *metav1.Time {
	switch {
	case a.state != v1alpha1.AdmissionVerified:
		return nil
	case !a.firstVerified && admissionVerifiedBefore(s.install, a):
		return admissionStatusSince(s.install, a)
	}
	return &metav1.Time{Time: s.now.Truncate(time.Second)}
}

// admissionDriftStatus carries the fight counters of one admission
// webhook into the new status, as driftStatus does for a CRD.
func admissionDriftStatus(s *installState, a *admissionState, out *v1alpha1.AdmissionWebhookStatus) {
	for _, prev := range s.install.Status.AdmissionWebhooks {
		if prev.Name == a.name {
			out.DriftRestores, out.LastDriftManager, out.DriftWindowStart = prev.DriftRestores, prev.LastDriftManager, prev.DriftWindowStart
		}
	}
	if out.DriftWindowStart != nil && s.now.Sub(out.DriftWindowStart.Time) > fightWindow {
		out.DriftRestores, out.DriftWindowStart = 0, nil
	}
	if a.driftManager == "" {
		return
	}
	if out.DriftWindowStart == nil {
		out.DriftWindowStart = &metav1.Time{Time: s.now.Truncate(time.Second)}
	}
	out.DriftRestores++
	out.LastDriftManager = a.driftManager
}

// admissionRegistered: the webhook's configuration calls it (a failed
// verification found it registered).
func admissionRegistered(a *admissionState) bool {
	switch a.state {
	case v1alpha1.AdmissionRegistered, v1alpha1.AdmissionVerified, v1alpha1.AdmissionUnverified:
		return true
	case v1alpha1.AdmissionFailed:
		return a.registered && a.verifyReason != ""
	}
	return false
}

// admissionFailure is the most urgent reason among the failed admission
// webhooks, and all their messages; "" when none failed.
func admissionFailure(s *installState) (string, string) {
	rank, reason := len(failureOrder), ""
	var msgs []string
	for _, a := range s.admission {
		if a.state != v1alpha1.AdmissionFailed {
			continue
		}
		msgs = append(msgs, fmt.Sprintf("admission webhook %s: %s", a.name, a.message))
		r := a.verifyReason
		if r == "" {
			r = v1alpha1.ReasonInstallComponentFailed
		}
		if i := slices.Index(failureOrder, r); i >= 0 && i < rank {
			rank, reason = i, r
		} else if reason == "" {
			reason = r
		}
	}
	if len(msgs) == 0 {
		return "", ""
	}
	return reason, strings.Join(msgs, "; ")
}

// setAdmissionConditions sets AdmissionConfigured, AdmissionVerified and
// AdmissionContested. An install without admission webhooks has the first
// two True, so Ready means the same for every install.
func setAdmissionConditions(st *v1alpha1.WebhookInstallStatus, s *installState, waiting func(string) (string, string)) {
	generation := s.observedGeneration()
	none := len(s.admission) == 0
	configured, verified := true, true
	var unverified, notVerified []string
	for _, a := range s.admission {
		configured = configured && admissionRegistered(a)
		verified = verified && a.state == v1alpha1.AdmissionVerified
		switch {
		case a.state == v1alpha1.AdmissionUnverified:
			unverified = append(unverified, fmt.Sprintf("%s: %s", a.name, a.message))
		case a.state == v1alpha1.AdmissionRegistered:
			notVerified = append(notVerified, a.name)
		}
	}
	configuredMsg, verifiedMsg := "every admission webhook is registered, calling its Service with the current caBundle", "the API server called every admission webhook"
	if none {
		configuredMsg, verifiedMsg = "the install has no admission webhooks", "the install has no admission webhooks"
	}
	setCondition(st, generation, v1alpha1.TypeAdmissionConfigured, configured, configuredMsg, func(string) (string, string) {
		if reason, failed := admissionFailure(s); failed != "" && s.halt == nil {
			return reason, failed
		}
		return waiting("")
	})

	c := metav1.Condition{Type: v1alpha1.TypeAdmissionVerified, ObservedGeneration: generation, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded, Message: verifiedMsg}
	switch reason, failed := admissionFailure(s); {
	case verified:
	case failed != "":
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, reason, failed
	case len(unverified) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1alpha1.ReasonAdmissionNotVerified, strings.Join(unverified, "; ")
		if r := firstUnverifiedReason(s); r != "" {
			c.Reason = r
		}
	case configured:
		c.Status, c.Reason = metav1.ConditionUnknown, v1alpha1.ReasonAdmissionNotVerified
		c.Message = fmt.Sprintf("admission webhooks %v are registered; the API server has not called them through their configuration yet", notVerified)
	default:
		c.Status = metav1.ConditionFalse
		c.Reason, c.Message = waiting("")
		if c.Reason == v1alpha1.ReasonInProgress {
			c.Status = metav1.ConditionUnknown
		}
	}
	meta.SetStatusCondition(&st.Conditions, c)

	if fight := admissionContested(st); fight != "" {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.TypeAdmissionContested, Status: metav1.ConditionTrue,
			ObservedGeneration: generation, Reason: v1alpha1.ReasonFieldManagerConflict, Message: fight})
	} else {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.TypeAdmissionContested, Status: metav1.ConditionFalse,
			ObservedGeneration: generation, Reason: v1alpha1.ReasonNoConflict, Message: "no other field manager rewrites the admission webhooks Hookwright configured"})
	}
}

func firstUnverifiedReason(s *installState) string {
	for _, a := range s.admission {
		if a.state == v1alpha1.AdmissionUnverified && a.verifyReason != "" {
			return a.verifyReason
		}
	}
	return ""
}

// admissionContested explains the admission fights in the new status, or
// returns "".
func admissionContested(st *v1alpha1.WebhookInstallStatus) string {
	var fights []string
	for _, a := range st.AdmissionWebhooks {
		if a.DriftRestores >= fightRestores {
			fights = append(fights, fmt.Sprintf("%q rewrote admission webhook %s of %s %d times since %s",
				a.LastDriftManager, a.Name, a.Configuration, a.DriftRestores, a.DriftWindowStart.UTC().Format(time.RFC3339)))
		}
	}
	if len(fights) == 0 {
		return ""
	}
	return strings.Join(fights, "; ") + ". Hookwright owns the admission configurations it writes: stop rendering them (or their caBundle and service) " +
		"in that tool's manifests, or tell it to ignore them (Argo CD: ignoreDifferences on /webhooks; Flux/kustomize: drop the object)"
}

// admissionPhase is the phase the admission webhooks put the install in
// when conversion would let it succeed: Failed for a failed webhook,
// Installing while one is not registered; ok when every one is registered.
func admissionPhase(s *installState) (phase v1alpha1.InstallPhase, reason, message string, ok bool) {
	if reason, failed := admissionFailure(s); failed != "" {
		return v1alpha1.PhaseFailed, reason, failed, false
	}
	for _, a := range s.admission {
		if !admissionRegistered(a) {
			return v1alpha1.PhaseInstalling, v1alpha1.ReasonInProgress, fmt.Sprintf("registering admission webhook %s", a.name), false
		}
	}
	return "", "", "", true
}

// admissionSummary completes the Succeeded message, or is "".
func admissionSummary(s *installState) string {
	if len(s.admission) == 0 {
		return ""
	}
	return fmt.Sprintf(", %d admission webhook(s) registered", len(s.admission))
}

// admissionWindows are when the admission webhooks' fight windows close
// (so AdmissionContested clears once a fight has stopped).
func admissionWindows(s *installState) []time.Time {
	var out []time.Time
	for _, a := range s.install.Status.AdmissionWebhooks {
		if a.DriftWindowStart != nil {
			out = append(out, a.DriftWindowStart.Add(fightWindow+time.Second))
		}
	}
	return out
}
