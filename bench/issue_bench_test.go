package bench_test

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
)

// BenchmarkIssueCertController is the anchor for certs' BenchmarkIssueCA
// and BenchmarkIssueServing: cert-controller v0.16.0 always issues RSA-2048.
func BenchmarkIssueCertController(b *testing.B) {
	cr := &rotator.CertRotator{
		CAName: "bench-ca", CAOrganization: "bench", DNSName: "webhook-service.bench.svc",
		ExtKeyUsages: &[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	begin := time.Now()
	end := begin.Add(24 * time.Hour)
	b.Run("CA/RSA-2048", func(b *testing.B) {
		for b.Loop() {
			if _, err := cr.CreateCACert(begin, end); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Serving/RSA-2048", func(b *testing.B) {
		ca, err := cr.CreateCACert(begin, end)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, _, err := cr.CreateCertPEM(ca, begin, end); err != nil {
				b.Fatal(err)
			}
		}
	})
}
