package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/rotation"
)

// A pass of a CA rotation verifies trust, and a rotation changes no
// stored object nor what the webhook does with one: when its dry run
// converts, the pass reads no stored object and keeps the last full
// verification's message (no status write for a changed wording). Any
// other verification reads as before, and so does a rotation's pass whose
// dry run did not convert. While the rotation's serving certificate rolls
// out, a pass proves nothing: no dry run, verified it stays, trust
// unproven (awaitingRollout).
func TestRotationPassVerifiesTrustWithOneDryRun(t *testing.T) {
	const fullMessage = "read team-a/w1 at v2 through the webhook"
	rejected := errors.New(`admission webhook "vwidgets.example.com" denied the request: spec.size is required`) // before any conversion
	underWay := v1alpha1.RotationRecord{Service: "svc", Kind: v1alpha1.RotationCA, Reason: rotation.ReasonManual, Outcome: v1alpha1.RotationInProgress}
	for _, tc := range []struct {
		name        string
		rotating    bool
		rollingOut  bool  // the Deployment has not rolled the serving certificate out everywhere
		generation  int64 // the install's; its status observed 1
		dryRun      error
		wantDryRuns int
		wantLists   int
		wantState   v1alpha1.ConversionState
		wantMessage string // "" : not checked
		// wantTrust: whether the pass proved that the API server trusts
		// the pods (a rotation completes only on a pass that did):
		// "proven", "unproven", or "" (not checked).
		wantTrust string
	}{
		{name: "a rotation under way, verified for this spec", rotating: true, generation: 1,
			wantDryRuns: 1, wantLists: 0, wantState: v1alpha1.ConversionVerified, wantMessage: fullMessage, wantTrust: "proven"},
		{name: "a rotation under way, the dry run rejected before conversion", rotating: true, generation: 1, dryRun: rejected,
			wantDryRuns: 1, wantLists: 1}, // then the read (everywhere: nothing is stored), judged with that dry run's answer
		{name: "a rotation under way, the spec changed since it was verified", rotating: true, generation: 2,
			wantDryRuns: 1, wantLists: 1, wantState: v1alpha1.ConversionVerified},
		{name: "no rotation, the CA changed since it was verified", rotating: false, generation: 1,
			wantDryRuns: 1, wantLists: 1, wantState: v1alpha1.ConversionVerified},
		// Until every pod serves the rotation's certificate there is
		// nothing to prove: verified it stays, trust unproven.
		{name: "a rotation under way, its serving certificate rolling out", rotating: true, rollingOut: true, generation: 1,
			wantDryRuns: 0, wantLists: 0, wantState: v1alpha1.ConversionVerified, wantMessage: fullMessage, wantTrust: "unproven"},
		{name: "a rotation under way, rolling out, the spec changed since it was verified", rotating: true, rollingOut: true, generation: 2,
			wantDryRuns: 1, wantLists: 1, wantState: v1alpha1.ConversionVerified},
		{name: "no rotation, rolling out, the CA changed since it was verified", rotating: false, rollingOut: true, generation: 1,
			wantDryRuns: 1, wantLists: 1, wantState: v1alpha1.ConversionVerified},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := newConversionRig(t, func(int) error { return tc.dryRun })
			rig.rollingOut = tc.rollingOut
			t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
			rig.r.unconfirmed.begin(t0.Add(-time.Minute))
			verified := rig.verifiedStatus(nil)
			verified.ConversionCRDs[0].Message = fullMessage
			if tc.rotating {
				verified.Rotations = []v1alpha1.RotationRecord{underWay}
			} else {
				verified.Services[0].CAFingerprint = "a CA the status named before" // stillVerified does not hold
			}
			install := rigInstall(verified)
			install.Generation = tc.generation
			_, c := rig.passOn(t, install, t0)
			if rig.dryRuns != tc.wantDryRuns || rig.lists != tc.wantLists {
				t.Errorf("%d dry run(s) and %d read(s) of stored objects, want %d and %d", rig.dryRuns, rig.lists, tc.wantDryRuns, tc.wantLists)
			}
			if tc.wantState != "" && c.state != tc.wantState {
				t.Errorf("state %q (%s), want %q", c.state, c.message, tc.wantState)
			}
			if tc.wantMessage != "" && c.message != tc.wantMessage {
				t.Errorf("message %q, want the last full verification's %q", c.message, tc.wantMessage)
			}
			if tc.wantTrust != "" && c.trusted != (tc.wantTrust == "proven") {
				t.Errorf("trusted %v, want trust %s", c.trusted, tc.wantTrust)
			}
		})
	}
}

// A rotation's gate asks whether the API server trusts the pods through
// the install's CRDs: a dry run that converts answers it, with no read of
// a stored object.
func TestRotationGateProvesTrustWithOneDryRun(t *testing.T) {
	rig := newConversionRig(t, func(int) error { return nil })
	verified, _, err := rig.r.convertThroughAPIServer(context.Background(), rigInstall(v1alpha1.WebhookInstallStatus{}), rig.crd, "v2")
	if err != nil || !verified {
		t.Fatalf("verified %v, err %v; want verified", verified, err)
	}
	if rig.dryRuns != 1 || rig.lists != 0 {
		t.Errorf("%d dry run(s) and %d read(s) of stored objects, want 1 and 0", rig.dryRuns, rig.lists)
	}
}
