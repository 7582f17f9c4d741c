package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/internal/eventnote"
)

// writeStatus computes the status from what this pass learned and writes
// it once, only when it differs (updateStatus). On a conflict the status
// is recomputed on the live object, because this pass may have issued
// certificates whose audit records must not be lost.
func (r *WebhookInstallReconciler) writeStatus(ctx context.Context, s *installState, stepErr error) error {
	from, written, err := r.updateStatus(ctx, s.install, func(install *v1alpha1.WebhookInstall) (v1alpha1.WebhookInstallStatus, bool) {
		s.install = install
		next := computeStatus(s, stepErr)
		observeExpiry(install, next)
		observeInstall(install, next)
		return next, !equality.Semantic.DeepEqual(install.Status, next) && !deferStatusToVerification(s, stepErr, install.Status, next) &&
			!deferFirstStatus(s, stepErr, install.Status, next)
	})
	if err != nil || written == nil {
		return err
	}
	r.recordTransitions(from, from.Status, written.Status)
	r.recordKeptAlive(s, from.Status, written.Status)
	observeStatusMetrics(from, from.Status.Rotations, written.Status)
	s.install = written
	return nil
}

// computeStatus is a pure function of the pass's state and the previous
// status (kept for timestamps that did not change).
func computeStatus(s *installState, stepErr error) v1alpha1.WebhookInstallStatus {
	prev := s.install.Status
	st := v1alpha1.WebhookInstallStatus{
		ObservedGeneration: s.observedGeneration(),
		Conditions:         append([]metav1.Condition(nil), prev.Conditions...),
		CertsLastUpdated:   prev.CertsLastUpdated,
	}
	if s.issuedCerts {
		st.CertsLastUpdated = &metav1.Time{Time: s.now.Truncate(1e9)}
	}
	for _, w := range s.webhooks {
		svc, ok := s.services[w.Service]
		if !ok {
			continue
		}
		servingCert, _ := certs.ParseCert(svc.servingPEM)
		st.Services = append(st.Services, v1alpha1.ServiceStatus{
			Name: w.Service, SecretName: svc.secretName,
			CAFingerprint:      certs.Fingerprint(svc.ca.Cert),
			CANotAfter:         &metav1.Time{Time: svc.ca.Cert.NotAfter},
			ServingFingerprint: certs.Fingerprint(servingCert),
			ServingNotAfter:    &metav1.Time{Time: servingCert.NotAfter},
		})
		if st.CertsRotateAt == nil || svc.rotateAt.Before(st.CertsRotateAt.Time) {
			st.CertsRotateAt = &metav1.Time{Time: svc.rotateAt.Truncate(1e9)}
		}
	}
	for _, c := range s.crds {
		out := v1alpha1.ConversionCRDStatus{Name: c.name, State: c.state, Message: c.message, VerifiedSince: crdVerifiedSince(s, c)}
		driftStatus(s, c, &out)
		st.ConversionCRDs = append(st.ConversionCRDs, out)
	}
	st.AdmissionWebhooks = admissionStatuses(s)
	st.StorageMigrations = mergeMigrations(prev.StorageMigrations, s.migrations)
	st.Rotations = rotationHistory(s)
	st.CertsLastUpdated = latestIssuance(st.CertsLastUpdated, prev.Rotations, st.Rotations)
	st.HandledRotationRequest = prev.HandledRotationRequest
	if s.handledRequest != "" {
		st.HandledRotationRequest = s.handledRequest
	}

	st.Phase, st.Reason, st.Message = s.keepAlive.keptStatus(phaseOf(s, stepErr))
	waiting := func(string) (string, string) {
		if s.halt != nil {
			return s.halt.reason, s.halt.message
		}
		if stepErr != nil {
			return v1alpha1.ReasonInstallComponentFailed, stepErr.Error()
		}
		return v1alpha1.ReasonInProgress, "waiting for earlier steps"
	}
	setCondition(&st, s.observedGeneration(), v1alpha1.TypeCertificatesReady, len(s.services) == len(s.webhooks), certificatesMessage(s), waiting)
	setCondition(&st, s.observedGeneration(), v1alpha1.TypeWebhooksAvailable, s.workloadsChecked && len(s.unavailable) == 0, "every webhook deployment is available", waiting)
	setCondition(&st, s.observedGeneration(), v1alpha1.TypeConversionConfigured, allConfigured(s), "every conversion CRD points at its webhook", waiting)
	verified := allCRDs(s, v1alpha1.ConversionVerified)
	setCondition(&st, s.observedGeneration(), v1alpha1.TypeConversionVerified, verified, "the API server converted through every webhook", func(string) (string, string) {
		if reason, failed := conversionFailure(s); failed != "" {
			return reason, failed
		}
		if unverifiable := crdUnverifiable(s); unverifiable != "" && s.halt == nil {
			if anyForbidden(s) {
				return v1alpha1.ReasonVerificationForbidden, unverifiable
			}
			return v1alpha1.ReasonNoObjectsToVerify, unverifiable
		}
		return waiting("")
	})
	setAdmissionConditions(&st, s, waiting)
	setMigrationConditions(&st, s, waiting)
	setCondition(&st, s.observedGeneration(), v1alpha1.TypeReady, st.Phase == v1alpha1.PhaseSucceeded, st.Message, func(string) (string, string) { return st.Reason, st.Message })
	if fight := contested(&st); fight != "" {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.TypeConversionContested, Status: metav1.ConditionTrue,
			ObservedGeneration: s.observedGeneration(), Reason: v1alpha1.ReasonFieldManagerConflict, Message: fight})
	} else {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.TypeConversionContested, Status: metav1.ConditionFalse,
			ObservedGeneration: s.observedGeneration(), Reason: v1alpha1.ReasonNoConflict, Message: "no other field manager rewrites spec.conversion"})
	}
	return st
}

