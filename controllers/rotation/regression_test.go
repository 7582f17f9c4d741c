package rotation

import (
	"strings"
	"testing"
	"time"

	"github.com/hookwright/hookwright/certs"
)

const day = 24 * time.Hour

// TestCADueDoesNotLoopServingRenewal replays issue "Every guarantee holds
// at its edges", item 1: a 90-day CA, 30-day serving certificates and
// renewBefore 10d, over 100 days. At day 80 the CA is due; the serving
// certificate, cut to the CA's expiry, is due at the same instant. The old
// planner looked at the serving certificate first and reissued it from the
// due CA on every pass (each reissue due again at once), never rotating the
// CA, until the CA expired at day 90 and conversions stopped. Now the CA
// rotation comes first and moves the serving certificate to the new CA.
func TestCADueDoesNotLoopServingRenewal(t *testing.T) {
	policy := certs.Policy{KeyAlgorithm: certs.ECDSAP256, CALifetime: 90 * day, ServingLifetime: 30 * day, RenewBefore: 10 * day}
	s := newSim(1, policy, 10*time.Minute, now)
	s.keepGoing = true
	s.maxPasses = 5000 // a correct planner needs a few dozen
	s.run(now.Add(100 * day))
	t.Log(s.summary())

	if s.stopReason != "" {
		t.Errorf("the 100 days were not simulated: %s", s.stopReason)
	}
	if got := s.actions[StartCARotation]; got != 1 {
		t.Errorf("CA rotations started in 100 days = %d, want 1 (at day 80)", got)
	}
	if got := s.actions[Prune]; got != 1 {
		t.Errorf("CA rotations completed (old CA pruned) in 100 days = %d, want 1", got)
	}
	// Initial, days 20, 40 and 60, and the promotion to the new CA at day 80.
	if got := s.count("serving"); got > 5 {
		t.Errorf("serving certificate written %d times in 100 days, want at most 5", got)
	}
	if len(s.violations) > 0 {
		t.Errorf("violations:\n%s", strings.Join(s.violations, "\n"))
	}
	if len(s.cas) == 2 && (s.cas[1].promoted.IsZero() || !s.cas[1].promoted.Before(s.cas[0].notAfter)) {
		t.Errorf("the new CA was not promoted before the old one expired at %s", s.cas[0].notAfter)
	}
}

// TestPruneHeldWhileAPodServesTheOldChain replays issue "Every guarantee
// holds at its edges", item 2: a webhook that ignores the certificate it
// mounts keeps serving the old chain through a CA rotation. The old CA
// must never leave the caBundle then: Prune is proven by what the pods
// serve under the new CA alone, so it holds (no read fails, as
// checkServed asserts at every step) until the webhook serves the new
// chain, and completes right after.
func TestPruneHeldWhileAPodServesTheOldChain(t *testing.T) {
	policy := certs.Policy{KeyAlgorithm: certs.ECDSAP256, CALifetime: 90 * day, ServingLifetime: 30 * day}
	s := newSim(1, policy, 10*time.Minute, now)
	s.run(now.Add(time.Hour))
	s.manual, s.manualWhy = "ca", "rotate while the webhook is stuck"
	s.stuck = s.serving.CertPEM
	s.at(s.now.Add(time.Millisecond))
	s.run(s.now.Add(6 * time.Hour))
	if len(s.violations) > 0 {
		t.Fatalf("violations:\n%s", strings.Join(s.violations, "\n"))
	}
	if s.actions[Promote] != 1 || len(s.previous) != 1 || s.heldPrunes == 0 {
		t.Fatalf("want the rotation promoted and held before pruning: promotions %d, previous CAs %d, held prunes %d", s.actions[Promote], len(s.previous), s.heldPrunes)
	}
	// Held prunes are retried with a growing pause, not on every pass.
	if max := int(6*time.Hour/pruneHeldMaxRetry) + 10; s.heldPrunes > max {
		t.Errorf("%d held prunes in 6h, want at most %d", s.heldPrunes, max)
	}

	s.stuck = nil // the webhook is fixed (restarted, or reloads what it mounts)
	s.run(s.now.Add(time.Hour))
	if len(s.violations) > 0 {
		t.Fatalf("violations:\n%s", strings.Join(s.violations, "\n"))
	}
	if len(s.previous) != 0 {
		t.Errorf("the old CA was not pruned once the webhook served the new chain")
	}
	t.Log(s.summary())
}
