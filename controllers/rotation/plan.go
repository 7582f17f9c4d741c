// Package rotation decides, as a pure function of what is stored in the
// cluster, the next step of a webhook Service's certificate lifecycle.
// Every input is read from Secrets, CRDs, admission configurations and the
// Deployment, never kept in memory, so an operator restarted at any step
// resumes where it stopped.
//
// A CA rotation is ordered so that no conversion and no admission call
// fails:
//
//  1. StartCARotation: a new CA is stored as "next".
//  2. Every caBundle the install writes, its CRDs' and its admission
//     webhooks', becomes [active, next] (the conversion and admission steps
//     derive the bundle from the CA Secret).
//  3. Promote, once every one has had next for SettleTime and the executor
//     has proven that the API server loaded that caBundle: serving
//     certificates are issued from next, which becomes active; the old CA
//     becomes "previous" until PruneAt.
//  4. The webhook Deployment rolls to the new certificate; old pods keep
//     serving the old one, still trusted through previous.
//  5. Prune, once the rollout is done, PruneAt passed and the executor has
//     proven that the API server trusts what the pods serve through the
//     active CA alone: previous leaves the Secret and so the caBundle.
//     Until that proof, previous stays (the rotation holds).
//
// The executor's proofs (controllers/trustprobe.go) are checks that fail
// when what they confirm is false; the planner only says when to ask.
//
// The CA Secret is not the only record of trust: the caBundles say
// what the API server trusts now (Observed.Known). When the CA Secret is
// lost, damaged or overwritten, that trust is kept as previous (KeepTrust)
// and leaves through the same ordered path: the serving certificate moves
// to the stored CA once the API server has loaded it (MoveServing), then
// steps 4 and 5.
package rotation

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookwright/hookwright/certs"
)

// SettleTime is how long a newly published caBundle must have been on
// every CRD and admission configuration before anything relies on it: the
// API server loads their changes asynchronously.
const SettleTime = 2 * time.Second

// Observed is the state of one webhook Service, as stored in the cluster.
type Observed struct {
	Now      time.Time
	Policy   certs.Policy
	Overlap  time.Duration
	DNSNames []string

	Active   *certs.CA           // the CA that signs serving certificates; nil if missing or unusable
	ActiveOK certs.Verdict       // why Active is nil or must be replaced
	Next     *certs.CA           // CA being introduced
	Previous []*x509.Certificate // CAs being retired (certificates only)
	PruneAt  time.Time           // when Previous may leave the bundle

	Serving *certs.KeyPair // the serving pair; nil if missing

	// Known are the CAs the API server trusts now for the Service, whether
	// or not the CA Secret holds them: the caBundle of every CRD that
	// converts through it and every admission webhook that calls it. (The
	// serving Secret's ca.crt is no source: whoever can write that Secret
	// could add a CA never trusted before.)
	Known []*x509.Certificate

	// NextTrustedFor is how long every CRD and registered admission webhook
	// of the Service has had Next in its caBundle; zero when one does not
	// have it yet.
	NextTrustedFor time.Duration
	// ActiveTrustedFor is the same for Active.
	ActiveTrustedFor time.Duration
	// RolledOut: the webhook Deployment is available and runs the current
	// serving certificate.
	RolledOut bool

	ManualCA, ManualServing string // pending manual requests, with the admin's reason
}

// ActionKind names what the executor must do next.
type ActionKind string

const (
	Nothing         ActionKind = "Nothing"         // all good; look again at DueAt
	Wait            ActionKind = "Wait"            // a step is under way; look again at DueAt or on an event
	IssueInitial    ActionKind = "IssueInitial"    // no usable CA: issue a CA and a serving certificate
	IssueServing    ActionKind = "IssueServing"    // reissue the serving certificate from Active
	StartCARotation ActionKind = "StartCARotation" // store a new CA as Next
	Promote         ActionKind = "Promote"         // prove the API server loaded the bundle, then make Next active and reissue serving from it
	Prune           ActionKind = "Prune"           // prove the pods serve chains to Active, then drop Previous
	// KeepTrust: the CA Secret lost the CA the serving certificate chains
	// to (deleted, damaged, overwritten). Store Action.Keep as Previous,
	// with a new CA as Active if the stored one is unusable; no serving
	// certificate is issued (MoveServing follows).
	KeepTrust ActionKind = "KeepTrust"
	// MoveServing: the serving certificate chains to Previous, not Active.
	// Prove the API server loaded the bundle, then reissue it from Active.
	MoveServing ActionKind = "MoveServing"
)

