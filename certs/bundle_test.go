package certs

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"regexp"
	"strings"
	"testing"
	"time"
)

var fingerprintRE = regexp.MustCompile(`^[0-9a-f]{2}(:[0-9a-f]{2}){31}$`)

func TestFingerprint(t *testing.T) {
	a := newTestCA(t, ECDSAP256, day, testNow)
	b := newTestCA(t, ECDSAP256, day, testNow)

	fa := Fingerprint(a.Cert)
	if len(fa) != 95 {
		t.Errorf("len(Fingerprint) = %d, want 95: %q", len(fa), fa)
	}
	if !fingerprintRE.MatchString(fa) {
		t.Errorf("Fingerprint %q is not 32 lowercase hex pairs joined by ':'", fa)
	}
	sum := sha256.Sum256(a.Cert.Raw)
	if got, want := strings.ReplaceAll(fa, ":", ""), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("Fingerprint without colons = %s, want SHA-256 of DER %s", got, want)
	}
	// Same certificate parsed again (another *x509.Certificate): same value.
	if again := Fingerprint(mustParseCert(t, a.Pair.CertPEM)); again != fa {
		t.Errorf("Fingerprint of the re-parsed cert = %s, want %s", again, fa)
	}
	if fb := Fingerprint(b.Cert); fb == fa {
		t.Errorf("two different CAs share fingerprint %s", fa)
	}
}

func TestParseCerts(t *testing.T) {
	ca := newTestCA(t, ECDSAP256, day, testNow)
	other := newTestCA(t, ECDSAP256, day, testNow)
	serving := issueTestServing(t, ca, ServiceDNSNames("svc", "ns"), ECDSAP256, day, testNow)
	leaf := mustParseCert(t, serving.CertPEM)

	t.Run("three certs in order", func(t *testing.T) {
		bundle := bytes.Join([][]byte{other.Pair.CertPEM, serving.CertPEM, ca.Pair.CertPEM}, nil)
		got, err := ParseCerts(bundle)
		if err != nil {
			t.Fatalf("ParseCerts: %v", err)
		}
		want := []*x509.Certificate{other.Cert, leaf, ca.Cert}
		if len(got) != len(want) {
			t.Fatalf("got %d certs, want %d", len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i].Raw, want[i].Raw) {
				t.Errorf("cert %d is %q, want %q", i, got[i].Subject.CommonName, want[i].Subject.CommonName)
			}
		}
		first, err := ParseCert(bundle)
		if err != nil || !bytes.Equal(first.Raw, other.Cert.Raw) {
			t.Errorf("ParseCert(bundle) = %v, %v; want the first cert", first, err)
		}
	})

	t.Run("text around blocks is ignored", func(t *testing.T) {
		bundle := append([]byte("# trust bundle\n"), ca.Pair.CertPEM...)
		bundle = append(bundle, "\ntrailing\n"...)
		got, err := ParseCerts(bundle)
		if err != nil || len(got) != 1 || !bytes.Equal(got[0].Raw, ca.Cert.Raw) {
			t.Errorf("ParseCerts = %d certs, %v; want the CA", len(got), err)
		}
	})

	junk := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")})
	errTests := []struct {
		name  string
		input []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"not PEM", []byte("garbage")},
		{"private key after a cert", bytes.Join([][]byte{ca.Pair.CertPEM, ca.Pair.KeyPEM}, nil)},
		{"private key before a cert", bytes.Join([][]byte{serving.KeyPEM, ca.Pair.CertPEM}, nil)},
		{"private key alone", ca.Pair.KeyPEM},
		{"junk CERTIFICATE block", bytes.Join([][]byte{ca.Pair.CertPEM, junk}, nil)},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCerts(tt.input)
			if err == nil {
				t.Fatalf("ParseCerts returned %d certs, want an error", len(got))
			}
			if got != nil {
				t.Errorf("ParseCerts returned %d certs alongside error %v", len(got), err)
			}
			// The block type may be named; the key itself never.
			assertNoKeyLines(t, err.Error(), ca.Pair.KeyPEM, serving.KeyPEM)
		})
	}
}