func phaseOf(s *installState, stepErr error) (v1alpha1.InstallPhase, string, string) {
	switch {
	case s.halt != nil:
		return s.halt.phase, s.halt.reason, s.halt.message
	case stepErr != nil:
		return v1alpha1.PhaseFailed, v1alpha1.ReasonInstallComponentFailed, stepErr.Error()
	}
	// A webhook that refuses an object fails the install too: reads and
	// LISTs at the converted version fail, which needs its author or the
	// object's owner; certificate rotations go on regardless.
	if reason, failed := conversionFailure(s); failed != "" {
		return v1alpha1.PhaseFailed, reason, failed
	}
	// An admission webhook that failed fails the install too; the install
	// succeeds only once every admission webhook is registered.
	if phase, reason, message, ok := admissionPhase(s); !ok && phase == v1alpha1.PhaseFailed {
		return phase, reason, message
	}
	for _, c := range s.crds {
		// A caBundle rewritten during a rotation of a Succeeded install is
		// re-verified on the next pass; the install does not go back to
		// Installing for it.
		rewrittenWhileServing := c.written && s.install.Status.Phase == v1alpha1.PhaseSucceeded
		if c.state != v1alpha1.ConversionVerified && !c.unverifiable && !rewrittenWhileServing {
			return v1alpha1.PhaseInstalling, v1alpha1.ReasonInProgress, "conversion configured; verifying it through the API server"
		}
	}
	if phase, reason, message, ok := admissionPhase(s); !ok {
		return phase, reason, message
	}
	return v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded, fmt.Sprintf("%d conversion CRD(s) served by their webhooks", len(s.crds)) + admissionSummary(s)
}

