package certs

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"
)

// testNow is the fixed clock of every test: nothing depends on wall time.
var testNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

func newTestCA(t *testing.T, alg KeyAlgorithm, lifetime time.Duration, now time.Time) *CA {
	t.Helper()
	ca, err := NewCA("test-ca", alg, lifetime, now)
	if err != nil {
		t.Fatalf("NewCA(%q, %s): %v", alg, lifetime, err)
	}
	return ca
}

func issueTestServing(t *testing.T, ca *CA, names []string, alg KeyAlgorithm, lifetime time.Duration, now time.Time) KeyPair {
	t.Helper()
	pair, err := ca.IssueServing(names, alg, lifetime, now)
	if err != nil {
		t.Fatalf("IssueServing(%v, %q, %s): %v", names, alg, lifetime, err)
	}
	return pair
}

func mustParseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	cert, err := ParseCert(certPEM)
	if err != nil {
		t.Fatalf("ParseCert: %v", err)
	}
	return cert
}

// keyLines returns the base64 body lines of a PEM key (long enough to be
// unambiguous), the text that must never appear in an error message.
func keyLines(keyPEM []byte) []string {
	var out []string
	for _, l := range strings.Split(string(keyPEM), "\n") {
		l = strings.TrimSpace(l)
		if len(l) >= 16 && !strings.HasPrefix(l, "-----") {
			out = append(out, l)
		}
	}
	return out
}

// assertNoKeyMaterial fails when msg holds a PEM key header or any base64
// line of one of keyPEMs.
func assertNoKeyMaterial(t *testing.T, msg string, keyPEMs ...[]byte) {
	t.Helper()
	if strings.Contains(msg, "PRIVATE KEY") {
		t.Errorf("message contains %q: %s", "PRIVATE KEY", msg)
	}
	assertNoKeyLines(t, msg, keyPEMs...)
}

func assertNoKeyLines(t *testing.T, msg string, keyPEMs ...[]byte) {
	t.Helper()
	if strings.Contains(msg, "-----BEGIN") {
		t.Errorf("message contains a PEM header: %s", msg)
	}
	for _, k := range keyPEMs {
		lines := keyLines(k)
		if len(lines) == 0 {
			t.Fatalf("test bug: no base64 lines in key PEM %q", k)
		}
		for _, l := range lines {
			if strings.Contains(msg, l) {
				t.Errorf("message contains key line %q: %s", l, msg)
			}
		}
	}
}

func TestNewCA(t *testing.T) {
	const lifetime = 365 * day
	for _, alg := range KeyAlgorithms {
		t.Run(string(alg), func(t *testing.T) {
			ca := newTestCA(t, alg, lifetime, testNow)
			c := ca.Cert

			if got := keyAlgorithmOf(c.PublicKey); got != alg {
				t.Errorf("key algorithm = %s, want %s", got, alg)
			}
			if !c.BasicConstraintsValid || !c.IsCA {
				t.Errorf("BasicConstraintsValid=%v IsCA=%v, want both true", c.BasicConstraintsValid, c.IsCA)
			}
			if !c.MaxPathLenZero || c.MaxPathLen != 0 {
				t.Errorf("MaxPathLen=%d MaxPathLenZero=%v, want 0/true", c.MaxPathLen, c.MaxPathLenZero)
			}
			if c.KeyUsage&x509.KeyUsageCertSign == 0 {
				t.Errorf("KeyUsage %b lacks CertSign", c.KeyUsage)
			}
			if len(c.SubjectKeyId) != 20 {
				t.Errorf("SubjectKeyId = %x, want a 20-byte SHA-1 key identifier", c.SubjectKeyId)
			}
			if want := testNow.Add(-ClockSkew); !c.NotBefore.Equal(want) {
				t.Errorf("NotBefore = %s, want %s", c.NotBefore, want)
			}
			if want := testNow.Add(lifetime); !c.NotAfter.Equal(want) {
				t.Errorf("NotAfter = %s, want %s", c.NotAfter, want)
			}
			if c.SerialNumber.Sign() <= 0 || c.SerialNumber.BitLen() > 129 {
				t.Errorf("serial %s: want positive and at most 129 bits (has %d)", c.SerialNumber, c.SerialNumber.BitLen())
			}
			if c.Subject.CommonName != "test-ca" {
				t.Errorf("CommonName = %q, want test-ca", c.Subject.CommonName)
			}
			if err := c.CheckSignatureFrom(c); err != nil {
				t.Errorf("CA is not self-signed: %v", err)
			}
			// The stored pair must load back to the same certificate.
			again, err := LoadCA(ca.Pair)
			if err != nil {
				t.Fatalf("LoadCA(own pair): %v", err)
			}
			if string(again.Cert.Raw) != string(c.Raw) {
				t.Error("LoadCA(own pair) returned a different certificate")
			}
		})
	}
}

