package controllers

import (
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// confirmAfter is how long after the first successful verification of a
// CRD (or an admission webhook) Hookwright verifies it once more.
const confirmAfter = 2 * time.Second

// unconfirmedVerifications are the CRDs (and admission webhooks, below)
// whose verification succeeded while their status did not say Verified
// yet (a new install's, one taken over, one that had failed) or right
// after a write that changed where conversions go, to be verified once
// more by a later pass.
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
// bounds such a mistake to that moment; it reads a stored object again
// only if the first verification read one (readNothing). A CRD verified
// before (a certificate rotation's re-verification) already converted
// through this webhook: its caBundle changes, not where conversions go.
//
// Admission webhooks share the race: the API server loads webhook
// configurations through an informer too, and until it has loaded a new
// registration it calls no webhook at all, so the verification's dry run
// is admitted, which with failurePolicy Fail reads as proof that the
// webhook answered. Their first successful verification is confirmed the
// same way (keys from unconfirmedAdmissionKey).
//
// The set is in memory, so a manager that stops between a first
// verification and its confirmation would leave it unconfirmed; the status
// carries when each verification was first made (VerifiedSince), and its
// successor confirms those made shortly before it took over (inherit).
//
// Each key carries when its confirmation is due: a pass that comes earlier
// (woken by something else: a second pod turning ready, a Deployment's
// status) trusts the status and asks for a pass at that time, since a dry
// run before it proves no more than the first did.
type unconfirmedVerifications struct {
	mu  sync.Mutex
	due map[string]time.Time
	// readNothing are the keys whose first verification found no stored
	// object to read (markReadNothing): their confirmation needs a dry run
	// alone (verifyConversion).
	readNothing map[string]bool

	// started is when this manager's first pass ran (begin); inherited are
	// the keys whose predecessor's verification it has taken on (inherit).
	started   time.Time
	inherited map[string]bool
}

// begin records the time of this manager's first pass: it runs once the
// manager leads, so a standby's wait does not widen inheritWindow.
func (u *unconfirmedVerifications) begin(now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.started.IsZero() {
		u.started = now
	}
}

// inheritWindow is how long before this manager's first pass a
// verification counts as possibly a predecessor's unconfirmed one. It
// covers the predecessor's last moments (its confirmation was due 2 s
// after the verification, later when its queue was long), the leader
// election's hand-over (a lease is taken over 15 s after its last renewal
// when its holder did not release it) and the restart of a crashed pod
// under back-off (up to 5 minutes). A manager away longer than that right
// after a first verification leaves it unconfirmed; re-verifying every
// CRD on each restart instead would call every conversion webhook at once
// whenever Hookwright restarts.
const inheritWindow = 10 * time.Minute

// inherit marks key as awaiting its confirmation, once, when the status
// says it was first verified (since) within inheritWindow before this
// manager's first pass: a predecessor may have stopped before confirming
// it. Its confirmation is due confirmAfter after the verification, which
// the status dates to the second (so at most a second after since).
//
// Only verifications dated before this manager's first pass (or in its
// second) qualify, so inherited holds at most the keys verified in the ten
// minutes before it started, and needs no pruning; a key this manager
// verifies itself in that second is marked by add, so that it is not
// taken for a predecessor's.
func (u *unconfirmedVerifications) inherit(key string, since *metav1.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if since == nil || u.started.IsZero() || u.inherited[key] {
		return
	}
	if since.Time.Before(u.started.Add(-inheritWindow)) || since.Time.After(u.started) {
		return
	}
	u.markInherited(key)
	u.setDue(key, since.Time.Add(time.Second+confirmAfter))
}

// add marks key (a CRD's name, or unconfirmedAdmissionKey's) as awaiting
// its confirmation, due confirmAfter after now.
func (u *unconfirmedVerifications) add(key string, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !now.Truncate(time.Second).After(u.started) {
		u.markInherited(key) // its VerifiedSince will look like a predecessor's
	}
	u.setDue(key, now.Add(confirmAfter))
	delete(u.readNothing, key)
}

// markReadNothing records that key's first verification, just added,
// found no stored object to read.
func (u *unconfirmedVerifications) markReadNothing(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.readNothing == nil {
		u.readNothing = map[string]bool{}
	}
	u.readNothing[key] = true
}

// takeReadNothing reports whether the first verification that key's
// confirmation confirms found no stored object, and forgets it. A
// predecessor's verification (inherit) is not known here, so its
// confirmation reads again.
func (u *unconfirmedVerifications) takeReadNothing(key string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	nothing := u.readNothing[key]
	delete(u.readNothing, key)
	return nothing
}

// take reports whether key's confirmation is due at now, and then forgets
// it (the caller verifies it now); or else how long until it is due (zero
// when key awaits none).
func (u *unconfirmedVerifications) take(key string, now time.Time) (due bool, wait time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	at, pending := u.due[key]
	switch {
	case !pending:
		return false, 0
	case now.Before(at):
		return false, at.Sub(now)
	}
	delete(u.due, key)
	return true, 0
}

func (u *unconfirmedVerifications) markInherited(key string) {
	if u.inherited == nil {
		u.inherited = map[string]bool{}
	}
	u.inherited[key] = true
}

func (u *unconfirmedVerifications) setDue(key string, at time.Time) {
	if u.due == nil {
		u.due = map[string]time.Time{}
	}
	u.due[key] = at
}

// confirmationDue reports whether key's confirmation is due this pass;
// when it is pending but not yet due, the pass asks for one at that time.
func (r *WebhookInstallReconciler) confirmationDue(s *installState, key string) bool {
	due, wait := r.unconfirmed.take(key, s.now)
	if wait > 0 {
		s.retryWithin(wait)
	}
	return due
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

// crdVerifiedSince is the VerifiedSince of the CRD's new status: this
// pass's time when its verification was a first one (c.firstVerified) or
// the status did not say Verified, else what the status said (nil for a
// status written before the field existed: no write just to add it).
func crdVerifiedSince(s *installState, c *crdState) *metav1.Time {
	switch {
	case c.state != v1alpha1.ConversionVerified:
		return nil
	case !c.firstVerified && verifiedBefore(s.install, c.name):
		return crdStatusSince(s.install, c.name)
	}
	return &metav1.Time{Time: s.now.Truncate(time.Second)}
}

// crdStatusSince is the VerifiedSince the install's status gives the CRD.
func crdStatusSince(install *v1alpha1.WebhookInstall, crd string) *metav1.Time {
	for _, prev := range install.Status.ConversionCRDs {
		if prev.Name == crd && prev.State == v1alpha1.ConversionVerified {
			return prev.VerifiedSince
		}
	}
	return nil
}
