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
	const (
		timedOut = `the API server could not reach the webhook (no ready pod, connection refused or timed out), so it could not convert widgets.example.com to v2: ` +
			`conversion webhook for example.com/v2, Kind=Widget failed: Post "https://widgets.team-a.svc:443/convert?timeout=30s": net/http: request canceled (Client.Timeout exceeded while awaiting headers)`
		deadline = `... failed: Post "https://widgets.team-a.svc:443/convert?timeout=30s": context deadline exceeded`
		refused  = `... failed: Post "https://widgets.team-a.svc:443/convert?timeout=30s": dial tcp 127.0.0.1:40000: connect: connection refused`
	)
	crd := func(reason, message string, took time.Duration) installState {
		return installState{crds: []*crdState{{name: "ok", verifyTook: 40 * time.Second}, {name: "x", verifyReason: reason, message: message, verifyTook: took}}}
	}
	admission := func(reason, message string, took time.Duration) installState {
		return installState{admission: []*admissionState{{name: "x", verifyReason: reason, message: message, verifyTook: took}}}
	}
	for _, tc := range []struct {
		name   string
		s      installState
		marked bool
		why    string
	}{
		{"a conversion whose wait ran out", crd(v1alpha1.ReasonWebhookUnreachable, timedOut, 30*time.Second), true, ""},
		{"a conversion whose context ran out", crd(v1alpha1.ReasonWebhookUnreachable, deadline, 30*time.Second), true, ""},
		{"an admission webhook whose wait ran out",
			admission(v1alpha1.ReasonWebhookUnreachable, `failed calling webhook "v.example.com": failed to call webhook: Post "https://v.team-a.svc:443/v?timeout=10s": context deadline exceeded`, 10*time.Second), true, ""},
		{"refused, after the API server's retries", crd(v1alpha1.ReasonWebhookUnreachable, refused, 8*time.Second), false, "a pod not serving yet is refused, slowly on a loaded API server"},
		{"a timeout under the wait", crd(v1alpha1.ReasonWebhookUnreachable, timedOut, unansweredAfter-time.Millisecond), false, "under unansweredAfter"},
		{"a slow conversion that converted", crd("", "read team-a/w at v2 through the webhook (context deadline exceeded once)", 30*time.Second), false, "the webhook answered"},
		{"a slow refusal", crd(v1alpha1.ReasonConversionRefused, deadline, 30*time.Second), false, "the webhook answered"},
		{"a slow untrusted webhook", crd(v1alpha1.ReasonWebhookUntrusted, deadline, 30*time.Second), false, "the TLS handshake answered"},
		{"a slow admission webhook that errored", admission(v1alpha1.ReasonWebhookErrored, deadline, 10*time.Second), false, "the webhook answered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := foundUnanswered(&tc.s); got != tc.marked {
				t.Errorf("foundUnanswered = %v, want %v %s", got, tc.marked, tc.why)
			}
		})
	}
}
