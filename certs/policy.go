package certs

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"slices"
	"time"
)

// Policy says how certificates are issued and when they are renewed.
type Policy struct {
	KeyAlgorithm    KeyAlgorithm
	CALifetime      time.Duration
	ServingLifetime time.Duration
	// RenewBefore is how long before NotAfter a certificate is renewed.
	// Zero means at two thirds of its lifetime (cert-manager's default), so
	// a failed renewal leaves a third of the lifetime to notice and fix it.
	RenewBefore time.Duration
}

// The bounds of a policy that rotation can honour. The CRD's validation
// (api/v1alpha1 CertificatePolicy) enforces the same values; Validate is
// for objects stored before it did.
const (
	// MinCALifetime: a CA rotation hands trust over in several verified
	// steps; a CA living shorter would spend its life rotating.
	MinCALifetime = time.Hour
	// MinServingLifetime: a pass, a Secret write and a hot reload must fit
	// well inside a serving certificate's life.
	MinServingLifetime = 10 * time.Second
	// MinRenewBefore: the margin in which a CA rotation (publish the new
	// CA, SettleTime, verify, promote, roll out) must finish before the
	// CA expires, and a serving renewal must roll out.
	MinRenewBefore = 10 * time.Second
	// MinServingRenewalInterval is the least servingLifetime-renewBefore:
	// NotAfter has whole seconds, so a shorter interval would make a new
	// certificate due at once, and renewal would never stop.
	MinServingRenewalInterval = 5 * time.Second
	// MinCARenewalInterval is the least caLifetime-renewBefore: a new CA
	// must not be due before its rotation has finished.
	MinCARenewalInterval = 10 * time.Minute
)

// Validate reports the first bound p breaks, or nil.
func (p Policy) Validate() error {
	switch {
	case p.CALifetime < MinCALifetime:
		return fmt.Errorf("caLifetime %s is shorter than %s", p.CALifetime, MinCALifetime)
	case p.ServingLifetime < MinServingLifetime:
		return fmt.Errorf("servingLifetime %s is shorter than %s", p.ServingLifetime, MinServingLifetime)
	case p.ServingLifetime > p.CALifetime:
		return fmt.Errorf("servingLifetime %s exceeds caLifetime %s", p.ServingLifetime, p.CALifetime)
	case p.RenewBefore == 0:
		return nil
	case p.RenewBefore < MinRenewBefore:
		return fmt.Errorf("renewBefore %s is shorter than %s", p.RenewBefore, MinRenewBefore)
	case p.ServingLifetime-p.RenewBefore < MinServingRenewalInterval:
		return fmt.Errorf("renewBefore %s leaves less than %s of servingLifetime %s", p.RenewBefore, MinServingRenewalInterval, p.ServingLifetime)
	case p.CALifetime-p.RenewBefore < MinCARenewalInterval:
		return fmt.Errorf("renewBefore %s leaves less than %s of caLifetime %s", p.RenewBefore, MinCARenewalInterval, p.CALifetime)
	}
	return nil
}

// Reason says why a certificate must be (re)issued. The empty reason
// means the certificate is fine.
type Reason string

const (
	ReasonNone          Reason = ""
	ReasonMissing       Reason = "Missing"
	ReasonInvalid       Reason = "Invalid"
	ReasonExpiring      Reason = "Expiring"
	ReasonPolicyChanged Reason = "PolicyChanged"
	ReasonNamesChanged  Reason = "NamesChanged"
	ReasonCAChanged     Reason = "CAChanged"
)

// Verdict is the outcome of a check: a reason and a message an admin can
// read. Messages never contain key material.
type Verdict struct {
	Reason  Reason
	Message string
}

// OK reports whether nothing needs reissuing.
func (v Verdict) OK() bool { return v.Reason == ReasonNone }

// RenewAt is when a certificate issued under p must be renewed. It is
// derived from the certificate itself, so restarts never move it.
func (p Policy) RenewAt(cert *x509.Certificate) time.Time {
	if p.RenewBefore > 0 {
		return cert.NotAfter.Add(-p.RenewBefore)
	}
	issued := cert.NotBefore.Add(ClockSkew)
	lifetime := cert.NotAfter.Sub(issued)
	return issued.Add(lifetime - lifetime/3)
}

