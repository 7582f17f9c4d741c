package certs

import (
	"bytes"
	"crypto/x509"
	"time"
)

// Bundle encodes CA certificates as a PEM trust bundle, in order, without
// duplicates. Order matters only for readability: the API server trusts all.
func Bundle(cas ...*x509.Certificate) []byte {
	var buf bytes.Buffer
	seen := map[string]bool{}
	for _, c := range cas {
		if c == nil || seen[string(c.Raw)] {
			continue
		}
		seen[string(c.Raw)] = true
		buf.Write(EncodeCert(c))
	}
	return buf.Bytes()
}

// BundleContains reports whether a PEM bundle holds cert.
func BundleContains(bundlePEM []byte, cert *x509.Certificate) bool {
	cas, err := ParseCerts(bundlePEM)
	if err != nil {
		return false
	}
	for _, c := range cas {
		if bytes.Equal(c.Raw, cert.Raw) {
			return true
		}
	}
	return false
}

// VerifyServing checks a serving chain against a trust bundle for dnsName
// at time now, as the API server's TLS client does.
func VerifyServing(servingPEM, bundlePEM []byte, dnsName string, now time.Time) error {
	leaf, err := ParseCert(servingPEM)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundlePEM) {
		return errNoCertInBundle
	}
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: dnsName, Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

var errNoCertInBundle = errorString("trust bundle holds no certificate")

type errorString string

func (e errorString) Error() string { return string(e) }