func TestNewCADefaultAlgorithmIsP256(t *testing.T) {
	ca := newTestCA(t, "", day, testNow)
	if got := keyAlgorithmOf(ca.Cert.PublicKey); got != ECDSAP256 {
		t.Errorf("algorithm %q gave %s, want %s", "", got, ECDSAP256)
	}
}

func TestNewCASerialAndKeyIDDiffer(t *testing.T) {
	a := newTestCA(t, ECDSAP256, day, testNow)
	b := newTestCA(t, ECDSAP256, day, testNow)
	if a.Cert.SerialNumber.Cmp(b.Cert.SerialNumber) == 0 {
		t.Errorf("two CAs share serial %s", a.Cert.SerialNumber)
	}
	if string(a.Cert.SubjectKeyId) == string(b.Cert.SubjectKeyId) {
		t.Errorf("two CAs share SubjectKeyId %x", a.Cert.SubjectKeyId)
	}
}

func TestRandomSerialRange(t *testing.T) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128) // 2^128: the largest 129-bit value allowed
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		s, err := randomSerial()
		if err != nil {
			t.Fatal(err)
		}
		if s.Sign() <= 0 || s.Cmp(limit) > 0 || s.BitLen() > 129 {
			t.Fatalf("serial %s outside [1, 2^128]", s)
		}
		if seen[s.String()] {
			t.Fatalf("serial %s repeated", s)
		}
		seen[s.String()] = true
	}
}

func TestNewCAUnsupportedAlgorithm(t *testing.T) {
	for _, alg := range []KeyAlgorithm{"DSA-1024", "ecdsa-p256", "RSA-1024", "Ed25519"} {
		t.Run(string(alg), func(t *testing.T) {
			ca, err := NewCA("x", alg, day, testNow)
			if err == nil {
				t.Fatalf("NewCA(%q) = %v, want an error", alg, ca)
			}
			msg := err.Error()
			if !strings.Contains(msg, string(alg)) {
				t.Errorf("error %q does not name the bad algorithm %q", msg, alg)
			}
			for _, ok := range KeyAlgorithms {
				if !strings.Contains(msg, string(ok)) {
					t.Errorf("error %q does not name supported algorithm %s", msg, ok)
				}
			}
		})
	}
}

func TestIssueServing(t *testing.T) {
	ca := newTestCA(t, ECDSAP256, 365*day, testNow)
	const lifetime = 90 * day
	tests := []struct {
		name  string
		names []string
		alg   KeyAlgorithm
		// verifyName must verify against the CA.
		verifyName string
	}{
		{"service names", ServiceDNSNames("svc", "ns"), ECDSAP256, "svc.ns.svc"},
		{"service names reordered", []string{"svc.ns", "svc.ns.svc.cluster.local", "svc.ns.svc"}, ECDSAP256, "svc.ns.svc"},
		{"single name", []string{"svc.ns.svc"}, ECDSAP256, "svc.ns.svc"},
		{"P-384 leaf", ServiceDNSNames("svc", "ns"), ECDSAP384, "svc.ns.svc"},
		{"default algorithm", ServiceDNSNames("svc", "ns"), "", "svc.ns.svc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.names)
			pair := issueTestServing(t, ca, in, tt.alg, lifetime, testNow)
			c := mustParseCert(t, pair.CertPEM)

			if !slices.Equal(c.DNSNames, tt.names) {
				t.Errorf("DNSNames = %v, want %v", c.DNSNames, tt.names)
			}
			if !slices.Equal(in, tt.names) {
				t.Errorf("IssueServing modified its input: %v", in)
			}
			if c.Subject.CommonName != tt.names[0] {
				t.Errorf("CommonName = %q, want %q", c.Subject.CommonName, tt.names[0])
			}
			if !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
				t.Errorf("ExtKeyUsage = %v, want [ServerAuth]", c.ExtKeyUsage)
			}
			if c.IsCA {
				t.Error("serving certificate is a CA")
			}
			if len(c.AuthorityKeyId) == 0 || string(c.AuthorityKeyId) != string(ca.Cert.SubjectKeyId) {
				t.Errorf("AuthorityKeyId = %x, want CA SubjectKeyId %x", c.AuthorityKeyId, ca.Cert.SubjectKeyId)
			}
			want := tt.alg
			if want == "" {
				want = ECDSAP256
			}
			if got := keyAlgorithmOf(c.PublicKey); got != want {
				t.Errorf("key algorithm = %s, want %s", got, want)
			}
			if w := testNow.Add(-ClockSkew); !c.NotBefore.Equal(w) {
				t.Errorf("NotBefore = %s, want %s", c.NotBefore, w)
			}
			if w := testNow.Add(lifetime); !c.NotAfter.Equal(w) {
				t.Errorf("NotAfter = %s, want %s", c.NotAfter, w)
			}
			if c.SerialNumber.Sign() <= 0 || c.SerialNumber.BitLen() > 129 {
				t.Errorf("serial %s: want positive and at most 129 bits", c.SerialNumber)
			}
			key, err := parseKey(pair.KeyPEM)
			if err != nil {
				t.Fatalf("serving key: %v", err)
			}
			if !publicKeysEqual(c.PublicKey, key.Public()) {
				t.Error("serving key does not match its certificate")
			}
			roots := x509.NewCertPool()
			roots.AddCert(ca.Cert)
			if _, err := c.Verify(x509.VerifyOptions{
				DNSName:     tt.verifyName,
				Roots:       roots,
				CurrentTime: testNow,
				KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			}); err != nil {
				t.Errorf("Verify(%q): %v", tt.verifyName, err)
			}
		})
	}
}

