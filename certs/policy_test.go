package certs

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"slices"
	"strings"
	"testing"
	"time"
)

// forgeServing returns a serving pair that claims to be issued by claimed
// (its issuer name and AuthorityKeyId) but is signed with signer's key.
func forgeServing(t *testing.T, claimed, signer *CA, names []string, lifetime time.Duration, now time.Time) KeyPair {
	t.Helper()
	key, err := newKey(ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: names[0]},
		DNSNames:    names,
		NotBefore:   now.Add(-ClockSkew),
		NotAfter:    now.Add(lifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	fakeParent := &x509.Certificate{Subject: claimed.Cert.Subject, SubjectKeyId: claimed.Cert.SubjectKeyId}
	pair, err := sign(tmpl, fakeParent, key.Public(), signer.key, key)
	if err != nil {
		t.Fatalf("forging serving cert: %v", err)
	}
	if c := mustParseCert(t, pair.CertPEM); string(c.AuthorityKeyId) != string(claimed.Cert.SubjectKeyId) {
		t.Fatalf("test bug: forged AuthorityKeyId %x, want %x", c.AuthorityKeyId, claimed.Cert.SubjectKeyId)
	}
	return pair
}

// truncated cuts the end off a PEM block: unparseable, yet full of key text.
func truncated(pemBytes []byte) []byte { return pemBytes[:len(pemBytes)-30] }

func TestRenewAt(t *testing.T) {
	ca300 := newTestCA(t, ECDSAP256, 300*day, testNow)
	ca30 := newTestCA(t, ECDSAP256, 30*day, testNow)
	names := ServiceDNSNames("svc", "ns")
	serving90 := mustParseCert(t, issueTestServing(t, ca300, names, ECDSAP256, 90*day, testNow).CertPEM)
	capped := mustParseCert(t, issueTestServing(t, ca30, names, ECDSAP256, 90*day, testNow).CertPEM)
	late := testNow.Add(10 * day)
	servingLate := mustParseCert(t, issueTestServing(t, ca300, names, ECDSAP256, 3*time.Hour, late).CertPEM)

	tests := []struct {
		name        string
		renewBefore time.Duration
		cert        *x509.Certificate
		want        time.Time
	}{
		{"CA, two thirds", 0, ca300.Cert, testNow.Add(200 * day)},
		{"CA, RenewBefore", 30 * day, ca300.Cert, testNow.Add(270 * day)},
		{"serving, two thirds", 0, serving90, testNow.Add(60 * day)},
		{"serving, RenewBefore", 10 * day, serving90, testNow.Add(80 * day)},
		{"serving capped by CA, two thirds of the capped lifetime", 0, capped, testNow.Add(20 * day)},
		{"serving issued later, two thirds from issue", 0, servingLate, late.Add(2 * time.Hour)},
		{"serving issued later, RenewBefore", time.Hour, servingLate, late.Add(2 * time.Hour)},
		{"synthetic cert, two thirds counted from NotBefore+ClockSkew", 0,
			&x509.Certificate{NotBefore: testNow.Add(-ClockSkew), NotAfter: testNow.Add(3 * time.Hour)},
			testNow.Add(2 * time.Hour)},
		{"synthetic cert, RenewBefore ignores NotBefore", 90 * time.Minute,
			&x509.Certificate{NotBefore: testNow.Add(-7 * day), NotAfter: testNow.Add(3 * time.Hour)},
			testNow.Add(90 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Policy{RenewBefore: tt.renewBefore}
			if got := p.RenewAt(tt.cert); !got.Equal(tt.want) {
				t.Errorf("RenewAt = %s, want %s", got, tt.want)
			}
		})
	}
}

// checkVerdict asserts a verdict's reason and that its message is present
// exactly when something is wrong and never holds key material.
func checkVerdict(t *testing.T, v Verdict, want Reason, keyPEMs ...[]byte) {
	t.Helper()
	if v.Reason != want {
		t.Errorf("reason = %q (%s), want %q", v.Reason, v.Message, want)
	}
	if v.OK() != (want == ReasonNone) {
		t.Errorf("OK() = %v for reason %q", v.OK(), v.Reason)
	}
	if want != ReasonNone && v.Message == "" {
		t.Errorf("reason %q with an empty message", v.Reason)
	}
	assertNoKeyMaterial(t, v.Message, keyPEMs...)
}

func TestCheckCA(t *testing.T) {
	const caLife = 300 * day
	ca := newTestCA(t, ECDSAP256, caLife, testNow)
	other := newTestCA(t, ECDSAP256, caLife, testNow)
	ca384 := newTestCA(t, ECDSAP384, caLife, testNow)
	caRSA := newTestCA(t, RSA2048, caLife, testNow)
	serving := issueTestServing(t, ca, ServiceDNSNames("svc", "ns"), ECDSAP256, 90*day, testNow)
	keys := [][]byte{ca.Pair.KeyPEM, other.Pair.KeyPEM, ca384.Pair.KeyPEM, serving.KeyPEM}

	base := Policy{KeyAlgorithm: ECDSAP256, CALifetime: caLife, ServingLifetime: 90 * day}
	with := func(f func(*Policy)) Policy {
		p := base
		f(&p)
		return p
	}
	pairOf := func(c *CA) *KeyPair { p := c.Pair; return &p }

	tests := []struct {
		name   string
		policy Policy
		pair   *KeyPair
		now    time.Time
		want   Reason
	}{
		{"nil pair", base, nil, testNow, ReasonMissing},
		{"empty pair", base, &KeyPair{}, testNow, ReasonMissing},
		{"key without cert", base, &KeyPair{KeyPEM: ca.Pair.KeyPEM}, testNow, ReasonMissing},
		{"garbage cert", base, &KeyPair{CertPEM: []byte("garbage"), KeyPEM: ca.Pair.KeyPEM}, testNow, ReasonInvalid},
		{"garbage key", base, &KeyPair{CertPEM: ca.Pair.CertPEM, KeyPEM: []byte("garbage")}, testNow, ReasonInvalid},
		{"missing key", base, &KeyPair{CertPEM: ca.Pair.CertPEM}, testNow, ReasonInvalid},
		{"key of another CA", base, &KeyPair{CertPEM: ca.Pair.CertPEM, KeyPEM: other.Pair.KeyPEM}, testNow, ReasonInvalid},
		{"truncated key", base, &KeyPair{CertPEM: ca.Pair.CertPEM, KeyPEM: truncated(ca.Pair.KeyPEM)}, testNow, ReasonInvalid},
		{"serving pair is not a CA", base, &serving, testNow, ReasonInvalid},

		{"fresh", base, pairOf(ca), testNow, ReasonNone},
		{"just before renewal", base, pairOf(ca), testNow.Add(200*day - time.Second), ReasonNone},
		{"at renewal (two thirds)", base, pairOf(ca), testNow.Add(200 * day), ReasonExpiring},
		{"past renewal (two thirds)", base, pairOf(ca), testNow.Add(250 * day), ReasonExpiring},
		{"before RenewBefore", with(func(p *Policy) { p.RenewBefore = 30 * day }), pairOf(ca), testNow.Add(269 * day), ReasonNone},
		{"past RenewBefore", with(func(p *Policy) { p.RenewBefore = 30 * day }), pairOf(ca), testNow.Add(271 * day), ReasonExpiring},
		{"expired at NotAfter", base, pairOf(ca), testNow.Add(caLife), ReasonExpiring},
		{"long expired", base, pairOf(ca), testNow.Add(2 * caLife), ReasonExpiring},
		{"expired beats policy change", with(func(p *Policy) { p.KeyAlgorithm = ECDSAP384 }), pairOf(ca), testNow.Add(2 * caLife), ReasonExpiring},

		{"P-384 CA, P-256 policy", base, pairOf(ca384), testNow, ReasonPolicyChanged},
		{"P-384 CA, default policy", with(func(p *Policy) { p.KeyAlgorithm = "" }), pairOf(ca384), testNow, ReasonPolicyChanged},
		{"P-256 CA, default policy", with(func(p *Policy) { p.KeyAlgorithm = "" }), pairOf(ca), testNow, ReasonNone},
		{"P-256 CA, P-384 policy", with(func(p *Policy) { p.KeyAlgorithm = ECDSAP384 }), pairOf(ca), testNow, ReasonPolicyChanged},
		{"P-384 CA, P-384 policy", with(func(p *Policy) { p.KeyAlgorithm = ECDSAP384 }), pairOf(ca384), testNow, ReasonNone},
		{"RSA-2048 CA, P-256 policy", base, pairOf(caRSA), testNow, ReasonPolicyChanged},
		{"RSA-2048 CA, RSA-3072 policy", with(func(p *Policy) { p.KeyAlgorithm = RSA3072 }), pairOf(caRSA), testNow, ReasonPolicyChanged},

		{"lifetime longer in policy", with(func(p *Policy) { p.CALifetime = 365 * day }), pairOf(ca), testNow, ReasonPolicyChanged},
		{"lifetime shorter in policy", with(func(p *Policy) { p.CALifetime = 100 * day }), pairOf(ca), testNow, ReasonPolicyChanged},
		{"lifetime +2m", with(func(p *Policy) { p.CALifetime = caLife + 2*time.Minute }), pairOf(ca), testNow, ReasonPolicyChanged},
		{"lifetime -2m", with(func(p *Policy) { p.CALifetime = caLife - 2*time.Minute }), pairOf(ca), testNow, ReasonPolicyChanged},
		{"lifetime +30s is the same", with(func(p *Policy) { p.CALifetime = caLife + 30*time.Second }), pairOf(ca), testNow, ReasonNone},
		{"lifetime -30s is the same", with(func(p *Policy) { p.CALifetime = caLife - 30*time.Second }), pairOf(ca), testNow, ReasonNone},
		{"zero policy lifetime is not checked", with(func(p *Policy) { p.CALifetime = 0 }), pairOf(ca), testNow, ReasonNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, v := tt.policy.CheckCA(tt.pair, tt.now)
			checkVerdict(t, v, tt.want, keys...)
			switch tt.want {
			case ReasonMissing, ReasonInvalid:
				if got != nil {
					t.Errorf("CheckCA returned a CA with reason %q", tt.want)
				}
			default:
				if got == nil {
					t.Fatalf("CheckCA returned no CA with reason %q", tt.want)
				}
				if string(got.Cert.Raw) != string(mustParseCert(t, tt.pair.CertPEM).Raw) {
					t.Error("CheckCA returned a CA other than the stored one")
				}
			}
		})
	}
}