// Action is the planner's decision.
type Action struct {
	Kind    ActionKind
	Reason  string // a certs.Reason, "Manual", "Initial" or "CAExpired"
	Message string
	DueAt   time.Time // for Nothing and Wait: when a timer must fire (zero: wait for an event)
	// Keep: for KeepTrust, the CAs to keep trusted as Previous.
	Keep []*x509.Certificate
}

// ReasonManual, ReasonInitial and ReasonCAExpired complete certs' reasons
// for the audit trail.
const (
	ReasonManual  = "Manual"
	ReasonInitial = "Initial"
	// ReasonCAExpired: the active CA had expired (Hookwright was down, or
	// a rotation could not finish in time); a new CA was issued from
	// scratch instead of handed over in order.
	ReasonCAExpired = "CAExpired"
)

// Plan returns the next action for one Service. It decides in this order,
// so that no certificate is ever issued from an expired or due CA (with
// the one exception of step 3), the CA's health always comes before
// serving renewal, and no CA the pods may serve a chain to leaves the
// caBundle before they serve another:
//
//  0. The CA Secret cannot vouch for the serving certificate (it was
//     deleted, damaged or overwritten) while the cluster trusts CAs it
//     does not hold: keep them as Previous (KeepTrust, with a new CA when
//     the stored one is unusable). A from-scratch CA alone in the caBundle
//     would fail every read until the pods serve its certificate.
//  1. No usable CA: issue a CA and a serving certificate (IssueInitial).
//  2. The active CA has expired: replace it from scratch (IssueInitial,
//     ReasonCAExpired, or ReasonManual when an admin asked for a
//     rotation). The ordered hand-over is pointless then: a chain through
//     an expired CA never verifies, and every serving certificate it
//     signed expired with it (IssueServing cuts them to its NotAfter).
//     The expired CA leaves the caBundle at once, with any Next or
//     Previous: keeping it until the new pods serve would help no read.
//     (Step 0 keeps no expired CA either, for the same reason.)
//     2b. The serving certificate chains to Previous, not Active (kept trust,
//     or a restart between promotion's two writes): move it to Active once
//     every caBundle has had Active for SettleTime (MoveServing).
//  3. The serving certificate cannot be presented at all (missing,
//     unusable, signed by another CA, wrong names, expired): repair it
//     from the active CA, even a due one. This is the exception: the
//     alternative is no certificate, and the repair does not repeat (the
//     new certificate is valid and, cut to the due CA's expiry, is not
//     renewed on its own: the CA rotation moves it).
//  4. A CA rotation under way (Next): a Next that became due, expired or
//     was changed by policy before promotion is replaced; otherwise the
//     planner waits for the bundle to settle and promotes. Meanwhile the
//     serving certificate is renewed from the active CA only if that CA
//     is not due.
//  5. The old CA kept as Previous: a serving renewal from a CA that is
//     not due, else wait for the rollout and the overlap, then prune;
//     the overlap is cut short when the active CA is already due or
//     changed by policy (the next rotation cannot start before the prune).
//  6. The active CA due or changed by policy, or a manual CA request:
//     start an ordered rotation (a pending manual CA request is carried
//     out by it, so it never causes a second one).
//  7. The CA is healthy: renew the serving certificate if due or changed
//     by policy, or on a manual serving request.
//  8. Nothing: look again at the earliest renewal time.
//
// A due CA therefore never signs a renewal: before, a serving certificate
// cut to a due CA's expiry was due again right after each reissue, so the
// pass reissued it in a loop and never rotated the CA.
func Plan(o Observed) Action {
	keep := lostTrust(o)
	if o.Active == nil {
		reason, message := string(o.ActiveOK.Reason), o.ActiveOK.Message
		if len(keep) > 0 {
			return Action{Kind: KeepTrust, Reason: reason, Keep: keep, Message: message +
				"; a new CA is issued, and the CAs the cluster trusts now (" + fingerprints(keep) + ") stay in the caBundle until the webhook serves a certificate of the new one"}
		}
		if o.Serving == nil && o.ActiveOK.Reason == certs.ReasonMissing {
			reason, message = ReasonInitial, "first certificates of the service"
		}
		return Action{Kind: IssueInitial, Reason: reason, Message: message}
	}
	if !o.Now.Before(o.Active.Cert.NotAfter) {
		return replaceExpired(o)
	}
	if len(keep) > 0 {
		return Action{Kind: KeepTrust, Reason: string(certs.ReasonCAChanged), Keep: keep, Message: "the CA Secret holds CA " + certs.Fingerprint(o.Active.Cert) +
			", which did not sign the serving certificate the pods mount; the CAs the cluster trusts now (" + fingerprints(keep) + ") stay in the caBundle until the webhook serves a certificate of the stored CA"}
	}
	_, ca := o.Policy.CheckCA(&o.Active.Pair, o.Now)
	caDue := ca.Reason == certs.ReasonExpiring // due: expired was handled above
	serving := o.Policy.CheckServing(o.Serving, o.Active, o.DNSNames, o.Now)
	if serving.Reason == certs.ReasonCAChanged && chainsTo(o, o.Previous) {
		if o.ActiveTrustedFor >= SettleTime {
			return Action{Kind: MoveServing, Message: "the serving certificate chains to a CA being retired: moving it to the active CA " + certs.Fingerprint(o.Active.Cert)}
		}
		due := wakeAt(o)
		if o.ActiveTrustedFor > 0 {
			due = earliest(o.Now.Add(SettleTime-o.ActiveTrustedFor), due)
		}
		return Action{Kind: Wait, Message: "letting the API server load the caBundle with the active CA before moving the serving certificate to it", DueAt: due}
	}
	if unservable(o, serving) {
		message := serving.Message
		if caDue {
			message += "; repaired from the due CA, the CA rotation follows"
		}
		return Action{Kind: IssueServing, Reason: string(serving.Reason), Message: message}
	}
	if o.Next != nil {
		if _, next := o.Policy.CheckCA(&o.Next.Pair, o.Now); !next.OK() {
			return Action{Kind: StartCARotation, Reason: string(next.Reason), Message: "the new CA was not promoted in time and is replaced: " + next.Message}
		}
		if o.NextTrustedFor >= SettleTime {
			return Action{Kind: Promote, Message: "the API server trusts the new CA: moving serving certificates to it"}
		}
		if serving.Reason == certs.ReasonExpiring && !caDue {
			return Action{Kind: IssueServing, Reason: string(serving.Reason), Message: serving.Message}
		}
		if o.NextTrustedFor == 0 {
			return Action{Kind: Wait, Message: "publishing the new CA in every caBundle (CRDs and admission configurations)", DueAt: wakeAt(o)}
		}
		return Action{Kind: Wait, Message: "letting the API server load the new caBundle", DueAt: earliest(o.Now.Add(SettleTime-o.NextTrustedFor), wakeAt(o))}
	}
	if len(o.Previous) > 0 {
		switch {
		case !serving.OK() && !caDue:
			return Action{Kind: IssueServing, Reason: string(serving.Reason), Message: serving.Message}
		case !o.RolledOut:
			return Action{Kind: Wait, Message: "waiting for the webhook pods to serve the new certificate", DueAt: wakeAt(o)}
		case !ca.OK():
			return Action{Kind: Prune, Message: "the new CA serves and " + ca.Message + ": removing the old CA before the overlap ends, so the next rotation can start"}
		case o.Now.Before(o.PruneAt):
			return Action{Kind: Wait, Message: "keeping the old CA trusted for the overlap period", DueAt: earliest(o.PruneAt, wakeAt(o))}
		}
		return Action{Kind: Prune, Message: "the new CA serves and the overlap has passed: removing the old CA"}
	}
	if o.ManualCA != "" {
		message := o.ManualCA
		if !ca.OK() {
			message += " (the CA was also to be replaced: " + ca.Message + ")"
		}
		return Action{Kind: StartCARotation, Reason: ReasonManual, Message: message}
	}
	if !ca.OK() {
		return Action{Kind: StartCARotation, Reason: string(ca.Reason), Message: ca.Message}
	}
	if !serving.OK() {
		return Action{Kind: IssueServing, Reason: string(serving.Reason), Message: serving.Message}
	}
	if o.ManualServing != "" {
		return Action{Kind: IssueServing, Reason: ReasonManual, Message: o.ManualServing}
	}
	due := o.Policy.RenewAt(o.Active.Cert)
	if cert, err := certs.ParseCert(o.Serving.CertPEM); err == nil {
		due = earliest(due, o.Policy.RenewAt(cert))
	}
	return Action{Kind: Nothing, DueAt: due}
}

