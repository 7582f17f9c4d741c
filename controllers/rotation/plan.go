// Package rotation decides, as a pure function of what is stored in the
// cluster, the next step of a webhook Service's certificate lifecycle.
// Every input is read from Secrets, CRDs and the Deployment, never kept in
// memory, so an operator restarted at any step resumes where it stopped.
//
// A CA rotation is ordered so that no conversion fails:
//
//  1. StartCARotation: a new CA is stored as "next".
//  2. The CRDs' caBundle becomes [active, next] (the conversion step derives
//     the bundle from the CA Secret).
//  3. Promote, once every CRD has trusted next for SettleTime and the API
//     server still converts: serving certificates are issued from next,
//     which becomes active; the old CA becomes "previous" until PruneAt.
//  4. The webhook Deployment rolls to the new certificate; old pods keep
//     serving the old one, still trusted through previous.
//  5. Prune, once the rollout is done, PruneAt passed and the API server
//     converts: previous leaves the Secret and so the caBundle.
package rotation

import (
	"bytes"
	"crypto/x509"
	"slices"
	"time"

	"github.com/hookwright/hookwright/certs"
)

// SettleTime is how long a newly published caBundle must have been on
// every CRD before anything relies on it: the API server loads CRD changes
// asynchronously.
const SettleTime = 2 * time.Second

// Observed is the state of one webhook Service, as stored in the cluster.
type Observed struct {
	Now      time.Time
	Policy   certs.Policy
	Overlap  time.Duration
	DNSNames []string

	Active   *certs.CA         // the CA that signs serving certificates; nil if missing or unusable
	ActiveOK certs.Verdict     // why Active is nil or must be replaced
	Next     *certs.CA         // CA being introduced
	Previous *x509.Certificate // CA being retired
	PruneAt  time.Time         // when Previous may leave the bundle

	Serving *certs.KeyPair // the serving pair; nil if missing

	// NextTrustedFor is how long every CRD of the Service has had Next in
	// its caBundle; zero when some CRD does not have it yet.
	NextTrustedFor time.Duration
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
	Promote         ActionKind = "Promote"         // verify, then make Next active and reissue serving from it
	Prune           ActionKind = "Prune"           // verify, then drop Previous
)

// Action is the planner's decision.
type Action struct {
	Kind    ActionKind
	Reason  string // a certs.Reason, "Manual" or "Initial"
	Message string
	DueAt   time.Time // for Nothing and Wait: when a timer must fire (zero: wait for an event)
}

// ReasonManual and ReasonInitial complete certs' reasons for the audit trail.
const (
	ReasonManual  = "Manual"
	ReasonInitial = "Initial"
)

// Plan returns the next action for one Service.
func Plan(o Observed) Action {
	if o.Active == nil {
		reason, message := string(o.ActiveOK.Reason), o.ActiveOK.Message
		if o.Serving == nil && o.ActiveOK.Reason == certs.ReasonMissing {
			reason, message = ReasonInitial, "first certificates of the service"
		}
		return Action{Kind: IssueInitial, Reason: reason, Message: message}
	}
	if o.Next != nil {
		if o.NextTrustedFor == 0 {
			return Action{Kind: Wait, Message: "publishing the new CA in every CRD's caBundle"}
		}
		if o.NextTrustedFor < SettleTime {
			return Action{Kind: Wait, Message: "letting the API server load the new caBundle", DueAt: o.Now.Add(SettleTime - o.NextTrustedFor)}
		}
		return Action{Kind: Promote, Message: "the API server trusts the new CA: moving serving certificates to it"}
	}
	if v := o.Policy.CheckServing(o.Serving, o.Active, o.DNSNames, o.Now); !v.OK() {
		return Action{Kind: IssueServing, Reason: string(v.Reason), Message: v.Message}
	}
	if o.Previous != nil {
		switch {
		case !o.RolledOut:
			return Action{Kind: Wait, Message: "waiting for the webhook pods to serve the new certificate"}
		case o.Now.Before(o.PruneAt):
			return Action{Kind: Wait, Message: "keeping the old CA trusted for the overlap period", DueAt: o.PruneAt}
		}
		return Action{Kind: Prune, Message: "the new CA serves and the overlap has passed: removing the old CA"}
	}
	if o.ManualServing != "" {
		return Action{Kind: IssueServing, Reason: ReasonManual, Message: o.ManualServing}
	}
	if _, v := o.Policy.CheckCA(&o.Active.Pair, o.Now); !v.OK() {
		return Action{Kind: StartCARotation, Reason: string(v.Reason), Message: v.Message}
	}
	if o.ManualCA != "" {
		return Action{Kind: StartCARotation, Reason: ReasonManual, Message: o.ManualCA}
	}
	due := o.Policy.RenewAt(o.Active.Cert)
	if serving, err := certs.ParseCert(o.Serving.CertPEM); err == nil {
		if at := o.Policy.RenewAt(serving); at.Before(due) {
			due = at
		}
	}
	return Action{Kind: Nothing, DueAt: due}
}

// Bundle is the caBundle the CRDs must carry: every CA a serving
// certificate in use may chain to, oldest first, so the bytes do not
// change when Next becomes active and the set stays the same.
func Bundle(active, next *certs.CA, previous *x509.Certificate) []byte {
	var cas []*x509.Certificate
	for _, c := range []*x509.Certificate{previous, certOf(active), certOf(next)} {
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
