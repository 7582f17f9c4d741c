package controllers

import (
	"sync"
	"time"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// confirmAfter is how long after a CRD's first successful verification
// Hookwright converts through the API server once more.
const confirmAfter = 2 * time.Second

// unconfirmedVerifications are the CRDs whose verification succeeded while
// their status did not say Verified yet (a new install's, one taken over,
// one that had failed), to be verified once more by a later pass.
//
// Hookwright's CRD watch showing its write is a strong sign, not a proof,
// that the API server has applied it: the API server loads a CRD change
// through an informer of its own, which a loaded server can deliver after
// Hookwright's watch. Until then it still converts through the previous
// configuration, None for a new install (or the previous owner's webhook
// for a CRD taken over), and None converts anything: a verification then
// succeeds without calling the webhook (seen once in the controllers suite
// on a loaded machine: a webhookPath the webhook does not serve was
// reported ConversionVerified, and stayed so, since a verified CRD is not
// verified again until something changes). A failed verification needs no
// second look: the API server's error names the webhook it called. One
// more conversion a moment later, which writes nothing when it agrees,
// bounds such a mistake to that moment. A CRD verified before (a
// certificate rotation's re-verification) already converted through this
// webhook: its caBundle changes, not where conversions go.
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

// verifiedBefore: the install's status says the CRD is verified.
func verifiedBefore(install *v1alpha1.WebhookInstall, crd string) bool {
	for _, prev := range install.Status.ConversionCRDs {
		if prev.Name == crd {
			return prev.State == v1alpha1.ConversionVerified
		}
	}
	return false
}