// replaceExpired is step 2 of Plan: a new CA from scratch. A pending manual
// request (CA or serving) is carried out by it and recorded as such.
func replaceExpired(o Observed) Action {
	message := fmt.Sprintf("the CA expired at %s: no chain through it verifies, so a new CA is issued from scratch and replaces it in the caBundle at once",
		o.Active.Cert.NotAfter.UTC().Format(time.RFC3339))
	for _, manual := range []string{o.ManualCA, o.ManualServing} {
		if manual != "" {
			return Action{Kind: IssueInitial, Reason: ReasonManual, Message: manual + " (" + message + ")"}
		}
	}
	return Action{Kind: IssueInitial, Reason: ReasonCAExpired, Message: message}
}

// lostTrust is step 0 of Plan: the CAs of o.Known that the CA Secret does
// not hold (expired ones verify nothing and are left out), when the
// Secret's CAs do not verify the stored serving certificate. It is empty
// in every state Hookwright writes itself: the caBundle and ca.crt are
// derived from the CA Secret, and the serving certificate chains to it.
func lostTrust(o Observed) []*x509.Certificate {
	stored := append([]*x509.Certificate{certOf(o.Active), certOf(o.Next)}, o.Previous...)
	var keep []*x509.Certificate
	for _, c := range o.Known {
		if c == nil || !c.IsCA || !o.Now.Before(c.NotAfter) || holds(stored, c) || holds(keep, c) {
			continue
		}
		keep = append(keep, c)
	}
	if len(keep) == 0 || chainsTo(o, stored) {
		return nil
	}
	return keep
}

