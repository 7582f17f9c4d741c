package certs

import (
	"crypto"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // SubjectKeyId is an identifier (SHA-1 of the SubjectPublicKeyInfo), not a security use.
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"
)

// ClockSkew is how far NotBefore is backdated, so that an API server whose
// clock is a little behind ours still accepts a certificate issued just now.
const ClockSkew = 5 * time.Minute

// KeyPair is a PEM certificate and its PEM private key, as stored in a Secret.
type KeyPair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// CA is a parsed certificate authority able to sign serving certificates.
type CA struct {
	Cert *x509.Certificate
	key  crypto.Signer
	Pair KeyPair
}

// NewCA issues a self-signed CA valid from now-ClockSkew to now+lifetime.
func NewCA(commonName string, alg KeyAlgorithm, lifetime time.Duration, now time.Time) (*CA, error) {
	key, err := newKey(alg)
	if err != nil {
		return nil, err
	}
	ski, err := subjectKeyID(key.Public())
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"hookwright"}},
		NotBefore:             now.Add(-ClockSkew),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		SubjectKeyId:          ski,
	}
	pair, err := sign(tmpl, tmpl, key.Public(), key, key)
	if err != nil {
		return nil, fmt.Errorf("issuing CA %q: %w", commonName, err)
	}
	return LoadCA(pair)
}

// LoadCA parses a stored CA pair and checks that the key belongs to the
// certificate and that the certificate is a CA.
func LoadCA(pair KeyPair) (*CA, error) {
	cert, err := ParseCert(pair.CertPEM)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("CA certificate %q is not a CA (basicConstraints CA:FALSE)", cert.Subject.CommonName)
	}
	key, err := parseKey(pair.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("CA key does not match CA certificate %q", cert.Subject.CommonName)
	}
	return &CA{Cert: cert, key: key, Pair: pair}, nil
}

// IssueServing issues a TLS server certificate for dnsNames, signed by ca.
// Its NotAfter never exceeds the CA's: a leaf outliving its issuer would
// fail verification before its own renewal time.
func (ca *CA) IssueServing(dnsNames []string, alg KeyAlgorithm, lifetime time.Duration, now time.Time) (KeyPair, error) {
	if len(dnsNames) == 0 {
		return KeyPair{}, fmt.Errorf("a serving certificate needs at least one DNS name")
	}
	key, err := newKey(alg)
	if err != nil {
		return KeyPair{}, err
	}
	ski, err := subjectKeyID(key.Public())
	if err != nil {
		return KeyPair{}, err
	}
	notAfter := now.Add(lifetime)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		Subject:        pkix.Name{CommonName: dnsNames[0]},
		DNSNames:       dnsNames,
		NotBefore:      now.Add(-ClockSkew),
		NotAfter:       notAfter,
		KeyUsage:       x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:    []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		SubjectKeyId:   ski,
		AuthorityKeyId: ca.Cert.SubjectKeyId,
	}
	pair, err := sign(tmpl, ca.Cert, key.Public(), ca.key, key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("issuing serving certificate for %s: %w", dnsNames[0], err)
	}
	return pair, nil
}

// ServiceDNSNames are the names the API server may use for a Service:
// it verifies <svc>.<ns>.svc; the others cover in-cluster clients.
func ServiceDNSNames(service, namespace string) []string {
	return []string{
		service + "." + namespace + ".svc",
		service + "." + namespace,
		service + "." + namespace + ".svc.cluster.local",
	}
}

func sign(tmpl, parent *x509.Certificate, pub crypto.PublicKey, signer, key crypto.Signer) (KeyPair, error) {
	serial, err := randomSerial()
	if err != nil {
		return KeyPair{}, err
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return KeyPair{}, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), KeyPEM: keyPEM}, nil
}

// randomSerial returns a positive 128-bit serial (RFC 5280 allows 20 octets);
// cert-controller's fixed serials 0 and 1 make issued certs indistinguishable.
func randomSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating serial: %w", err)
	}
	return serial.Add(serial, big.NewInt(1)), nil
}

func subjectKeyID(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encoding public key: %w", err)
	}
	sum := sha1.Sum(der) //nolint:gosec // identifier, not a security use.
	return sum[:], nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	e, ok := a.(equaler)
	return ok && e.Equal(b)
}