func TestCheckServing(t *testing.T) {
	const (
		caLife      = 300 * day
		servingLife = 90 * day
	)
	ca := newTestCA(t, ECDSAP256, caLife, testNow)
	other := newTestCA(t, ECDSAP256, caLife, testNow)
	shortCA := newTestCA(t, ECDSAP256, 10*day, testNow)
	names := ServiceDNSNames("svc", "ns")
	reordered := []string{names[2], names[0], names[1]}

	issue := func(c *CA, alg KeyAlgorithm, life time.Duration, now time.Time) KeyPair {
		t.Helper()
		return issueTestServing(t, c, names, alg, life, now)
	}
	fresh := issue(ca, ECDSAP256, servingLife, testNow)
	fresh2 := issue(ca, ECDSAP256, servingLife, testNow)
	fromOther := issue(other, ECDSAP256, servingLife, testNow)
	forged := forgeServing(t, ca, other, names, servingLife, testNow)
	p384 := issue(ca, ECDSAP384, servingLife, testNow)
	short := issue(ca, ECDSAP256, 30*day, testNow)
	plus30s := issue(ca, ECDSAP256, servingLife+30*time.Second, testNow)
	plus2m := issue(ca, ECDSAP256, servingLife+2*time.Minute, testNow)
	capped := issue(shortCA, ECDSAP256, servingLife, testNow)
	capped384 := issue(shortCA, ECDSAP384, servingLife, testNow)
	lateIssue := testNow.Add(250 * day) // 50 days before the CA expires
	cappedLate := issue(ca, ECDSAP256, servingLife, lateIssue)
	keys := [][]byte{ca.Pair.KeyPEM, other.Pair.KeyPEM, shortCA.Pair.KeyPEM, fresh.KeyPEM, fresh2.KeyPEM, fromOther.KeyPEM, p384.KeyPEM}

	base := Policy{KeyAlgorithm: ECDSAP256, CALifetime: caLife, ServingLifetime: servingLife}
	with := func(f func(*Policy)) Policy {
		p := base
		f(&p)
		return p
	}

	tests := []struct {
		name   string
		policy Policy
		pair   *KeyPair
		ca     *CA
		names  []string
		now    time.Time
		want   Reason
	}{
		{"nil pair", base, nil, ca, names, testNow, ReasonMissing},
		{"empty pair", base, &KeyPair{}, ca, names, testNow, ReasonMissing},
		{"cert without key", base, &KeyPair{CertPEM: fresh.CertPEM}, ca, names, testNow, ReasonMissing},
		{"key without cert", base, &KeyPair{KeyPEM: fresh.KeyPEM}, ca, names, testNow, ReasonMissing},
		{"garbage cert", base, &KeyPair{CertPEM: []byte("garbage"), KeyPEM: fresh.KeyPEM}, ca, names, testNow, ReasonInvalid},
		{"garbage key", base, &KeyPair{CertPEM: fresh.CertPEM, KeyPEM: []byte("garbage")}, ca, names, testNow, ReasonInvalid},
		{"key of another serving cert", base, &KeyPair{CertPEM: fresh.CertPEM, KeyPEM: fresh2.KeyPEM}, ca, names, testNow, ReasonInvalid},
		{"truncated key", base, &KeyPair{CertPEM: fresh.CertPEM, KeyPEM: truncated(fresh.KeyPEM)}, ca, names, testNow, ReasonInvalid},
		{"CA key with serving cert", base, &KeyPair{CertPEM: fresh.CertPEM, KeyPEM: ca.Pair.KeyPEM}, ca, names, testNow, ReasonInvalid},

		{"signed by another CA", base, &fromOther, ca, names, testNow, ReasonCAChanged},
		{"claims the CA but signed by another key", base, &forged, ca, names, testNow, ReasonCAChanged},
		{"another CA beats other names", base, &fromOther, ca, ServiceDNSNames("x", "y"), testNow, ReasonCAChanged},

		{"other service", base, &fresh, ca, ServiceDNSNames("other", "ns"), testNow, ReasonNamesChanged},
		{"fewer names wanted", base, &fresh, ca, names[:1], testNow, ReasonNamesChanged},
		{"more names wanted", base, &fresh, ca, append(slices.Clone(names), "svc.ns.svc.example"), testNow, ReasonNamesChanged},
		{"no names wanted", base, &fresh, ca, nil, testNow, ReasonNamesChanged},
		{"same names reordered", base, &fresh, ca, reordered, testNow, ReasonNone},

		{"fresh", base, &fresh, ca, names, testNow, ReasonNone},
		{"just before renewal", base, &fresh, ca, names, testNow.Add(60*day - time.Second), ReasonNone},
		{"at renewal (two thirds)", base, &fresh, ca, names, testNow.Add(60 * day), ReasonExpiring},
		{"past renewal (two thirds)", base, &fresh, ca, names, testNow.Add(80 * day), ReasonExpiring},
		{"before RenewBefore", with(func(p *Policy) { p.RenewBefore = 10 * day }), &fresh, ca, names, testNow.Add(79 * day), ReasonNone},
		{"past RenewBefore", with(func(p *Policy) { p.RenewBefore = 10 * day }), &fresh, ca, names, testNow.Add(81 * day), ReasonExpiring},
		{"expired at NotAfter", base, &fresh, ca, names, testNow.Add(servingLife), ReasonExpiring},
		{"long expired", base, &fresh, ca, names, testNow.Add(200 * day), ReasonExpiring},

		{"P-384 cert, P-256 policy", base, &p384, ca, names, testNow, ReasonPolicyChanged},
		{"P-384 cert, default policy", with(func(p *Policy) { p.KeyAlgorithm = "" }), &p384, ca, names, testNow, ReasonPolicyChanged},
		{"P-256 cert, default policy", with(func(p *Policy) { p.KeyAlgorithm = "" }), &fresh, ca, names, testNow, ReasonNone},
		{"P-256 cert, P-384 policy", with(func(p *Policy) { p.KeyAlgorithm = ECDSAP384 }), &fresh, ca, names, testNow, ReasonPolicyChanged},
		{"P-384 cert, P-384 policy", with(func(p *Policy) { p.KeyAlgorithm = ECDSAP384 }), &p384, ca, names, testNow, ReasonNone},

		{"issued shorter than policy", base, &short, ca, names, testNow, ReasonPolicyChanged},
		{"policy shorter than issued", with(func(p *Policy) { p.ServingLifetime = 30 * day }), &fresh, ca, names, testNow, ReasonPolicyChanged},
		{"lifetime +2m", base, &plus2m, ca, names, testNow, ReasonPolicyChanged},
		{"lifetime +30s is the same", base, &plus30s, ca, names, testNow, ReasonNone},
		{"zero policy lifetime is not checked", with(func(p *Policy) { p.ServingLifetime = 0 }), &short, ca, names, testNow, ReasonNone},

		{"capped by CA expiry is not a policy change", base, &capped, shortCA, names, testNow, ReasonNone},
		{"capped late in CA life is not a policy change", base, &cappedLate, ca, names, lateIssue, ReasonNone},
		{"capped, still renewed at two thirds of the capped lifetime", base, &capped, shortCA, names, testNow.Add(7 * day), ReasonExpiring},
		{"capped, algorithm still checked", base, &capped384, shortCA, names, testNow, ReasonPolicyChanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.policy.CheckServing(tt.pair, tt.ca, tt.names, tt.now)
			checkVerdict(t, v, tt.want, keys...)
		})
	}
}

