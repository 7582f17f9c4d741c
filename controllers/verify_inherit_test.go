package controllers

import (
	"errors"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// A manager that stops between a first verification and its confirmation
// leaves the status saying Verified, confirmed by no one. Its successor
// (a fresh reconciler here) confirms the verifications the status says
// were first made shortly before its own first pass, once each, and
// trusts older ones, as it trusts statuses written before VerifiedSince
// existed. The webhook answers 404 throughout: a pass that verifies again
// reports it.
func TestRestartConfirmsAPredecessorsRecentVerification(t *testing.T) {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: start.Add(-d)} }
	for _, tc := range []struct {
		name      string
		since     *metav1.Time
		confirmed bool
	}{
		{"verified five seconds before this manager's first pass", at(5 * time.Second), true},
		{"verified within the window before it", at(inheritWindow - time.Minute), true},
		{"verified longer before it", at(inheritWindow + time.Minute), false},
		{"a status written before verifiedSince existed", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			notServed := errors.New(`conversion webhook for example.com/v2, Kind=Widget failed: the server could not find the requested resource`)
			rig := newConversionRig(t, func(int) error { return notServed })
			status := rig.verifiedStatus(tc.since)

			_, first := rig.pass(t, status, false, start)
			if tc.confirmed && (rig.dryRuns != 1 || first.verifyReason != v1alpha1.ReasonWebhookPathNotFound) {
				t.Fatalf("first pass: %d dry runs, state %q (%s); want it verified once more, Failed WebhookPathNotFound", rig.dryRuns, first.state, first.verifyReason)
			}
			if !tc.confirmed && (rig.dryRuns != 0 || first.state != v1alpha1.ConversionVerified) {
				t.Fatalf("first pass: %d dry runs, state %q; want none, Verified from the status", rig.dryRuns, first.state)
			}

			dryRuns := rig.dryRuns
			_, later := rig.pass(t, status, false, start.Add(time.Minute))
			if rig.dryRuns != dryRuns || later.state != v1alpha1.ConversionVerified {
				t.Errorf("a later pass on the same status: %d more dry runs, state %q; want none, Verified (confirmed once)", rig.dryRuns-dryRuns, later.state)
			}
		})
	}
}

// The same for an admission webhook: its key is not a CRD's name.
func TestRestartConfirmsAPredecessorsRecentAdmissionVerification(t *testing.T) {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	notServed := statusErr(http.StatusInternalServerError, metav1.StatusReasonInternalError,
		`Internal error occurred: failed calling webhook "vwidgets.example.com": failed to call webhook: the server could not find the requested resource`)
	rig := newAdmissionRig(t, func(int) error { return notServed })
	status := rig.verifiedStatus(&metav1.Time{Time: start.Add(-5 * time.Second)})

	_, first := rig.pass(t, status, start)
	if rig.dryRuns != 1 || first.verifyReason != v1alpha1.ReasonWebhookPathNotFound {
		t.Fatalf("first pass: %d dry runs, state %q (%s); want it verified once more, Failed WebhookPathNotFound", rig.dryRuns, first.state, first.verifyReason)
	}
	_, later := rig.pass(t, status, start.Add(time.Minute))
	if rig.dryRuns != 1 || later.state != v1alpha1.AdmissionVerified {
		t.Errorf("a later pass on the same status: %d dry runs in all, state %q; want 1, Verified (confirmed once)", rig.dryRuns, later.state)
	}
}

// A pass that changes where a verified CRD's conversions go (during a
// first convergence, when the same pass verifies what it wrote) makes its
// success a first one: until the API server has loaded the write it
// converts through the previous webhook. It is confirmed 2 s later, and
// VerifiedSince restarts. A caBundle-only write changes no destination.
func TestRetargetingWriteIsConfirmed(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	before := &metav1.Time{Time: now.Add(-time.Hour)}
	for _, bundleOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "the service or path changed", true: "only the caBundle changed"}[bundleOnly], func(t *testing.T) {
			rig := newConversionRig(t, func(int) error { return nil })
			rig.bundleOnly = bundleOnly
			status := rig.verifiedStatus(before)
			status.Phase = v1alpha1.PhaseInstalling // a first convergence: the pass verifies its own write

			s, c := rig.pass(t, status, true, now)
			if c.state != v1alpha1.ConversionVerified {
				t.Fatalf("state %q (%s), want Verified", c.state, c.message)
			}
			confirming := s.retryAfter == confirmAfter
			since := crdVerifiedSince(s, c)
			if !bundleOnly && (!confirming || since == nil || !since.Equal(&metav1.Time{Time: now})) {
				t.Errorf("retargeted: retry after %s, verifiedSince %v; want a confirmation after %s and verifiedSince %s", s.retryAfter, since, confirmAfter, now)
			}
			if bundleOnly && (confirming || since != before) {
				t.Errorf("caBundle only: retry after %s, verifiedSince %v; want no confirmation and verifiedSince kept (%s)", s.retryAfter, since, before)
			}
		})
	}
}

