package controllers

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// A pass that comes before a confirmation is due (another event woke the
// install: a second pod ready, a Deployment status update) must not
// confirm yet: the API server may still not have loaded the write, and a
// dry run then proves as little as the first. It trusts the status, asks
// for a pass when the confirmation is due, and that pass confirms.
func TestConfirmationWaitsUntilDue(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 250e6, time.UTC)
	notServed := errors.New(`conversion webhook for example.com/v2, Kind=Widget failed: the server could not find the requested resource`)
	rig := newConversionRig(t, func(n int) error {
		if n == 1 {
			return nil // through None
		}
		return notServed
	})
	s, first := rig.pass(t, v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling}, true, t0)
	if first.state != v1alpha1.ConversionVerified {
		t.Fatalf("first verification: state %q (%s), want Verified", first.state, first.message)
	}
	verified := rig.verifiedStatus(crdVerifiedSince(s, first))

	s, early := rig.pass(t, verified, false, t0.Add(confirmAfter/4))
	if rig.dryRuns != 1 || early.state != v1alpha1.ConversionVerified {
		t.Fatalf("a pass before the confirmation is due: %d dry runs in all, state %q; want 1 and Verified from the status", rig.dryRuns, early.state)
	}
	if want := confirmAfter - confirmAfter/4; s.retryAfter != want {
		t.Errorf("a pass before the confirmation is due asks for the next after %s, want %s (when it is due)", s.retryAfter, want)
	}

	_, due := rig.pass(t, verified, false, t0.Add(confirmAfter))
	if rig.dryRuns != 2 || due.verifyReason != v1alpha1.ReasonWebhookPathNotFound {
		t.Errorf("the pass when it is due: %d dry runs in all, state %q (%s); want 2, Failed WebhookPathNotFound", rig.dryRuns, due.state, due.verifyReason)
	}
}

// The same for an admission webhook.
func TestAdmissionConfirmationWaitsUntilDue(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 250e6, time.UTC)
	notServed := statusErr(http.StatusInternalServerError, metav1.StatusReasonInternalError,
		`Internal error occurred: failed calling webhook "vwidgets.example.com": failed to call webhook: the server could not find the requested resource`)
	rig := newAdmissionRig(t, func(n int) error {
		if n == 1 {
			return nil // no webhook called yet
		}
		return notServed
	})
	s, first := rig.pass(t, v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling}, t0)
	if first.state != v1alpha1.AdmissionVerified {
		t.Fatalf("first verification: state %q (%s), want Verified", first.state, first.message)
	}
	verified := rig.verifiedStatus(admissionVerifiedSince(s, first))

	s, early := rig.pass(t, verified, t0.Add(confirmAfter/4))
	if rig.dryRuns != 1 || early.state != v1alpha1.AdmissionVerified || s.retryAfter != confirmAfter-confirmAfter/4 {
		t.Fatalf("a pass before the confirmation is due: %d dry runs in all, state %q, next after %s; want 1, Verified, next after %s", rig.dryRuns, early.state, s.retryAfter, confirmAfter-confirmAfter/4)
	}
	_, due := rig.pass(t, verified, t0.Add(confirmAfter))
	if rig.dryRuns != 2 || due.verifyReason != v1alpha1.ReasonWebhookPathNotFound {
		t.Errorf("the pass when it is due: %d dry runs in all, state %q (%s); want 2, Failed WebhookPathNotFound", rig.dryRuns, due.state, due.verifyReason)
	}
}

// A successor that starts right after its predecessor's first verification
// (the status stores VerifiedSince to the second) waits until the
// confirmation would have been due before confirming it.
func TestInheritedConfirmationWaitsUntilDue(t *testing.T) {
	start := time.Date(2026, 11, 28, 12, 0, 0, 500e6, time.UTC)
	since := &metav1.Time{Time: start.Add(-200 * time.Millisecond).Truncate(time.Second)} // verified at most 1 s after since
	notServed := errors.New(`conversion webhook for example.com/v2, Kind=Widget failed: the server could not find the requested resource`)
	rig := newConversionRig(t, func(int) error { return notServed })
	status := rig.verifiedStatus(since)

	s, first := rig.pass(t, status, false, start)
	due := since.Add(time.Second + confirmAfter)
	if rig.dryRuns != 0 || first.state != v1alpha1.ConversionVerified || s.retryAfter != due.Sub(start) {
		t.Fatalf("first pass %s after verifiedSince: %d dry runs, state %q, next after %s; want none, Verified, next after %s", start.Sub(since.Time), rig.dryRuns, first.state, s.retryAfter, due.Sub(start))
	}
	_, confirmed := rig.pass(t, status, false, due)
	if rig.dryRuns != 1 || confirmed.verifyReason != v1alpha1.ReasonWebhookPathNotFound {
		t.Errorf("the pass when it is due: %d dry runs, state %q (%s); want 1, Failed WebhookPathNotFound", rig.dryRuns, confirmed.state, confirmed.verifyReason)
	}
}

// What the set remembers stays bounded over a manager's life: its own
// verifications leave nothing behind once confirmed, and only a
// predecessor's recent ones are remembered as inherited.
func TestUnconfirmedVerificationsForgetConfirmedKeys(t *testing.T) {
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var u unconfirmedVerifications
	u.begin(start)
	u.inherit("predecessors.example.com", &metav1.Time{Time: start.Add(-time.Minute)})
	for i := range 100 {
		key := fmt.Sprintf("crd-%d.example.com", i)
		verified := start.Add(time.Duration(i+2) * time.Second)
		u.add(key, verified)
		u.inherit(key, &metav1.Time{Time: verified.Truncate(time.Second)}) // the status it wrote
		if due, _ := u.take(key, verified.Add(confirmAfter)); !due {
			t.Fatalf("%s: not due %s after its verification", key, confirmAfter)
		}
	}
	if due, _ := u.take("predecessors.example.com", start); !due {
		t.Errorf("the predecessor's verification a minute before the start is not due at the start")
	}
	if len(u.due) != 0 || len(u.inherited) != 1 {
		t.Errorf("after 101 confirmations: %d keys awaiting one, %d remembered as inherited; want 0 and 1 (the predecessor's)", len(u.due), len(u.inherited))
	}
}