// TestVerdictMessages checks that messages say what an admin needs: when a
// certificate expired or is due, which algorithms or lifetimes differ,
// which names, and which CA.
func TestVerdictMessages(t *testing.T) {
	ca := newTestCA(t, ECDSAP256, 300*day, testNow)
	other := newTestCA(t, ECDSAP256, 300*day, testNow)
	names := ServiceDNSNames("svc", "ns")
	serving := issueTestServing(t, ca, names, ECDSAP256, 90*day, testNow)
	fromOther := issueTestServing(t, other, names, ECDSAP256, 90*day, testNow)
	base := Policy{KeyAlgorithm: ECDSAP256, CALifetime: 300 * day, ServingLifetime: 90 * day}
	p384, long := base, base
	p384.KeyAlgorithm = ECDSAP384
	long.ServingLifetime = 120 * day
	stamp := func(d time.Duration) string { return testNow.Add(d).Format(time.RFC3339) }

	tests := []struct {
		name string
		v    Verdict
		want []string
	}{
		{"expired", base.CheckServing(&serving, ca, names, testNow.Add(100*day)), []string{"expired at " + stamp(90*day)}},
		{"due", base.CheckServing(&serving, ca, names, testNow.Add(70*day)), []string{"due for renewal at " + stamp(60*day), stamp(90 * day)}},
		{"algorithm", p384.CheckServing(&serving, ca, names, testNow), []string{string(ECDSAP256), string(ECDSAP384)}},
		{"lifetime", long.CheckServing(&serving, ca, names, testNow), []string{(90 * day).String(), (120 * day).String()}},
		{"names", base.CheckServing(&serving, ca, ServiceDNSNames("other", "ns"), testNow), []string{"svc.ns.svc", "other.ns.svc"}},
		{"CA", base.CheckServing(&fromOther, ca, names, testNow), []string{Fingerprint(ca.Cert)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.v.OK() {
				t.Fatalf("verdict is OK, want a failure")
			}
			for _, w := range tt.want {
				if !strings.Contains(tt.v.Message, w) {
					t.Errorf("message %q does not contain %q", tt.v.Message, w)
				}
			}
			assertNoKeyMaterial(t, tt.v.Message, ca.Pair.KeyPEM, other.Pair.KeyPEM, serving.KeyPEM, fromOther.KeyPEM)
		})
	}
}

