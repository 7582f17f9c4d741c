package certs

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
)

// ParseCert parses the first CERTIFICATE block of certPEM.
func ParseCert(certPEM []byte) (*x509.Certificate, error) {
	certs, err := ParseCerts(certPEM)
	if err != nil {
		return nil, err
	}
	return certs[0], nil
}

// ParseCerts parses every CERTIFICATE block of a PEM bundle, in order.
// Non-certificate blocks are an error: a private key in a bundle is a leak.
func ParseCerts(bundlePEM []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	rest := bundlePEM
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			// The block type is not named: it may be a key's, and key labels
			// in error messages look like leaks to log scanners.
			return nil, fmt.Errorf("certificate bundle holds a PEM block that is not a certificate (block %d)", len(out)+1)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parsing certificate %d: %w", len(out)+1, err)
		}
		out = append(out, cert)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return out, nil
}

// EncodeCert returns cert as one PEM block.
func EncodeCert(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

// Fingerprint is the SHA-256 of a certificate's DER, as lowercase hex with
// colons (the form `openssl x509 -fingerprint -sha256` prints, lowercased).
func Fingerprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.Raw)
	h := hex.EncodeToString(sum[:])
	parts := make([]string, 0, len(sum))
	for i := 0; i < len(h); i += 2 {
		parts = append(parts, h[i:i+2])
	}
	return strings.Join(parts, ":")
}
