package rotation

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookwright/hookwright/certs"
)

// servingInterval is the least time between two renewals of serving
// certificates under p: NotAfter has whole seconds, which loses up to 1s.
func servingInterval(p certs.Policy) time.Duration {
	if p.RenewBefore > 0 {
		return p.ServingLifetime - p.RenewBefore - time.Second
	}
	return (p.ServingLifetime-time.Second)*2/3 - time.Second
}

// writeBound is the most Secret writes one CA generation may cost: from the
// write that creates a CA to the write that creates its successor, which
// is at most one CA lifetime (the successor is created when the CA is due):
//
//	4                     store it as next, promote it (CA Secret and the
//	                      serving certificate moved to it), prune the old CA
//	+ caLifetime/interval serving renewals at least servingInterval apart
//	+ 1                   one renewal cut short by the CA's own expiry
//
// The old planner exceeded it without limit: once the CA was due it
// rewrote the serving Secret on every pass.
func writeBound(p certs.Policy) int {
	return 5 + int(p.CALifetime/servingInterval(p))
}

func logUniform(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return time.Duration(math.Exp(math.Log(float64(lo)) + rng.Float64()*(math.Log(float64(hi))-math.Log(float64(lo)))))
}

// randomPolicy draws a policy the CRD admits (certs.Policy.Validate), with
// at most maxRatio serving renewals per CA lifetime to keep the run short
// (TestPlanEdgePolicies covers the extreme ratios), and a trust overlap
// from none to twice the CA lifetime (longer than the CA's renewal
// interval: the overlap must then be cut short).
func randomPolicy(rng *rand.Rand, maxRatio int) (certs.Policy, time.Duration) {
	for {
		// The key algorithm plays no part in timing; P-256 is the fastest.
		p := certs.Policy{KeyAlgorithm: certs.ECDSAP256, CALifetime: logUniform(rng, certs.MinCALifetime, 2*365*day)}
		p.ServingLifetime = p.CALifetime
		if rng.Intn(4) != 0 {
			p.ServingLifetime = time.Duration(float64(p.CALifetime) / (1 + rng.Float64()*15))
		}
		switch rng.Intn(4) {
		case 0: // two thirds of the lifetime
		case 1:
			p.RenewBefore = certs.MinRenewBefore
		default:
			p.RenewBefore = time.Duration(float64(p.ServingLifetime) * (0.05 + rng.Float64()*0.85))
		}
		if p.Validate() != nil || int(p.CALifetime/servingInterval(p)) > maxRatio {
			continue
		}
		var overlap time.Duration
		switch rng.Intn(4) {
		case 1:
			overlap = time.Duration(rng.Int63n(int64(time.Minute)))
		case 2:
			overlap = time.Duration(rng.Int63n(int64(p.CALifetime / 10)))
		case 3:
			overlap = time.Duration(rng.Int63n(int64(2 * p.CALifetime)))
		}
		return p, overlap
	}
}

