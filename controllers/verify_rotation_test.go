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
// dry run did not convert.
func TestRotationPassVerifiesTrustWithOneDryRun(t *testing.T) {
	const fullMessage = "read team-a/w1 at v2 through the webhook"
	rejected := errors.New(`admission webhook "vwidgets.example.com" denied the request: spec.size is required`) // before any conversion
	underWay := v1alpha1.RotationRecord{Service: "svc", Kind: v1alpha1.RotationCA, Reason: rotation.ReasonManual, Outcome: v1alpha1.RotationInProgress}
	for _, tc := range []struct {
		name        string
		rotating    bool
		generation  int64 // the install's; its status observed 1
		dryRun      error
		wantDryRuns int
		wantLists   int
		wantState   v1alpha1.ConversionState
		wantMessage string // "" : not checked
	}{
		{name: "a rotation under way, verified for this spec", rotating: true, generation: 1,
			wantDryRuns: 1, wantLists: 0, wantState: v1alpha1.ConversionVerified, wantMessage: fullMessage},
		{name: "a rotation under way, the dry run rejected before conversion", rotating: true, generation: 1, dryRun: rejected,
			wantDryRuns: 1, wantLists: 1}, // then the read (everywhere: nothing is stored), judged with that dry run's answer
		{name: "a rotation under way, the spec changed since it was verified", rotating: true, generation: 2,
			wantDryRuns: 1, wantLists: 1, wantState: v1alpha1.ConversionVerified},
		{name: "no rotation, the CA changed since it was verified", rotating: false, generation: 1,
			wantDryRuns: 1, wantLists: 1, wantState: v1alpha1.ConversionVerified},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := newConversionRig(t, func(int) error { return tc.dryRun })
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
