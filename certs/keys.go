package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// KeyAlgorithm names the private-key algorithm of an issued certificate.
type KeyAlgorithm string

const (
	// ECDSAP256 is the default: small keys, fast handshakes, accepted everywhere.
	ECDSAP256 KeyAlgorithm = "ECDSA-P256"
	ECDSAP384 KeyAlgorithm = "ECDSA-P384"
	RSA2048   KeyAlgorithm = "RSA-2048"
	RSA3072   KeyAlgorithm = "RSA-3072"
)

// KeyAlgorithms lists every supported algorithm, for validation and docs.
var KeyAlgorithms = []KeyAlgorithm{ECDSAP256, ECDSAP384, RSA2048, RSA3072}

func newKey(alg KeyAlgorithm) (crypto.Signer, error) {
	switch alg {
	case ECDSAP256, "":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case ECDSAP384:
		return ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case RSA2048:
		return rsa.GenerateKey(rand.Reader, 2048)
	case RSA3072:
		return rsa.GenerateKey(rand.Reader, 3072)
	default:
		return nil, fmt.Errorf("unsupported key algorithm %q: use one of %v", alg, KeyAlgorithms)
	}
}

// keyAlgorithmOf reports the algorithm of a public key, so a certificate can
// be checked against the policy it was supposedly issued under.
func keyAlgorithmOf(pub crypto.PublicKey) KeyAlgorithm {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return ECDSAP256
		case elliptic.P384():
			return ECDSAP384
		}
	case *rsa.PublicKey:
		switch k.N.BitLen() {
		case 2048:
			return RSA2048
		case 3072:
			return RSA3072
		}
	}
	return "unknown"
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// errBadKey never includes the key bytes: secrets stay out of error messages.
var errBadKey = errors.New("private key is not a PEM-encoded PKCS#8, PKCS#1 or SEC1 key")

func parseKey(keyPEM []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errBadKey
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, errBadKey
}