// checkRun asserts the properties of a finished undisturbed run; extra
// reasons may appear besides Initial and Expiring.
func checkRun(t *testing.T, s *sim, end time.Time, extra ...string) {
	t.Helper()
	if len(s.violations) > 0 {
		t.Errorf("violations:\n%s", strings.Join(s.violations, "\n"))
	}
	if s.stopReason != "" {
		t.Errorf("stopped early: %s", s.stopReason)
	}
	// Every CA but the last was replaced, and its successor signed the
	// serving certificates, before it expired. A CA a test took out of the
	// CA Secret needs no successor, and one lost before it signed anything
	// is none.
	for i := 0; i+1 < len(s.cas); i++ {
		if !s.cas[i].notAfter.After(s.sleptUntil) || s.lost[s.cas[i].fingerprint] {
			continue // expired while the operator was down (TestExpiredCAReplacedFromScratch), or lost
		}
		j := i + 1
		for j+1 < len(s.cas) && s.lost[s.cas[j].fingerprint] && s.cas[j].promoted.IsZero() {
			j++
		}
		if next := s.cas[j]; next.promoted.IsZero() || !next.promoted.Before(s.cas[i].notAfter) {
			if next.promoted.IsZero() && !end.After(next.created.Add(time.Minute)) {
				continue // the run ended mid-rotation
			}
			t.Errorf("CA %d (expires %s) was not replaced in time: its successor was promoted at %s", i, s.cas[i].notAfter, next.promoted)
		}
	}
	writes, disturbances := s.writesPerCA()
	for i, n := range writes {
		if bound := writeBound(s.policy) + 3*disturbances[i]; n > bound {
			t.Errorf("CA generation %d cost %d Secret writes, bound %d", i, n, bound)
		}
	}
	for reason := range s.reasons {
		if reason != ReasonInitial && reason != string(certs.ReasonExpiring) && !slices.Contains(extra, reason) {
			t.Errorf("unexpected reason %q in an undisturbed run", reason)
		}
	}
}

// TestPlanProperties drives the pure planner with the simulated executor
// of sim_test.go for 300 random valid policies (fixed seeds: a failure
// names its seed, rerun it with -run 'TestPlanProperties/seed=N') across
// two CA lifetimes and a tenth, and asserts at every step that every
// certificate a pod may serve verifies under the caBundle (none is served
// past its NotAfter or its CA's), that no certificate is issued from a due
// or expired CA, that the active CA never expires, that every CA is
// replaced before it expires, that no pass waits for an event that never
// comes, and that each CA generation costs at most writeBound Secret writes.
func TestPlanProperties(t *testing.T) {
	policies := int64(300)
	if testing.Short() {
		policies = 50
	}
	for seed := int64(1); seed <= policies; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			policy, overlap := randomPolicy(rng, 60)
			start := now.Add(time.Duration(rng.Int63n(int64(365 * day))))
			s := newSim(seed, policy, overlap, start)
			end := start.Add(2*policy.CALifetime + policy.CALifetime/10)
			s.maxPasses = 20 * writeBound(policy) * 4
			s.run(end)
			checkRun(t, s, end)
			if len(s.cas) < 3 {
				t.Errorf("%d CAs in two CA lifetimes, want at least 3", len(s.cas))
			}
			if t.Failed() || testing.Verbose() {
				t.Log(s.summary())
			}
		})
	}
}

// TestPlanEdgePolicies runs the same checks on the extreme policies the
// CRD admits: the shortest lifetimes and the largest renewBefore.
func TestPlanEdgePolicies(t *testing.T) {
	tests := []struct {
		name    string
		policy  certs.Policy
		overlap time.Duration
	}{
		{"shortest everything, two thirds", certs.Policy{CALifetime: time.Hour, ServingLifetime: 10 * time.Second}, 0},
		{"shortest renewal interval", certs.Policy{CALifetime: time.Hour, ServingLifetime: 15 * time.Second, RenewBefore: 10 * time.Second}, time.Minute},
		{"serving as long as the CA, CA renewed 10m after issue", certs.Policy{CALifetime: time.Hour, ServingLifetime: time.Hour, RenewBefore: 50 * time.Minute}, 2 * time.Hour},
		{"serving as long as the CA, shortest renewBefore", certs.Policy{CALifetime: time.Hour, ServingLifetime: time.Hour, RenewBefore: 10 * time.Second}, 10 * time.Minute},
		{"defaults", certs.Policy{CALifetime: 17520 * time.Hour, ServingLifetime: 2160 * time.Hour}, 10 * time.Minute},
		{"bench P2 (servingLifetime 20s, renewBefore 14s)", certs.Policy{CALifetime: 17520 * time.Hour, ServingLifetime: 20 * time.Second, RenewBefore: 14 * time.Second}, 10 * time.Minute},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.policy.Validate(); err != nil {
				t.Fatalf("test bug: %v", err)
			}
			s := newSim(int64(i+1), tt.policy, tt.overlap, now)
			end := now.Add(2*tt.policy.CALifetime + tt.policy.CALifetime/10)
			if ratio := tt.policy.CALifetime / servingInterval(tt.policy); ratio > 1500 {
				end = now.Add(1500 * servingInterval(tt.policy)) // a thousand renewals make the point
			}
			s.maxPasses = 1_000_000
			s.run(end)
			checkRun(t, s, end)
			if t.Failed() {
				t.Log(s.summary())
			}
		})
	}
}

