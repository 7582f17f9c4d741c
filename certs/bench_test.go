package certs

import (
	"testing"
	"time"
)

// benchAlgorithms are the key algorithms whose issuance cost `make bench`
// reports (RSA-3072 is supported but not part of the published table).
var benchAlgorithms = []KeyAlgorithm{ECDSAP256, ECDSAP384, RSA2048}

// BenchmarkIssueCA measures issuing a self-signed CA: key generation,
// signing and PEM encoding, as on first install and on a CA rotation.
func BenchmarkIssueCA(b *testing.B) {
	now := time.Now()
	for _, alg := range benchAlgorithms {
		b.Run(string(alg), func(b *testing.B) {
			for b.Loop() {
				if _, err := NewCA("bench-ca", alg, 24*time.Hour, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkIssueServing measures issuing a serving certificate from a CA of
// the same algorithm, as on every serving renewal.
func BenchmarkIssueServing(b *testing.B) {
	now := time.Now()
	names := ServiceDNSNames("webhook-service", "bench")
	for _, alg := range benchAlgorithms {
		b.Run(string(alg), func(b *testing.B) {
			ca, err := NewCA("bench-ca", alg, 24*time.Hour, now)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := ca.IssueServing(names, alg, time.Hour, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