// A confirmation that agrees writes nothing, whatever it read: a restart
// confirming a predecessor's verification keeps the status' message,
// though objects stored since would make a first verification's message
// another (seen in the bench: the migration install, verified with no
// objects, then holding 10,000, got a status write on P3's restart).
func TestAgreeingConfirmationKeepsTheStatusMessage(t *testing.T) {
	start := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	rig := newConversionRig(t, func(int) error { return nil })
	status := rig.verifiedStatus(&metav1.Time{Time: start.Add(-time.Minute)})
	const first = "dry-run created an object at v2 through the webhook (no objects exist yet), when the predecessor verified it"
	status.ConversionCRDs[0].Message = first

	_, confirmed := rig.pass(t, status, false, start)
	if rig.dryRuns != 1 || confirmed.state != v1alpha1.ConversionVerified || confirmed.message != first {
		t.Errorf("the restart's pass: %d dry runs, state %q, message %q; want one (the confirmation), Verified, the status' message kept", rig.dryRuns, confirmed.state, confirmed.message)
	}
}

// VerifiedSince is set by a first verification, kept by the passes that
// follow, and gone once the state is not Verified; a status written
// before the field existed is not rewritten just to add it.
func TestVerifiedSince(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 500e6, time.UTC)
	earlier := &metav1.Time{Time: now.Add(-time.Hour).Truncate(time.Second)}
	for _, tc := range []struct {
		name      string
		prev      *v1alpha1.ConversionCRDStatus
		state     v1alpha1.ConversionState
		first     bool
		want      *metav1.Time
		wantIsNow bool
	}{
		{name: "first verification", prev: &v1alpha1.ConversionCRDStatus{State: v1alpha1.ConversionConfigured}, state: v1alpha1.ConversionVerified, first: true, wantIsNow: true},
		{name: "verified again", prev: &v1alpha1.ConversionCRDStatus{State: v1alpha1.ConversionVerified, VerifiedSince: earlier}, state: v1alpha1.ConversionVerified, want: earlier},
		{name: "verified again after a retargeting write", prev: &v1alpha1.ConversionCRDStatus{State: v1alpha1.ConversionVerified, VerifiedSince: earlier}, state: v1alpha1.ConversionVerified, first: true, wantIsNow: true},
		{name: "verified without a probe (one served version)", state: v1alpha1.ConversionVerified, wantIsNow: true},
		{name: "an older release's status", prev: &v1alpha1.ConversionCRDStatus{State: v1alpha1.ConversionVerified}, state: v1alpha1.ConversionVerified},
		{name: "failed since", prev: &v1alpha1.ConversionCRDStatus{State: v1alpha1.ConversionVerified, VerifiedSince: earlier}, state: v1alpha1.ConversionFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			install := &v1alpha1.WebhookInstall{}
			if tc.prev != nil {
				prev := *tc.prev
				prev.Name = rigCRD
				install.Status.ConversionCRDs = []v1alpha1.ConversionCRDStatus{prev}
			}
			s := &installState{install: install, now: now}
			got := crdVerifiedSince(s, &crdState{name: rigCRD, state: tc.state, firstVerified: tc.first})
			want := tc.want
			if tc.wantIsNow {
				want = &metav1.Time{Time: now.Truncate(time.Second)} // as the status stores it: no rewrite on read-back
			}
			if (got == nil) != (want == nil) || (got != nil && !got.Equal(want)) {
				t.Errorf("verifiedSince %v, want %v", got, want)
			}
		})
	}
}
