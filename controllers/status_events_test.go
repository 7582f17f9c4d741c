package controllers

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/events"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/rotation"
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

func TestRecordRotationsTellsTransitionsOnly(t *testing.T) {
	rec := func(service string, kind v1alpha1.RotationKind, reason, old, new string, outcome v1alpha1.RotationOutcome) v1alpha1.RotationRecord {
		return v1alpha1.RotationRecord{Service: service, Kind: kind, Reason: reason, Message: "m", OldFingerprint: old, NewFingerprint: new, Outcome: outcome}
	}
	const (
		inProgress = v1alpha1.RotationInProgress
		succeeded  = v1alpha1.RotationSucceeded
		failed     = v1alpha1.RotationFailed
		ca         = v1alpha1.RotationCA
		serving    = v1alpha1.RotationServing
	)
	initial := rotation.ReasonInitial
	for _, tc := range []struct {
		name      string
		old, next []v1alpha1.RotationRecord
		want      []string
	}{
		{"an install's first certificates, in place together: one Event",
			[]v1alpha1.RotationRecord{rec("svc", ca, initial, "", "c1", inProgress), rec("svc", serving, initial, "", "s1", inProgress)},
			[]v1alpha1.RotationRecord{rec("svc", ca, initial, "", "c1", succeeded), rec("svc", serving, initial, "", "s1", succeeded)},
			[]string{"Normal CertificatesIssued first certificates issued for service svc: CA c1, Serving s1"}},
		{"first certificates issued and in place in one pass",
			nil,
			[]v1alpha1.RotationRecord{rec("svc", ca, initial, "", "c1", succeeded), rec("svc", serving, initial, "", "s1", succeeded)},
			[]string{"Normal CertificatesIssued first certificates issued for service svc: CA c1, Serving s1"}},
		{"first certificates still in flight: nothing yet",
			nil,
			[]v1alpha1.RotationRecord{rec("svc", ca, initial, "", "c1", inProgress), rec("svc", serving, initial, "", "s1", inProgress)},
			nil},
		{"two Services' first certificates: still one Event",
			nil,
			[]v1alpha1.RotationRecord{rec("a", ca, initial, "", "c1", succeeded), rec("b", ca, initial, "", "c2", succeeded), rec("a", serving, initial, "", "s1", succeeded)},
			[]string{"Normal CertificatesIssued first certificates issued for service a: CA c1, Serving s1; for service b: CA c2"}},
		{"a first certificate already told is not told again",
			[]v1alpha1.RotationRecord{rec("svc", ca, initial, "", "c1", succeeded), rec("svc", serving, initial, "", "s1", inProgress)},
			[]v1alpha1.RotationRecord{rec("svc", ca, initial, "", "c1", succeeded), rec("svc", serving, initial, "", "s1", succeeded)},
			[]string{"Normal CertificatesIssued first certificates issued for service svc: Serving s1"}},
		{"a requested rotation: told when it starts and when it ends",
			nil,
			[]v1alpha1.RotationRecord{rec("svc", ca, rotation.ReasonManual, "c1", "c2", inProgress)},
			[]string{"Normal CARotationStarted CA certificate rotation of service svc started (Manual: m): c1 -> c2"}},
		{"a requested rotation ends",
			[]v1alpha1.RotationRecord{rec("svc", ca, rotation.ReasonManual, "c1", "c2", inProgress)},
			[]v1alpha1.RotationRecord{rec("svc", ca, rotation.ReasonManual, "c1", "c2", succeeded)},
			[]string{"Normal CARotationCompleted CA certificate rotation of service svc completed: c2 now serves"}},
		{"a serving certificate moved to a new CA: its CA's Events tell it",
			nil,
			[]v1alpha1.RotationRecord{rec("svc", serving, reasonCARotation, "s1", "s2", succeeded)},
			nil},
		{"a first certificate that failed: a Warning of its own",
			[]v1alpha1.RotationRecord{rec("svc", serving, initial, "", "s1", inProgress)},
			[]v1alpha1.RotationRecord{rec("svc", serving, initial, "", "s1", failed)},
			[]string{"Warning ServingRotationFailed Serving certificate rotation of service svc did not complete: m"}},
		{"nothing changed",
			[]v1alpha1.RotationRecord{rec("svc", ca, initial, "", "c1", succeeded)},
			[]v1alpha1.RotationRecord{rec("svc", ca, initial, "", "c1", succeeded)},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A pass whose phase stays as it was: the rotations' own Events.
			old := v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseSucceeded, Reason: v1alpha1.ReasonSucceeded, Rotations: tc.old}
			next := old
			next.Rotations = tc.next
			if got := recordedTransitions(old, next); !slices.Equal(got, tc.want) {
				t.Errorf("Events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// A new install's first certificates are in place in the pass that
// verifies its webhook, which is the pass it succeeds: one Event tells
// both.
func TestRecordTransitionsTellsFirstCertificatesWithThePhase(t *testing.T) {
	initial := func(kind v1alpha1.RotationKind, fingerprint string, outcome v1alpha1.RotationOutcome) v1alpha1.RotationRecord {
		return v1alpha1.RotationRecord{Service: "svc", Kind: kind, Reason: rotation.ReasonInitial, NewFingerprint: fingerprint, Outcome: outcome}
	}
	inFlight := []v1alpha1.RotationRecord{initial(v1alpha1.RotationCA, "c1", v1alpha1.RotationInProgress), initial(v1alpha1.RotationServing, "s1", v1alpha1.RotationInProgress)}
	inPlace := []v1alpha1.RotationRecord{initial(v1alpha1.RotationCA, "c1", v1alpha1.RotationSucceeded), initial(v1alpha1.RotationServing, "s1", v1alpha1.RotationSucceeded)}
	status := func(phase v1alpha1.InstallPhase, reason, message string, rotations []v1alpha1.RotationRecord) v1alpha1.WebhookInstallStatus {
		return v1alpha1.WebhookInstallStatus{Phase: phase, Reason: reason, Message: message, Rotations: rotations}
	}
	installing := status(v1alpha1.PhaseInstalling, v1alpha1.ReasonInProgress, "verifying", inFlight)
	long := strings.Repeat("x", 1000)
	for _, tc := range []struct {
		name      string
		old, next v1alpha1.WebhookInstallStatus
		want      []string
	}{
		{"the install succeeds as its first certificates are in place: one Event",
			installing, status(v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded, "1 conversion CRD(s) served by their webhooks", inPlace),
			[]string{"Normal Succeeded Succeeded: 1 conversion CRD(s) served by their webhooks; first certificates issued for service svc: CA c1, Serving s1"}},
		{"it fails as they are in place: the Warning tells them",
			installing, status(v1alpha1.PhaseFailed, v1alpha1.ReasonOwnerConflict, "taken", inPlace),
			[]string{"Warning OwnerConflict Failed: taken; first certificates issued for service svc: CA c1, Serving s1"}},
		{"too long for one note: told apart, the certificates first",
			installing, status(v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded, long, inPlace),
			[]string{"Normal CertificatesIssued first certificates issued for service svc: CA c1, Serving s1", "Normal Succeeded Succeeded: " + long}},
		{"in place in a step within Installing, which has no Event: told alone",
			installing, status(v1alpha1.PhaseInstalling, v1alpha1.ReasonDeploymentUnavailable, "waiting", inPlace),
			[]string{"Normal CertificatesIssued first certificates issued for service svc: CA c1, Serving s1"}},
		{"a phase change with no certificates: the phase alone",
			status(v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded, "served", inPlace), status(v1alpha1.PhaseInstalling, v1alpha1.ReasonDeploymentUnavailable, "waiting", inPlace),
			[]string{"Normal DeploymentUnavailable Installing: waiting"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := recordedTransitions(tc.old, tc.next); !slices.Equal(got, tc.want) {
				t.Errorf("Events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// recordedTransitions lists the Events recordTransitions emits for a pass
// from old to next, as "<type> <reason> <note>".
func recordedTransitions(old, next v1alpha1.WebhookInstallStatus) []string {
	recorder := events.NewFakeRecorder(10)
	r := &WebhookInstallReconciler{Recorder: recorder}
	r.recordTransitions(&v1alpha1.WebhookInstall{}, old, next)
	close(recorder.Events)
	var got []string
	for e := range recorder.Events {
		got = append(got, e)
	}
	return got
}
