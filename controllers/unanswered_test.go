package controllers

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

func TestUnansweredLanes(t *testing.T) {
	for _, tc := range []struct{ workers, lanes int }{{1, 1}, {4, 1}, {7, 1}, {8, 2}, {16, 4}} {
		if got := unansweredLanes(tc.workers); got != tc.lanes {
			t.Errorf("unansweredLanes(%d) = %d, want %d", tc.workers, got, tc.lanes)
		}
	}
}

// Marked installs share the lanes; the others never wait for one.
func TestUnansweredInstallsTakeTurns(t *testing.T) {
	a, b, c, healthy := types.NamespacedName{Name: "a"}, types.NamespacedName{Name: "b"}, types.NamespacedName{Name: "c"}, types.NamespacedName{Name: "healthy"}
	u := &unansweredInstalls{limit: 2}
	for _, key := range []types.NamespacedName{a, b, c} {
		u.observe(key, true)
	}
	releaseA, okA := u.admit(a)
	releaseB, okB := u.admit(b)
	if !okA || !okB {
		t.Fatalf("the first two marked installs: admitted %v, %v; want both, in the two lanes", okA, okB)
	}
	if _, ok := u.admit(c); ok {
		t.Fatal("a third marked install was admitted while both lanes were taken")
	}
	for range 3 {
		release, ok := u.admit(healthy)
		if !ok {
			t.Fatal("an unmarked install waited for a lane")
		}
		release()
	}
	releaseA()
	releaseA() // a release counts once
	releaseC, ok := u.admit(c)
	if !ok {
		t.Fatal("a lane freed by a release was not handed out")
	}
	if _, ok := u.admit(a); ok {
		t.Fatal("a double release freed two lanes")
	}
	releaseB()
	releaseC()

	u.observe(a, false) // its webhook answered
	if release, ok := u.admit(a); !ok {
		t.Fatal("an install freed by a pass that found its webhook answering still waits for a lane")
	} else {
		release()
	}
	u.forget(b)
	if got := len(u.marked); got != 1 {
		t.Fatalf("%d installs marked after a and b were freed, want 1 (c)", got)
	}
}

// The zero value (a reconciler not set up by SetupWithManager) has one
// lane, not none.
func TestUnansweredInstallsZeroValueHasOneLane(t *testing.T) {
	var u unansweredInstalls
	key := types.NamespacedName{Name: "a"}
	u.observe(key, true)
	if _, ok := u.admit(key); !ok {
		t.Fatal("no lane in the zero value")
	}
	if _, ok := u.admit(key); ok {
		t.Fatal("two lanes in the zero value")
	}
}

func TestFoundUnanswered(t *testing.T) {
	crd := func(reason string, took time.Duration) installState {
		return installState{crds: []*crdState{{name: "ok", verifyTook: 40 * time.Second}, {name: "x", verifyReason: reason, verifyTook: took}}}
	}
	for _, tc := range []struct {
		name   string
		s      installState
		marked bool
		why    string
	}{
		{"a conversion that waited and was unreachable", crd(v1alpha1.ReasonWebhookUnreachable, 30*time.Second), true, ""},
		{"an admission webhook that waited and was unreachable",
			installState{admission: []*admissionState{{name: "x", verifyReason: v1alpha1.ReasonWebhookUnreachable, verifyTook: 10 * time.Second}}}, true, ""},
		{"unreachable at once (connection refused, no endpoint)", crd(v1alpha1.ReasonWebhookUnreachable, time.Second), false, "a quick failure holds no worker"},
		{"just under the wait", crd(v1alpha1.ReasonWebhookUnreachable, unansweredAfter-time.Millisecond), false, "under unansweredAfter"},
		{"a slow conversion that converted", crd("", 30*time.Second), false, "the webhook answered"},
		{"a slow refusal", crd(v1alpha1.ReasonConversionRefused, 30*time.Second), false, "the webhook answered"},
		{"a slow untrusted webhook", crd(v1alpha1.ReasonWebhookUntrusted, 30*time.Second), false, "the TLS handshake answered"},
		{"a slow admission webhook that errored",
			installState{admission: []*admissionState{{name: "x", verifyReason: v1alpha1.ReasonWebhookErrored, verifyTook: 10 * time.Second}}}, false, "the webhook answered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := foundUnanswered(&tc.s); got != tc.marked {
				t.Errorf("foundUnanswered = %v, want %v %s", got, tc.marked, tc.why)
			}
		})
	}
}
