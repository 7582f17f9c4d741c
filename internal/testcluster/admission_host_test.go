package testcluster_test

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/internal/testcluster"
)

var _ = Describe("Admission webhooks on the test ground", func() {
	It("serves validation and mutation from one pod and certificate, through the API server", func(ctx context.Context) {
		f := newWebhookFixture(ctx)
		const deployment = "admission-webhook"
		validator := &testcluster.AdmissionReviewer{Name: "validator"}
		mutator := &testcluster.AdmissionReviewer{Name: "mutator", Mutate: true}
		cluster.Kubelet.Serve(f.ns, deployment, testcluster.HandlerHost{Handler: testcluster.WebhookMux{
			Admission: map[string]http.Handler{"/validate": validator, "/mutate": mutator},
		}})
		serving, err := f.ca.IssueServing(certs.ServiceDNSNames(deployment, f.ns), certs.ECDSAP256, time.Hour, time.Now())
		Expect(err).NotTo(HaveOccurred())
		Expect(cluster.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "admission-cert"},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{"tls.crt": serving.CertPEM, "tls.key": serving.KeyPEM},
		})).To(Succeed())
		Expect(cluster.Client.Create(ctx, webhookDeployment(f.ns, deployment, "admission-cert"))).To(Succeed())
		Expect(cluster.Client.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: deployment},
			Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": deployment}, Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(9443)}}},
		})).To(Succeed())
		waitAvailable(ctx, f.ns, deployment)

		rules := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{f.group}, APIVersions: []string{"*"}, Resources: []string{"widgets"}}}}
		clientConfig := func(path string) admissionregistrationv1.WebhookClientConfig {
			return admissionregistrationv1.WebhookClientConfig{CABundle: f.ca.Pair.CertPEM,
				Service: &admissionregistrationv1.ServiceReference{Namespace: f.ns, Name: deployment, Path: ptr.To(path), Port: ptr.To[int32](443)}}
		}
		onlyHere := &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": f.ns}}
		none := ptr.To(admissionregistrationv1.SideEffectClassNone)
		validating := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: f.ns},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "validate.test.hookwright.dev", ClientConfig: clientConfig("/validate"),
				Rules: rules, NamespaceSelector: onlyHere, SideEffects: none, AdmissionReviewVersions: []string{"v1"}}}}
		mutating := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: f.ns},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mutate.test.hookwright.dev", ClientConfig: clientConfig("/mutate"),
				Rules: rules, NamespaceSelector: onlyHere, SideEffects: none, AdmissionReviewVersions: []string{"v1"}}}}
		Expect(cluster.Client.Create(ctx, validating)).To(Succeed())
		Expect(cluster.Client.Create(ctx, mutating)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(cluster.Client.Delete(ctx, validating)).To(Succeed())
			Expect(cluster.Client.Delete(ctx, mutating)).To(Succeed())
		})

		By("a dry-run create calls both webhooks: the mutating one's patch shows in the answer")
		Eventually(func(g Gomega) {
			w := f.newWidget("v2", "ok", map[string]any{"amount": "1"})
			g.Expect(cluster.Client.Create(ctx, w, client.DryRunAll)).To(Succeed())
			g.Expect(w.GetAnnotations()).To(HaveKeyWithValue(testcluster.AdmissionAnnotation, "mutator"))
			g.Expect(validator.Calls.Load()).To(BeNumerically(">", 0))
		}).Should(Succeed())

		By("a denial carries the webhook's name and message")
		validator.Deny("refused", "spec.value is refused here")
		err = cluster.Client.Create(ctx, f.newWidget("v1", "refused", map[string]any{"value": "1"}), client.DryRunAll)
		Expect(err).To(MatchError(`admission webhook "validate.test.hookwright.dev" denied the request: spec.value is refused here`))
	})
})