// CheckCA decides whether a stored CA pair (nil when absent) must be
// replaced under policy p at time now.
func (p Policy) CheckCA(pair *KeyPair, now time.Time) (*CA, Verdict) {
	if pair == nil || len(pair.CertPEM) == 0 {
		return nil, Verdict{ReasonMissing, "no CA has been issued yet"}
	}
	ca, err := LoadCA(*pair)
	if err != nil {
		return nil, Verdict{ReasonInvalid, fmt.Sprintf("stored CA is unusable: %v", err)}
	}
	if v := p.checkCommon(ca.Cert, p.CALifetime, now); !v.OK() {
		return ca, v
	}
	return ca, Verdict{}
}

// CheckServing decides whether a stored serving pair (nil when absent) must
// be reissued: missing, unparseable, key mismatch, not signed by ca, names
// differing from dnsNames, policy change, or renewal time reached.
func (p Policy) CheckServing(pair *KeyPair, ca *CA, dnsNames []string, now time.Time) Verdict {
	if pair == nil || len(pair.CertPEM) == 0 || len(pair.KeyPEM) == 0 {
		return Verdict{ReasonMissing, "no serving certificate has been issued yet"}
	}
	cert, err := ParseCert(pair.CertPEM)
	if err != nil {
		return Verdict{ReasonInvalid, fmt.Sprintf("stored serving certificate is unusable: %v", err)}
	}
	key, err := parseKey(pair.KeyPEM)
	if err != nil {
		return Verdict{ReasonInvalid, fmt.Sprintf("stored serving key is unusable: %v", err)}
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return Verdict{ReasonInvalid, "stored serving key does not match its certificate"}
	}
	if err := cert.CheckSignatureFrom(ca.Cert); err != nil || !bytes.Equal(cert.AuthorityKeyId, ca.Cert.SubjectKeyId) {
		return Verdict{ReasonCAChanged, fmt.Sprintf("serving certificate is not signed by the current CA %s", Fingerprint(ca.Cert))}
	}
	if !sameNames(cert.DNSNames, dnsNames) {
		return Verdict{ReasonNamesChanged, fmt.Sprintf("serving certificate names %v, the Service needs %v", cert.DNSNames, dnsNames)}
	}
	lifetime := p.ServingLifetime
	if capped := cert.NotAfter.Sub(ca.Cert.NotAfter); capped > -time.Minute && capped < time.Minute {
		lifetime = 0 // cut short by the CA's own expiry when issued: not a policy change
	}
	return p.checkCommon(cert, lifetime, now)
}

// checkCommon checks expiry, renewal time, key algorithm and, when
// lifetime is not zero, the issued lifetime against the policy.
func (p Policy) checkCommon(cert *x509.Certificate, lifetime time.Duration, now time.Time) Verdict {
	if !now.Before(cert.NotAfter) {
		return Verdict{ReasonExpiring, fmt.Sprintf("expired at %s", cert.NotAfter.UTC().Format(time.RFC3339))}
	}
	if at := p.RenewAt(cert); !now.Before(at) {
		return Verdict{ReasonExpiring, fmt.Sprintf("due for renewal at %s, expires %s", at.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339))}
	}
	want := p.KeyAlgorithm
	if want == "" {
		want = ECDSAP256
	}
	if got := keyAlgorithmOf(cert.PublicKey); got != want {
		return Verdict{ReasonPolicyChanged, fmt.Sprintf("key algorithm is %s, policy asks for %s", got, want)}
	}
	if lifetime > 0 {
		issued := cert.NotAfter.Sub(cert.NotBefore.Add(ClockSkew))
		if diff := issued - lifetime; diff > time.Minute || diff < -time.Minute {
			return Verdict{ReasonPolicyChanged, fmt.Sprintf("issued for %s, policy asks for %s", issued, lifetime)}
		}
	}
	return Verdict{}
}

func sameNames(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