func TestIssueServingSerialsDiffer(t *testing.T) {
	ca := newTestCA(t, ECDSAP256, 365*day, testNow)
	names := ServiceDNSNames("svc", "ns")
	a := mustParseCert(t, issueTestServing(t, ca, names, ECDSAP256, day, testNow).CertPEM)
	b := mustParseCert(t, issueTestServing(t, ca, names, ECDSAP256, day, testNow).CertPEM)
	if a.SerialNumber.Cmp(b.SerialNumber) == 0 {
		t.Errorf("two serving certificates share serial %s", a.SerialNumber)
	}
	if a.SerialNumber.Cmp(ca.Cert.SerialNumber) == 0 {
		t.Errorf("serving certificate shares the CA serial %s", a.SerialNumber)
	}
}

func TestIssueServingNotAfter(t *testing.T) {
	caLifetime := 30 * day
	ca := newTestCA(t, ECDSAP256, caLifetime, testNow)
	tests := []struct {
		name         string
		lifetime     time.Duration
		now          time.Time
		wantNotAfter time.Time
	}{
		{"inside CA lifetime", 10 * day, testNow, testNow.Add(10 * day)},
		{"ends exactly with CA", caLifetime, testNow, ca.Cert.NotAfter},
		{"outlives CA: capped", 90 * day, testNow, ca.Cert.NotAfter},
		{"issued late in CA life: capped", 10 * day, testNow.Add(25 * day), ca.Cert.NotAfter},
		{"issued late in CA life: fits", 2 * day, testNow.Add(25 * day), testNow.Add(27 * day)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pair := issueTestServing(t, ca, ServiceDNSNames("svc", "ns"), ECDSAP256, tt.lifetime, tt.now)
			c := mustParseCert(t, pair.CertPEM)
			if !c.NotAfter.Equal(tt.wantNotAfter) {
				t.Errorf("NotAfter = %s, want %s", c.NotAfter, tt.wantNotAfter)
			}
			if c.NotAfter.After(ca.Cert.NotAfter) {
				t.Errorf("serving NotAfter %s outlives CA NotAfter %s", c.NotAfter, ca.Cert.NotAfter)
			}
			if w := tt.now.Add(-ClockSkew); !c.NotBefore.Equal(w) {
				t.Errorf("NotBefore = %s, want %s", c.NotBefore, w)
			}
		})
	}
}

