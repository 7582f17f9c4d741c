package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/internal/testcluster"
)

func readManifest(path string, into any) {
	raw, err := os.ReadFile(filepath.Join("..", "..", path))
	Expect(err).NotTo(HaveOccurred())
	Expect(yaml.UnmarshalStrict(raw, into)).To(Succeed(), path)
}

func cronTab(version, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion("stable.example.com/" + version)
	u.SetKind("CronTab")
	u.SetNamespace("default")
	u.SetName(name)
	return u
}

func list(ctx context.Context, version string) (*unstructured.UnstructuredList, error) {
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("stable.example.com/" + version)
	l.SetKind("CronTabList")
	return l, cluster.Client.List(ctx, l, client.InNamespace("default"))
}

var _ = Describe("The CronTab example installed by Hookwright", Ordered, func() {
	BeforeAll(func(ctx context.Context) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		readManifest("examples/crontab/crd.yaml", crd)
		Expect(cluster.Client.Create(ctx, crd)).To(Succeed())
		whi := &v1alpha1.WebhookInstall{}
		readManifest("examples/crontab/webhookinstall.yaml", whi)
		Expect(cluster.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: whi.Namespace}})).To(Succeed())

		// The pod stand-in runs the real crontab-webhook binary with the
		// serving Secret Hookwright mounts.
		cluster.Kubelet.Serve(whi.Namespace, "crontab-webhook", testcluster.BinaryHost{
			Path: crontabWebhook,
			Args: func(env *testcluster.PodEnv, addr string) ([]string, error) {
				certDir, err := env.MountDir(testcluster.DefaultCertMount)
				return []string{"--addr", addr, "--cert-dir", certDir}, err
			},
			GracePeriod: 5e9,
		})
		Expect(cluster.Client.Create(ctx, whi)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &v1alpha1.WebhookInstall{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(whi), got)).To(Succeed())
			g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), "%s: %s", got.Status.Reason, got.Status.Message)
		}).Should(Succeed())
	})

	It("serves CronTabs created in v1 and in v2 in both versions, read and listed", func(ctx context.Context) {
		Expect(cluster.Client.Create(ctx, cronTab("v1", "from-v1", map[string]any{"cronSpec": "30 2 * * *", "image": "backup:1"}))).To(Succeed())
		Expect(cluster.Client.Create(ctx, cronTab("v2", "from-v2", map[string]any{
			"minute": "*/5", "hour": "*", "dayOfMonth": "*", "month": "*", "dayOfWeek": "1-5", "image": "poll:2",
		}))).To(Succeed())

		v2, err := list(ctx, "v2")
		Expect(err).NotTo(HaveOccurred())
		Expect(v2.Items).To(HaveLen(2))
		for _, item := range v2.Items {
			if item.GetName() == "from-v1" {
				Expect(item.Object["spec"]).To(HaveKeyWithValue("hour", "2"))
				Expect(item.Object["spec"]).NotTo(HaveKey("cronSpec"))
			}
		}
		v1, err := list(ctx, "v1")
		Expect(err).NotTo(HaveOccurred())
		Expect(v1.Items).To(HaveLen(2))
		for _, item := range v1.Items {
			if item.GetName() == "from-v2" {
				Expect(item.Object["spec"]).To(HaveKeyWithValue("cronSpec", "*/5 * * * 1-5"))
			}
		}
		one := cronTab("v2", "from-v1", nil)
		Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(one), one)).To(Succeed())
		Expect(one.Object["spec"]).To(HaveKeyWithValue("minute", "30"))
	})

	It("fails a whole LIST with the API server's error naming the object whose conversion fails", func(ctx context.Context) {
		Expect(cluster.Client.Create(ctx, cronTab("v1", "broken-schedule", map[string]any{"cronSpec": "* *", "image": "x"}))).To(Succeed())
		_, err := list(ctx, "v2")
		Expect(err).To(HaveOccurred(), "no partial LIST")
		Expect(err.Error()).To(ContainSubstring("conversion webhook for stable.example.com/v1, Kind=CronTab failed"))
		Expect(err.Error()).To(ContainSubstring("default/broken-schedule"))
		Expect(err.Error()).To(ContainSubstring("needs five parts"))
		_, err = list(ctx, "v1")
		Expect(err).NotTo(HaveOccurred(), "the storage version needs no conversion")

		By("reporting the refusal (the install is Failed: clients of v2 fail), and rotating the CA anyway: the webhook answered, so the caBundle is proven; one bad object must not stall renewals")
		whi := &v1alpha1.WebhookInstall{}
		readManifest("examples/crontab/webhookinstall.yaml", whi)
		Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(whi), whi)).To(Succeed())
		const request = "ca: renew despite a broken object"
		patch := client.MergeFrom(whi.DeepCopy())
		whi.Annotations = map[string]string{v1alpha1.AnnotationRotate: request}
		Expect(cluster.Client.Patch(ctx, whi, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &v1alpha1.WebhookInstall{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(whi), got)).To(Succeed())
			g.Expect(got.Status.HandledRotationRequest).To(Equal(request))
			// Promote is the step gated on a verified read: the serving
			// certificate moved to the new CA. (The old CA leaves the bundle
			// after the example's 10-minute trust overlap.)
			g.Expect(got.Status.Rotations).To(ContainElement(And(
				HaveField("Kind", v1alpha1.RotationServing), HaveField("Reason", "CARotation"))))
			g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhaseFailed), "%s: %s", got.Status.Reason, got.Status.Message)
			g.Expect(got.Status.Reason).To(Equal(v1alpha1.ReasonConversionRefused))
			verified := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.TypeConversionVerified)
			g.Expect(verified).NotTo(BeNil())
			g.Expect(verified.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(verified.Reason).To(Equal(v1alpha1.ReasonConversionRefused))
			// The object is in namespace default, not the install's: the
			// install's status does not name it (the manager's log does).
			g.Expect(verified.Message).To(ContainSubstring("the webhook refused to convert an object outside namespace crontab-system to v2"))
			g.Expect(verified.Message).NotTo(ContainSubstring("broken-schedule"))
			g.Expect(got.Status.ConversionCRDs[0].State).To(Equal(v1alpha1.ConversionFailed))
		}, 2*time.Minute).Should(Succeed())
	})
})
