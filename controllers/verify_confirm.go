package controllers

import (
	"sync"
	"time"
)

// confirmAfter is how long after a verification made in the pass that
// pointed the CRD at the webhook Hookwright converts through the API
// server once more.
const confirmAfter = 2 * time.Second

// unconfirmedVerifications are the CRDs verified in the same pass that
// pointed them at the webhook (writeWatched), to be verified once more by a
// later pass.
//
// Hookwright's CRD watch showing its write is a strong sign, not a proof,
// that the API server has applied it: the API server loads a CRD change
// through an informer of its own, which a loaded server can deliver after
// Hookwright's watch. Until then it still converts through the previous
// configuration, None for a new install, and None converts anything: a
// verification then succeeds without calling the webhook (seen once in the
// controllers suite on a loaded machine: a webhookPath the webhook does not
// serve was reported ConversionVerified, and stayed so, since a verified
// CRD is not verified again until something changes). A failed
// verification needs no second look: the API server's error names the
// webhook it called. One more conversion a moment later, which writes
// nothing when it agrees, bounds such a mistake to that moment.
//
// In memory only: a restarted manager does not confirm what its
// predecessor verified.
type unconfirmedVerifications struct {
	mu   sync.Mutex
	crds map[string]bool
}

func (u *unconfirmedVerifications) add(crd string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.crds == nil {
		u.crds = map[string]bool{}
	}
	u.crds[crd] = true
}

// take reports whether crd awaits its confirmation, and forgets it: the
// caller verifies it now.
func (u *unconfirmedVerifications) take(crd string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	pending := u.crds[crd]
	delete(u.crds, crd)
	return pending
}