// A serving certificate that was not cut short by its CA must be reissued
// when the policy asks for a different lifetime, even when the CA has less
// time left than the new lifetime (regression: the capped check used the
// current policy instead of the certificate's own NotAfter).
func TestCheckServingLongerLifetimeWithShortLivedCA(t *testing.T) {
	day := 24 * time.Hour
	ca, err := NewCA("ca", ECDSAP256, 300*day, testNow)
	if err != nil {
		t.Fatal(err)
	}
	names := ServiceDNSNames("svc", "ns")
	issuedAt := testNow.Add(200 * day)
	pair, err := ca.IssueServing(names, ECDSAP256, 90*day, issuedAt)
	if err != nil {
		t.Fatal(err)
	}
	for _, lifetime := range []time.Duration{95 * day, 120 * day, 150 * day} {
		policy := Policy{KeyAlgorithm: ECDSAP256, CALifetime: 300 * day, ServingLifetime: lifetime}
		if v := policy.CheckServing(&pair, ca, names, issuedAt.Add(day)); v.Reason != ReasonPolicyChanged {
			t.Errorf("policy lifetime %s: got %q (%s), want PolicyChanged", lifetime, v.Reason, v.Message)
		}
	}
	capped, err := ca.IssueServing(names, ECDSAP256, 150*day, issuedAt)
	if err != nil {
		t.Fatal(err)
	}
	policy := Policy{KeyAlgorithm: ECDSAP256, CALifetime: 300 * day, ServingLifetime: 150 * day}
	if v := policy.CheckServing(&capped, ca, names, issuedAt.Add(day)); !v.OK() {
		t.Errorf("a certificate capped at the CA's expiry is not a policy change: got %q (%s)", v.Reason, v.Message)
	}
}

