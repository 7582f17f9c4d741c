package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// What `hookwright import-csv` writes must pass admission unchanged: a
// schema that drifted from the Go types would prune or reject a field the
// importer's in-process checks cannot see.
var _ = DescribeTable("admits what hookwright import-csv writes, and keeps every field",
	func(ctx context.Context, golden string) {
		raw, err := os.ReadFile(filepath.Join("..", "..", "internal", "importcsv", "testdata", golden))
		Expect(err).NotTo(HaveOccurred())
		var whi v1alpha1.WebhookInstall
		Expect(yaml.UnmarshalStrict(raw, &whi)).To(Succeed())
		whi.Namespace = "default"
		want := whi.Spec.DeepCopy()
		Expect(cluster.Client.Create(ctx, &whi)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(cluster.Client.Delete(ctx, &whi)).To(Succeed()) })
		Expect(whi.Spec.Certificates.KeyAlgorithm).To(Equal("ECDSA-P256"), "the server applied the defaults")
		whi.Spec.Certificates = want.Certificates
		Expect(equality.Semantic.DeepEqual(&whi.Spec, want)).To(BeTrue(), "the API server pruned or changed a field")
	},
	Entry("from a bundle directory: a conversion, a validating and a mutating webhook", "crontab.webhookinstall.yaml"),
	Entry("from a CSV read off a cluster", "crontab-from-cluster.webhookinstall.yaml"),
	Entry("from a CSV with admission webhooks only", "policy.webhookinstall.yaml"),
)