// chainsTo: the stored serving certificate verifies under cas for the
// Service's name now.
func chainsTo(o Observed, cas []*x509.Certificate) bool {
	if o.Serving == nil || len(o.DNSNames) == 0 {
		return false
	}
	bundle := certs.Bundle(cas...)
	return len(bundle) > 0 && certs.VerifyServing(o.Serving.CertPEM, bundle, o.DNSNames[0], o.Now) == nil
}

func holds(cas []*x509.Certificate, c *x509.Certificate) bool {
	return slices.ContainsFunc(cas, func(x *x509.Certificate) bool { return x != nil && bytes.Equal(x.Raw, c.Raw) })
}

func fingerprints(cas []*x509.Certificate) string {
	fps := make([]string, 0, len(cas))
	for _, c := range cas {
		fps = append(fps, certs.Fingerprint(c))
	}
	return strings.Join(fps, ", ")
}

// unservable: no pod could present the stored serving certificate to the
// API server successfully, whatever the CA's state.
func unservable(o Observed, v certs.Verdict) bool {
	switch v.Reason {
	case certs.ReasonMissing, certs.ReasonInvalid, certs.ReasonCAChanged, certs.ReasonNamesChanged:
		return true
	case certs.ReasonExpiring:
		cert, err := certs.ParseCert(o.Serving.CertPEM)
		return err != nil || !o.Now.Before(cert.NotAfter)
	}
	return false
}

// wakeAt is when a waiting Service must be looked at again even if no
// event comes: the earliest renewal or expiry still ahead.
func wakeAt(o Observed) time.Time {
	var at time.Time
	consider := func(cert *x509.Certificate) {
		if cert == nil {
			return
		}
		for _, t := range []time.Time{o.Policy.RenewAt(cert), cert.NotAfter} {
			if t.After(o.Now) && (at.IsZero() || t.Before(at)) {
				at = t
			}
		}
	}
	consider(certOf(o.Active))
	consider(certOf(o.Next))
	if o.Serving != nil {
		if cert, err := certs.ParseCert(o.Serving.CertPEM); err == nil {
			consider(cert)
		}
	}
	return at
}

func earliest(a, b time.Time) time.Time {
	if b.IsZero() || (!a.IsZero() && a.Before(b)) {
		return a
	}
	return b
}

// Bundle is the caBundle the CRDs and admission configurations must carry:
// every CA a serving certificate in use may chain to, oldest first, so the
// bytes do not change when Next becomes active and the set stays the same.
func Bundle(active, next *certs.CA, previous ...*x509.Certificate) []byte {
	var cas []*x509.Certificate
	for _, c := range append([]*x509.Certificate{certOf(active), certOf(next)}, previous...) {
		if c != nil {
			cas = append(cas, c)
		}
	}
	slices.SortFunc(cas, func(a, b *x509.Certificate) int {
		if c := a.NotBefore.Compare(b.NotBefore); c != 0 {
			return c
		}
		return bytes.Compare(a.Raw, b.Raw)
	})
	return certs.Bundle(cas...)
}

func certOf(ca *certs.CA) *x509.Certificate {
	if ca == nil {
		return nil
	}
	return ca.Cert
}