func TestIssueServingErrors(t *testing.T) {
	ca := newTestCA(t, ECDSAP256, day, testNow)
	tests := []struct {
		name  string
		names []string
		alg   KeyAlgorithm
	}{
		{"nil names", nil, ECDSAP256},
		{"empty names", []string{}, ECDSAP256},
		{"unsupported algorithm", []string{"svc.ns.svc"}, "DSA-1024"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pair, err := ca.IssueServing(tt.names, tt.alg, day, testNow)
			if err == nil {
				t.Fatal("IssueServing succeeded, want an error")
			}
			if len(pair.CertPEM) != 0 || len(pair.KeyPEM) != 0 {
				t.Errorf("IssueServing returned a pair alongside error %v", err)
			}
			assertNoKeyMaterial(t, err.Error(), ca.Pair.KeyPEM)
		})
	}
}

func TestServiceDNSNames(t *testing.T) {
	got := ServiceDNSNames("svc", "ns")
	want := []string{"svc.ns.svc", "svc.ns", "svc.ns.svc.cluster.local"}
	if !slices.Equal(got, want) {
		t.Errorf("ServiceDNSNames(svc, ns) = %v, want %v", got, want)
	}
}

func TestLoadCA(t *testing.T) {
	ca := newTestCA(t, ECDSAP256, day, testNow)
	other := newTestCA(t, ECDSAP256, day, testNow)
	serving := issueTestServing(t, ca, ServiceDNSNames("svc", "ns"), ECDSAP256, day, testNow)

	// The CA key as SEC1 ("EC PRIVATE KEY"), a form parseKey also accepts.
	signer, err := parseKey(ca.Pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	sec1, err := x509.MarshalECPrivateKey(signer.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	sec1PEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1})
	keyDER, _ := pem.Decode(ca.Pair.KeyPEM)
	// Key material disguised as a certificate or missing its footer.
	keyAsCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: keyDER.Bytes})
	truncatedKey := ca.Pair.KeyPEM[:len(ca.Pair.KeyPEM)-30]
	junkCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not a certificate")})

	tests := []struct {
		name    string
		pair    KeyPair
		wantErr bool
	}{
		{name: "valid CA", pair: ca.Pair},
		{name: "SEC1 key", pair: KeyPair{CertPEM: ca.Pair.CertPEM, KeyPEM: sec1PEM}},
		{name: "serving pair is not a CA", pair: serving, wantErr: true},
		{name: "key of another CA", pair: KeyPair{CertPEM: ca.Pair.CertPEM, KeyPEM: other.Pair.KeyPEM}, wantErr: true},
		{name: "serving key with CA cert", pair: KeyPair{CertPEM: ca.Pair.CertPEM, KeyPEM: serving.KeyPEM}, wantErr: true},
		{name: "garbage cert and key", pair: KeyPair{CertPEM: []byte("garbage"), KeyPEM: []byte("garbage")}, wantErr: true},
		{name: "garbage key", pair: KeyPair{CertPEM: ca.Pair.CertPEM, KeyPEM: []byte("garbage")}, wantErr: true},
		{name: "garbage cert", pair: KeyPair{CertPEM: []byte("garbage"), KeyPEM: ca.Pair.KeyPEM}, wantErr: true},
		{name: "junk CERTIFICATE block", pair: KeyPair{CertPEM: junkCert, KeyPEM: ca.Pair.KeyPEM}, wantErr: true},
		{name: "key DER in a CERTIFICATE block", pair: KeyPair{CertPEM: keyAsCert, KeyPEM: ca.Pair.KeyPEM}, wantErr: true},
		{name: "truncated key", pair: KeyPair{CertPEM: ca.Pair.CertPEM, KeyPEM: truncatedKey}, wantErr: true},
		{name: "empty key", pair: KeyPair{CertPEM: ca.Pair.CertPEM}, wantErr: true},
		{name: "empty pair", pair: KeyPair{}, wantErr: true},
		{name: "cert and key swapped", pair: KeyPair{CertPEM: ca.Pair.KeyPEM, KeyPEM: ca.Pair.CertPEM}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadCA(tt.pair)
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("LoadCA: %v", err)
				}
				if string(got.Cert.Raw) != string(ca.Cert.Raw) {
					t.Error("LoadCA returned another certificate")
				}
				return
			}
			if err == nil {
				t.Fatalf("LoadCA succeeded (%v), want an error", got.Cert.Subject)
			}
			if got != nil {
				t.Errorf("LoadCA returned a CA alongside error %v", err)
			}
			if err.Error() == "" {
				t.Error("empty error message")
			}
			keys := [][]byte{ca.Pair.KeyPEM, other.Pair.KeyPEM, serving.KeyPEM}
			assertNoKeyMaterial(t, err.Error(), keys...)
		})
	}
}