// TestPlanPropertiesDisturbed runs random policies while an admin and
// accidents interfere at random times: the serving Secret deleted or
// replaced by one from a foreign CA, the CA Secret deleted, garbled or
// overwritten with a foreign CA (issue "Every guarantee holds at its
// edges", item 3: every read still succeeds, as checkServed asserts), manual CA and serving rotation
// requests, a third of them right after a CA rotation started (while the
// active CA is due). The same properties hold, except that a serving certificate
// nothing could serve may be repaired from a due CA (Plan's step 3); each
// disturbance may cost up to 3 more writes in its CA generation, and no
// manual request is carried out twice.
func TestPlanPropertiesDisturbed(t *testing.T) {
	policies := int64(100)
	if testing.Short() {
		policies = 20
	}
	foreign := mustCA(t, now, 10*365*day)
	foreignCA := mustCA(t, now, 10*365*day)
	for seed := int64(1001); seed <= 1000+policies; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			policy, overlap := randomPolicy(rng, 40)
			s := newSim(seed, policy, overlap, now)
			s.strictIssuing = false
			s.maxPasses = 40 * writeBound(policy) * 4
			end := now.Add(2*policy.CALifetime + policy.CALifetime/10)
			requests := 0
			for s.now.Before(end) && len(s.violations) == 0 && s.stopReason == "" {
				if rng.Intn(3) == 0 {
					// Right after a CA rotation starts: the active CA is due.
					s.runUntil(end, func(a Action) bool { return a.Kind == StartCARotation })
				} else {
					s.run(minTime(end, s.now.Add(logUniform(rng, policy.CALifetime/50, policy.CALifetime/3))))
				}
				if !s.now.Before(end) || s.serving == nil {
					continue
				}
				s.disturbed = append(s.disturbed, s.now)
				switch rng.Intn(7) {
				case 0:
					s.serving = nil
				case 1:
					pair, err := foreign.IssueServing(s.names, policy.KeyAlgorithm, policy.ServingLifetime, s.now)
					if err != nil {
						t.Fatal(err)
					}
					s.serving = &pair
				case 2:
					requests++
					s.manual, s.manualWhy = "ca", fmt.Sprintf("request %d", requests)
				case 3:
					requests++
					s.manual, s.manualWhy = "serving", fmt.Sprintf("request %d", requests)
				case 4:
					s.loseCASecret(certs.Verdict{Reason: certs.ReasonMissing, Message: "the CA Secret was deleted"})
				case 5:
					s.loseCASecret(certs.Verdict{Reason: certs.ReasonInvalid, Message: "the CA Secret is garbled"})
				case 6:
					s.replaceCASecret(foreignCA)
				}
				s.wake = append(s.wake, s.now.Add(time.Millisecond)) // the Secret or annotation event
			}
			checkRun(t, s, end, ReasonManual, string(certs.ReasonMissing), string(certs.ReasonCAChanged), string(certs.ReasonInvalid), string(certs.ReasonPolicyChanged))
			if s.reasons[ReasonManual] > requests {
				t.Errorf("%d manual rotations for %d requests", s.reasons[ReasonManual], requests)
			}
			if t.Failed() || testing.Verbose() {
				t.Logf("%d disturbances, %d repairs from a due CA; %s", len(s.disturbed), s.repairsFromDue, s.summary())
			}
		})
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