func TestBundle(t *testing.T) {
	a := newTestCA(t, ECDSAP256, day, testNow)
	b := newTestCA(t, ECDSAP256, day, testNow)
	c := newTestCA(t, ECDSAP256, day, testNow)
	aAgain := mustParseCert(t, a.Pair.CertPEM) // same cert, another pointer

	tests := []struct {
		name string
		in   []*x509.Certificate
		want []*x509.Certificate
	}{
		{"order kept", []*x509.Certificate{c.Cert, a.Cert, b.Cert}, []*x509.Certificate{c.Cert, a.Cert, b.Cert}},
		{"duplicates dropped, first kept", []*x509.Certificate{a.Cert, b.Cert, a.Cert, c.Cert, b.Cert}, []*x509.Certificate{a.Cert, b.Cert, c.Cert}},
		{"duplicate by content", []*x509.Certificate{b.Cert, a.Cert, aAgain}, []*x509.Certificate{b.Cert, a.Cert}},
		{"nil skipped", []*x509.Certificate{nil, a.Cert, nil}, []*x509.Certificate{a.Cert}},
		{"one", []*x509.Certificate{a.Cert}, []*x509.Certificate{a.Cert}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Bundle(tt.in...)
			got, err := ParseCerts(out)
			if err != nil {
				t.Fatalf("ParseCerts(Bundle): %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("bundle holds %d certs, want %d", len(got), len(tt.want))
			}
			for i := range tt.want {
				if !bytes.Equal(got[i].Raw, tt.want[i].Raw) {
					t.Errorf("cert %d differs from the expected one", i)
				}
			}
			var wantPEM []byte
			for _, w := range tt.want {
				wantPEM = append(wantPEM, EncodeCert(w)...)
			}
			if !bytes.Equal(out, wantPEM) {
				t.Errorf("Bundle =\n%s\nwant\n%s", out, wantPEM)
			}
		})
	}

	for _, in := range [][]*x509.Certificate{nil, {nil}} {
		if out := Bundle(in...); len(out) != 0 {
			t.Errorf("Bundle(%v) = %q, want empty", in, out)
		}
	}
}

func TestBundleContains(t *testing.T) {
	a := newTestCA(t, ECDSAP256, day, testNow)
	b := newTestCA(t, ECDSAP256, day, testNow)
	c := newTestCA(t, ECDSAP256, day, testNow)
	ab := Bundle(a.Cert, b.Cert)

	tests := []struct {
		name   string
		bundle []byte
		cert   *x509.Certificate
		want   bool
	}{
		{"first", ab, a.Cert, true},
		{"second", ab, b.Cert, true},
		{"re-parsed copy", ab, mustParseCert(t, b.Pair.CertPEM), true},
		{"absent", ab, c.Cert, false},
		{"empty bundle", nil, a.Cert, false},
		{"garbage bundle", []byte("garbage"), a.Cert, false},
		{"bundle with a key", append(Bundle(a.Cert), a.Pair.KeyPEM...), a.Cert, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BundleContains(tt.bundle, tt.cert); got != tt.want {
				t.Errorf("BundleContains = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestVerifyServing(t *testing.T) {
	oldCA := newTestCA(t, ECDSAP256, 300*day, testNow)
	newCA := newTestCA(t, ECDSAP256, 300*day, testNow)
	names := ServiceDNSNames("svc", "ns")
	fromOld := issueTestServing(t, oldCA, names, ECDSAP256, 90*day, testNow)
	fromNew := issueTestServing(t, newCA, names, ECDSAP256, 90*day, testNow)
	later := testNow.Add(time.Hour)

	tests := []struct {
		name    string
		serving []byte
		bundle  []byte
		dnsName string
		now     time.Time
		wantErr bool
	}{
		{"right CA", fromOld.CertPEM, Bundle(oldCA.Cert), "svc.ns.svc", later, false},
		{"right CA, short name", fromOld.CertPEM, Bundle(oldCA.Cert), "svc.ns", later, false},
		{"right CA, cluster.local name", fromOld.CertPEM, Bundle(oldCA.Cert), "svc.ns.svc.cluster.local", later, false},
		{"right CA, within clock skew", fromOld.CertPEM, Bundle(oldCA.Cert), "svc.ns.svc", testNow.Add(-ClockSkew / 2), false},
		{"another CA's bundle", fromOld.CertPEM, Bundle(newCA.Cert), "svc.ns.svc", later, true},
		{"wrong DNS name", fromOld.CertPEM, Bundle(oldCA.Cert), "other.ns.svc", later, true},
		{"after NotAfter", fromOld.CertPEM, Bundle(oldCA.Cert), "svc.ns.svc", testNow.Add(90*day + time.Second), true},
		{"before NotBefore", fromOld.CertPEM, Bundle(oldCA.Cert), "svc.ns.svc", testNow.Add(-ClockSkew - time.Second), true},
		{"[old, new] verifies old", fromOld.CertPEM, Bundle(oldCA.Cert, newCA.Cert), "svc.ns.svc", later, false},
		{"[old, new] verifies new", fromNew.CertPEM, Bundle(oldCA.Cert, newCA.Cert), "svc.ns.svc", later, false},
		{"[new] rejects old", fromOld.CertPEM, Bundle(newCA.Cert), "svc.ns.svc", later, true},
		{"empty bundle", fromOld.CertPEM, nil, "svc.ns.svc", later, true},
		{"garbage bundle", fromOld.CertPEM, []byte("garbage"), "svc.ns.svc", later, true},
		{"garbage serving cert", []byte("garbage"), Bundle(oldCA.Cert), "svc.ns.svc", later, true},
		{"CA is not a serving cert", oldCA.Pair.CertPEM, Bundle(oldCA.Cert), "svc.ns.svc", later, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyServing(tt.serving, tt.bundle, tt.dnsName, tt.now)
			if (err != nil) != tt.wantErr {
				t.Errorf("VerifyServing error = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}
