package controllers

import (
	"fmt"
	"sync"
	"time"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// confirmAfter is how long after the first successful verification of a
// CRD (or an admission webhook) Hookwright verifies it once more.
const confirmAfter = 2 * time.Second

// unconfirmedVerifications are the CRDs (and admission webhooks, below)
// whose verification succeeded while their status did not say Verified
// yet (a new install's, one taken over, one that had failed), to be
// verified once more by a later pass.
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
// Admission webhooks share the race: the API server loads webhook
// configurations through an informer too, and until it has loaded a new
// registration it calls no webhook at all, so the verification's dry run
// is admitted, which with failurePolicy Fail reads as proof that the
// webhook answered. Their first successful verification is confirmed the
// same way (keys from unconfirmedAdmissionKey).
//
// In memory only: a restarted manager does not confirm what its
// predecessor verified.
type unconfirmedVerifications struct {
	mu   sync.Mutex
	keys map[string]bool
}

// add marks key (a CRD's name, or unconfirmedAdmissionKey's) as awaiting
// its confirmation.
func (u *unconfirmedVerifications) add(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.keys == nil {
		u.keys = map[string]bool{}
	}
	u.keys[key] = true
}

// take reports whether key awaits its confirmation, and forgets it: the
// caller verifies it now.
func (u *unconfirmedVerifications) take(key string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	pending := u.keys[key]
	delete(u.keys, key)
	return pending
}

// unconfirmedAdmissionKey names an admission webhook among the CRD names:
// a webhook's name is unique only in its install's configuration of its
// kind, and no CRD name has a space or a slash.
func unconfirmedAdmissionKey(install *v1alpha1.WebhookInstall, a *admissionState) string {
	return fmt.Sprintf("%s %s/%s %s", a.kind, install.Namespace, install.Name, a.name)
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
