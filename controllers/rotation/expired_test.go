package rotation

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hookwright/hookwright/certs"
)

// TestExpiredCAReplacedFromScratch: Hookwright is down while the active
// CA expires, at several stages of its life, with and without a pending
// manual request. The first pass after the restart replaces the CA from
// scratch (an ordered hand-over cannot work: every chain through the
// expired CA fails already), drops the expired CA and any next or previous
// one from the caBundle at once, and the reason says why. Reads succeed
// again once the new pods serve, and rotation goes on for two more CA
// lifetimes with every property of TestPlanProperties.
func TestExpiredCAReplacedFromScratch(t *testing.T) {
	policy := certs.Policy{KeyAlgorithm: certs.ECDSAP256, CALifetime: 90 * day, ServingLifetime: 30 * day, RenewBefore: 10 * day}
	kindIs := func(k ActionKind) func(Action) bool { return func(a Action) bool { return a.Kind == k } }
	tests := []struct {
		name       string
		stopAt     func(Action) bool // stop the operator after this pass (nil: at day 50)
		manual     string            // "ca" or "serving": a request pending at the restart
		wantReason string
	}{
		{"down from day 50", nil, "", ReasonCAExpired},
		{"down from the start of a CA rotation (next published)", kindIs(StartCARotation), "", ReasonCAExpired},
		{"down during the overlap (previous kept)", kindIs(Promote), "", ReasonCAExpired},
		{"manual CA request while the CA is expired", nil, "ca", ReasonManual},
		{"manual serving request while the CA is expired", nil, "serving", ReasonManual},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSim(int64(i+1), policy, 10*time.Minute, now)
			if tt.stopAt == nil {
				s.run(now.Add(50 * day))
			} else {
				s.runUntil(now.Add(200*day), tt.stopAt)
			}
			if len(s.violations) > 0 {
				t.Fatalf("before the outage:\n%s", strings.Join(s.violations, "\n"))
			}
			if tt.stopAt != nil && s.next == nil && s.previous == nil {
				t.Fatal("test bug: the operator did not stop mid-rotation")
			}
			expired := s.active.Cert
			wake := expired.NotAfter.Add(3 * day)
			s.sleep(wake)
			if !s.outage {
				t.Fatal("test bug: reads still succeed after the CA expired")
			}
			if tt.manual != "" {
				s.manual, s.manualWhy = tt.manual, "the CA expired"
			}

			first := s.pass()
			if first.Kind != IssueInitial || first.Reason != tt.wantReason {
				t.Fatalf("first pass after the restart: %s/%q (%s), want IssueInitial/%q", first.Kind, first.Reason, first.Message, tt.wantReason)
			}
			if !strings.Contains(first.Message, "expired at "+expired.NotAfter.UTC().Format(time.RFC3339)) {
				t.Errorf("message %q does not say when the CA expired", first.Message)
			}
			if s.next != nil || s.previous != nil {
				t.Error("a next or previous CA survived the replacement")
			}
			if want := certs.Bundle(s.active.Cert); !bytes.Equal(s.bundle, want) {
				t.Error("the caBundle still carries other CAs than the new one")
			}
			if s.manual != "" {
				t.Error("the manual request is still pending: it would rotate again")
			}

			s.run(wake.Add(2*policy.CALifetime + 10*day))
			checkRun(t, s, s.now, tt.wantReason)
			if s.outage || s.outageEnded.Sub(wake) > s.maxRollout+s.maxLatency {
				t.Errorf("reads failed until %s, %s after the restart", s.outageEnded, s.outageEnded.Sub(wake))
			}
			if got := s.reasons[tt.wantReason]; got != 1 {
				t.Errorf("%d actions with reason %s, want 1 (the replacement)", got, tt.wantReason)
			}
			if t.Failed() {
				t.Log(s.summary())
			}
		})
	}
}