func setCondition(st *v1alpha1.WebhookInstallStatus, generation int64, conditionType string, ok bool, okMessage string, notOK func(string) (string, string)) {
	c := metav1.Condition{Type: conditionType, ObservedGeneration: generation, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded, Message: okMessage}
	if !ok {
		c.Status = metav1.ConditionFalse
		c.Reason, c.Message = notOK(conditionType)
		if c.Reason == v1alpha1.ReasonNoObjectsToVerify || c.Reason == v1alpha1.ReasonVerificationForbidden || c.Reason == v1alpha1.ReasonInProgress {
			c.Status = metav1.ConditionUnknown
		}
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

func allCRDs(s *installState, states ...v1alpha1.ConversionState) bool {
	for _, c := range s.crds {
		if !containsState(states, c.state) {
			return false
		}
	}
	return true
}

func containsState(states []v1alpha1.ConversionState, st v1alpha1.ConversionState) bool {
	for _, x := range states {
		if x == st {
			return true
		}
	}
	return false
}

func crdMessages(s *installState, state v1alpha1.ConversionState) string {
	var msgs []string
	for _, c := range s.crds {
		if c.state == state {
			msgs = append(msgs, c.message)
		}
	}
	return strings.Join(msgs, "; ")
}

// allConfigured: every CRD points at its webhook (a verification that
// failed found it configured).
func allConfigured(s *installState) bool {
	for _, c := range s.crds {
		if !containsState([]v1alpha1.ConversionState{v1alpha1.ConversionConfigured, v1alpha1.ConversionVerified}, c.state) && c.verifyReason == "" {
			return false
		}
	}
	return true
}

// failureOrder ranks the reasons of failed conversions (and admission
// webhooks), most urgent first: those that also stop certificate
// rotations, then those where nothing converts, then one refused object,
// then an admission webhook that answered with an error.
var failureOrder = []string{
	v1alpha1.ReasonWebhookUntrusted, v1alpha1.ReasonWebhookUnreachable, v1alpha1.ReasonConversionFailed,
	v1alpha1.ReasonWebhookPathNotFound, v1alpha1.ReasonConversionRefused, v1alpha1.ReasonWebhookErrored,
}

// conversionFailure is the most urgent reason among the CRDs whose
// conversion failed, and all their messages; "" when none failed.
func conversionFailure(s *installState) (string, string) {
	rank := len(failureOrder)
	for _, c := range s.crds {
		if c.state != v1alpha1.ConversionFailed {
			continue
		}
		reason := c.verifyReason
		if reason == "" {
			reason = v1alpha1.ReasonConversionFailed
		}
		if i := slices.Index(failureOrder, reason); i >= 0 {
			rank = min(rank, i)
		}
	}
	if rank == len(failureOrder) {
		return "", ""
	}
	return failureOrder[rank], crdMessages(s, v1alpha1.ConversionFailed)
}

func anyForbidden(s *installState) bool {
	for _, c := range s.crds {
		if c.forbidden {
			return true
		}
	}
	return false
}

func crdUnverifiable(s *installState) string {
	var msgs []string
	for _, c := range s.crds {
		if c.unverifiable {
			msgs = append(msgs, c.message)
		}
	}
	return strings.Join(msgs, "; ")
}

// recordTransitions emits an Event when the phase or its reason changes
// (phaseChangeTold), and for every rotation that started or ended; never
// on a resync that changes nothing.
//
// An install's first certificates are in place when its webhook is first
// verified, which is the pass its phase turns Succeeded: that one Event
// tells both ("Succeeded: ...; first certificates issued for service
// ..."), so a new install records one Event, not two. They are told
// apart when they happen in different passes, or when together they
// would not fit an Event's note.
func (r *WebhookInstallReconciler) recordTransitions(install *v1alpha1.WebhookInstall, old, next v1alpha1.WebhookInstallStatus) {
	issued := r.recordRotations(install, old.Rotations, next.Rotations)
	r.recordMigrations(install, old.StorageMigrations, next.StorageMigrations)
	var issuance string
	if len(issued) > 0 {
		issuance = issuanceNote(issued)
	}
	if !phaseChangeTold(old, next) {
		if issuance != "" {
			r.Recorder.Eventf(install, nil, corev1.EventTypeNormal, eventnote.ReasonCertificatesIssued, "Issue", "%s", issuance)
		}
		return
	}
	eventType := corev1.EventTypeNormal
	if next.Phase == v1alpha1.PhaseFailed {
		eventType = corev1.EventTypeWarning
	}
	phase := fmt.Sprintf("%s: %s", next.Phase, next.Message)
	if joined, fits := eventnote.WithIssuance(phase, issuance); fits {
		r.Recorder.Eventf(install, nil, eventType, next.Reason, "Reconcile", "%s", joined)
		return
	}
	r.Recorder.Eventf(install, nil, corev1.EventTypeNormal, eventnote.ReasonCertificatesIssued, "Issue", "%s", issuance)
	r.Recorder.Eventf(install, nil, eventType, next.Reason, "Reconcile", "%s", phase)
}

// phaseChangeTold: a change of phase or reason gets an Event, except a
// step within Installing. A new install's creator knows it is installing,
// and its steps (waiting for the Deployment, verifying) pass in seconds:
// the Event a person needs is where it ends, Succeeded or Failed, while
// the status shows the step under way. An install that had ended and goes
// back to Installing (a lost endpoint, a retry after Failed) is told once,
// on the way in, because someone may act on it.
func phaseChangeTold(old, next v1alpha1.WebhookInstallStatus) bool {
	if old.Phase == next.Phase && old.Reason == next.Reason {
		return false
	}
	converging := old.Phase == "" || old.Phase == v1alpha1.PhasePending || old.Phase == v1alpha1.PhaseInstalling
	return next.Phase != v1alpha1.PhaseInstalling || !converging
}
