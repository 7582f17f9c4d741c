package testcluster_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hookwright/hookwright/certs"
)

var _ = Describe("Conversion through the stand-in cluster network", func() {
	It("converts v1 to v2 and v2 to v1 through the Service, for client-go and kubectl", func(ctx context.Context) {
		f := newWebhookFixture(ctx)

		Expect(cluster.Client.Create(ctx, f.newWidget("v1", "made-in-v1", map[string]any{"value": "ten"}))).To(Succeed())
		callsBefore := f.converter.Calls.Load()
		asV2, err := f.get(ctx, "v2", "made-in-v1")
		Expect(err).NotTo(HaveOccurred())
		Expect(specField(asV2, "amount")).To(Equal("ten"))
		Expect(asV2.Object["spec"]).NotTo(HaveKey("value"))
		Expect(f.converter.Calls.Load()).To(BeNumerically(">", callsBefore), "the webhook host served the conversion")

		out, err := cluster.Kubectl(ctx, "get", "widgets.v2."+f.group, "made-in-v1", "-n", f.ns, "-o", "jsonpath={.apiVersion} {.spec.amount}")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal(f.group + "/v2 ten"))

		Expect(cluster.Client.Create(ctx, f.newWidget("v2", "made-in-v2", map[string]any{"amount": "five"}))).To(Succeed())
		asV1, err := f.get(ctx, "v1", "made-in-v2")
		Expect(err).NotTo(HaveOccurred())
		Expect(specField(asV1, "value")).To(Equal("five"))
		out, err = cluster.Kubectl(ctx, "get", "widgets.v1."+f.group, "made-in-v2", "-n", f.ns, "-o", "jsonpath={.spec.value}")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal("five"))
		tunnels, _ := cluster.ProxyStats()
		Expect(tunnels).To(BeNumerically(">", 0))
	})

	It("fails with the API server's x509 error when the caBundle is not the serving cert's CA, and no call reaches the host", func(ctx context.Context) {
		f := newWebhookFixture(ctx)
		Expect(cluster.Client.Create(ctx, f.newWidget("v1", "w", map[string]any{"value": "x"}))).To(Succeed())

		other, err := certs.NewCA("some-other-ca", certs.ECDSAP256, time.Hour, time.Now())
		Expect(err).NotTo(HaveOccurred())
		patch := client.MergeFrom(f.crd.DeepCopy())
		f.crd.Spec.Conversion.Webhook.ClientConfig.CABundle = other.Pair.CertPEM
		Expect(cluster.Client.Patch(ctx, f.crd, patch)).To(Succeed())

		// The API server picks up the new caBundle asynchronously.
		const x509Error = "x509: certificate signed by unknown authority"
		Eventually(func() error { _, err := f.get(ctx, "v2", "w"); return err }).Should(MatchError(ContainSubstring(x509Error)))
		callsBefore := f.converter.Calls.Load()
		for range 5 {
			_, err := f.get(ctx, "v2", "w")
			Expect(err).To(MatchError(ContainSubstring(x509Error)))
		}
		Expect(f.converter.Calls.Load()).To(Equal(callsBefore), "a handshake that fails verification never reaches the handler")
	})

	It("answers quickly with the API server's error when no pod serves the Service", func(ctx context.Context) {
		f := newWebhookFixture(ctx)
		Expect(cluster.Client.Create(ctx, f.newWidget("v1", "w", map[string]any{"value": "x"}))).To(Succeed())
		Expect(cluster.Client.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "nobody-home"},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": "no-such-pod"},
				Ports:    []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(9443)}},
			},
		})).To(Succeed())
		patch := client.MergeFrom(f.crd.DeepCopy())
		f.crd.Spec.Conversion.Webhook.ClientConfig.Service.Name = "nobody-home"
		Expect(cluster.Client.Patch(ctx, f.crd, patch)).To(Succeed())

		// The API server gives a webhook 30 s; a proxy that hung would run
		// into this shorter deadline and fail the match below.
		Eventually(func(g Gomega) {
			readCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_, err := f.get(readCtx, "v2", "w")
			g.Expect(err).To(MatchError(ContainSubstring("conversion webhook")))
			g.Expect(err).To(MatchError(ContainSubstring("no ready pod serves service " + f.ns + "/nobody-home")))
		}).Should(Succeed())
		_, refused := cluster.ProxyStats()
		Expect(refused).To(BeNumerically(">", 0))
	})
})