func TestPolicyValidate(t *testing.T) {
	valid := Policy{CALifetime: 17520 * time.Hour, ServingLifetime: 2160 * time.Hour}
	tests := []struct {
		name   string
		mutate func(*Policy)
		want   string // substring of the error; empty: valid
	}{
		{"defaults", func(*Policy) {}, ""},
		{"smallest of everything", func(p *Policy) {
			p.CALifetime, p.ServingLifetime, p.RenewBefore = time.Hour, 15*time.Second, 10*time.Second
		}, ""},
		{"serving as long as the CA", func(p *Policy) { p.ServingLifetime = p.CALifetime }, ""},
		{"negative CA lifetime", func(p *Policy) { p.CALifetime = -time.Hour }, "caLifetime"},
		{"CA lifetime under an hour", func(p *Policy) { p.CALifetime = 59 * time.Minute }, "caLifetime"},
		{"zero serving lifetime", func(p *Policy) { p.ServingLifetime = 0 }, "servingLifetime"},
		{"serving longer than the CA", func(p *Policy) { p.ServingLifetime = p.CALifetime + time.Second }, "exceeds caLifetime"},
		{"negative renewBefore", func(p *Policy) { p.RenewBefore = -time.Hour }, "renewBefore"},
		{"renewBefore under the minimum", func(p *Policy) { p.RenewBefore = 9 * time.Second }, "renewBefore"},
		{"renewBefore equal to the serving lifetime", func(p *Policy) { p.RenewBefore = p.ServingLifetime }, "servingLifetime"},
		{"renewBefore leaves 4s of serving", func(p *Policy) {
			p.ServingLifetime, p.RenewBefore = 20*time.Second, 16*time.Second
		}, "servingLifetime"},
		{"renewBefore leaves 5s of serving", func(p *Policy) {
			p.ServingLifetime, p.RenewBefore = 20*time.Second, 15*time.Second
		}, ""},
		{"renewBefore leaves the CA 9m", func(p *Policy) {
			p.CALifetime, p.ServingLifetime, p.RenewBefore = time.Hour, time.Hour, 51*time.Minute
		}, "caLifetime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := valid
			tt.mutate(&p)
			err := p.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate() = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}
