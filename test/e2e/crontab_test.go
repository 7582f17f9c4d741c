package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/examples/crontab"
	"github.com/hookwright/hookwright/internal/testcluster"
	"github.com/hookwright/hookwright/internal/testfixtures"
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

// With a context and no timeout of its own, Eventually waits until the
// context ends, which for a spec without SpecTimeout is never: each one
// here sets a timeout.

// exampleInstall is examples/crontab/webhookinstall.yaml, its three
// webhooks (conversion, validating, mutating) served by one binary.
func exampleInstall() *v1alpha1.WebhookInstall {
	GinkgoHelper()
	whi := &v1alpha1.WebhookInstall{}
	readManifest("examples/crontab/webhookinstall.yaml", whi)
	return whi
}

// exampleStatus reads the example install's status.
func exampleStatus(ctx context.Context, g Gomega) *v1alpha1.WebhookInstall {
	got := &v1alpha1.WebhookInstall{}
	g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(exampleInstall()), got)).To(Succeed())
	return got
}

// setWebhookDefinitions replaces the example install's webhookdefinitions
// (an in-place upgrade or downgrade of the example), retrying a conflict
// with the operator's status writes.
func setWebhookDefinitions(ctx context.Context, defs []v1alpha1.WebhookDefinition) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		whi := exampleStatus(ctx, g)
		whi.Spec.WebhookDefinitions = defs
		g.Expect(cluster.Client.Update(ctx, whi)).To(Succeed())
	}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
}

// webhookNamed finds an admission webhook by name in the cluster's
// ValidatingWebhookConfigurations or MutatingWebhookConfigurations.
func webhookNamed(ctx context.Context, g Gomega, name string) *admissionregistrationv1.WebhookClientConfig {
	validating := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	g.Expect(cluster.Client.List(ctx, validating)).To(Succeed())
	for _, c := range validating.Items {
		for _, w := range c.Webhooks {
			if w.Name == name {
				return &w.ClientConfig
			}
		}
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	g.Expect(cluster.Client.List(ctx, mutating)).To(Succeed())
	for _, c := range mutating.Items {
		for _, w := range c.Webhooks {
			if w.Name == name {
				return &w.ClientConfig
			}
		}
	}
	return nil
}

const (
	validatingWebhook = "vcrontab.stable.example.com"
	mutatingWebhook   = "mcrontab.stable.example.com"
)

var _ = Describe("The CronTab example installed by Hookwright", Ordered, func() {
	BeforeAll(func(ctx context.Context) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		readManifest("examples/crontab/crd.yaml", crd)
		Expect(cluster.Client.Create(ctx, crd)).To(Succeed())
		// The author's verifier ClusterRole: Hookwright checks with a
		// SubjectAccessReview that its ServiceAccount may dry-run create
		// CronTabs before it verifies the admission webhooks.
		raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "crontab", "verifier-rbac.yaml"))
		Expect(err).NotTo(HaveOccurred())
		for _, doc := range strings.Split(string(raw), "\n---\n") {
			obj := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
			Expect(client.IgnoreAlreadyExists(cluster.Client.Create(ctx, obj))).To(Succeed())
		}
		whi := exampleInstall()
		Expect(cluster.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: whi.Namespace}})).To(Succeed())

		// The pod stand-in runs the real crontab-webhook binary with the
		// serving Secret Hookwright mounts: one process, one port, one
		// certificate for the three webhooks.
		cluster.Kubelet.Serve(whi.Namespace, "crontab-webhook", testcluster.BinaryHost{
			Path:        crontabWebhook,
			Args:        testfixtures.CronTabWebhookArgs,
			GracePeriod: 5e9,
		})
		Expect(cluster.Client.Create(ctx, whi)).To(Succeed())
	})

	It("converges with its three webhooks from one WebhookInstall: conversion and admission verified through the API server", func(ctx context.Context) {
		Eventually(func(g Gomega) {
			got := exampleStatus(ctx, g)
			g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), "%s: %s", got.Status.Reason, got.Status.Message)
			for _, typ := range []string{v1alpha1.TypeConversionVerified, v1alpha1.TypeAdmissionConfigured, v1alpha1.TypeAdmissionVerified} {
				c := meta.FindStatusCondition(got.Status.Conditions, typ)
				g.Expect(c).NotTo(BeNil(), "condition %s", typ)
				g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", typ, c.Reason, c.Message)
			}
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())

		By("pointing both admission webhooks at the install's Service, with the caBundle the CRD's conversion has")
		Eventually(func(g Gomega) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Name: "crontabs.stable.example.com"}, crd)).To(Succeed())
			g.Expect(crd.Spec.Conversion.Webhook).NotTo(BeNil())
			conversion := crd.Spec.Conversion.Webhook.ClientConfig
			g.Expect(conversion.CABundle).NotTo(BeEmpty())
			for name, path := range map[string]string{validatingWebhook: crontab.ValidatePath, mutatingWebhook: crontab.MutatePath} {
				cc := webhookNamed(ctx, g, name)
				g.Expect(cc).NotTo(BeNil(), "no admission configuration has webhook %s", name)
				g.Expect(cc.Service).NotTo(BeNil())
				g.Expect(cc.Service.Namespace).To(Equal(conversion.Service.Namespace))
				g.Expect(cc.Service.Name).To(Equal(conversion.Service.Name))
				g.Expect(cc.Service.Port).To(Equal(conversion.Service.Port))
				g.Expect(cc.Service.Path).To(HaveValue(Equal(path)))
				g.Expect(cc.CABundle).To(Equal(conversion.CABundle))
			}
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
	})

	It("refuses an invalid schedule through its validating webhook, with what is wrong and a valid example", func(ctx context.Context) {
		for _, tc := range []struct {
			obj  *unstructured.Unstructured
			want []string
		}{
			{cronTab("v1", "bad-minute", map[string]any{"cronSpec": "61 * * * *", "image": "x"}), []string{
				`admission webhook "` + validatingWebhook + `" denied the request`,
				`CronTab.stable.example.com "bad-minute" is invalid: spec.cronSpec: Invalid value: "61 * * * *": minute: 61 is out of range 0-59; a valid cronSpec is for example "30 2 * * 1-5" (02:30 Monday to Friday)`,
			}},
			{cronTab("v1", "two-fields", map[string]any{"cronSpec": "* *", "image": "x"}), []string{
				`spec.cronSpec: Invalid value: "* *": has 2 fields, needs five: minute hour day-of-month month day-of-week`,
			}},
			{cronTab("v2", "bad-month", map[string]any{"minute": "0", "hour": "3", "dayOfMonth": "*", "month": "13", "dayOfWeek": "*", "image": "x"}), []string{
				`admission webhook "` + validatingWebhook + `" denied the request`,
				`spec.month: Invalid value: "13": month: 13 is out of range 1-12 (or a name JAN-DEC); a valid month is for example "JAN-JUN"`,
			}},
		} {
			err := cluster.Client.Create(ctx, tc.obj)
			Expect(err).To(HaveOccurred(), "%s was created", tc.obj.GetName())
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
			for _, want := range tc.want {
				Expect(err.Error()).To(ContainSubstring(want))
			}
			Expect(apierrors.IsNotFound(cluster.Client.Get(ctx, client.ObjectKeyFromObject(tc.obj), cronTab(tc.obj.GroupVersionKind().Version, "", nil)))).To(BeTrue(), "nothing stored")
		}
	})

	It("applies the mutating webhook's default image on create, in either version", func(ctx context.Context) {
		Expect(cluster.Client.Create(ctx, cronTab("v1", "no-image-v1", map[string]any{"cronSpec": "0 4 * * *"}))).To(Succeed())
		Expect(cluster.Client.Create(ctx, cronTab("v2", "no-image-v2", map[string]any{
			"minute": "0", "hour": "5", "dayOfMonth": "*", "month": "*", "dayOfWeek": "SUN",
		}))).To(Succeed())
		withImage := cronTab("v1", "own-image", map[string]any{"cronSpec": "0 6 * * *", "image": "mine:1"})
		Expect(cluster.Client.Create(ctx, withImage)).To(Succeed())
		for _, version := range []string{"v1", "v2"} {
			for name, image := range map[string]string{"no-image-v1": crontab.DefaultImage, "no-image-v2": crontab.DefaultImage, "own-image": "mine:1"} {
				got := cronTab(version, name, nil)
				Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(got), got)).To(Succeed())
				Expect(got.Object["spec"]).To(HaveKeyWithValue("image", image), "%s read at %s", name, version)
			}
		}
		for _, name := range []string{"no-image-v1", "no-image-v2", "own-image"} {
			Expect(cluster.Client.Delete(ctx, cronTab("v1", name, nil))).To(Succeed())
		}
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

	It("fails a whole LIST with the API server's error naming a stored object whose conversion fails", func(ctx context.Context) {
		// The validating webhook refuses such an object, so it is stored
		// the way one is in real clusters: by a version of the example
		// that had no validating webhook yet. Adding validation later
		// checks new writes, not what is stored.
		By("downgrading the example in place to a version without its validating webhook, and storing a CronTab it would refuse")
		full := exampleInstall().Spec.WebhookDefinitions
		var withoutValidation []v1alpha1.WebhookDefinition
		for _, d := range full {
			if d.Type != "ValidatingAdmissionWebhook" {
				withoutValidation = append(withoutValidation, d)
			}
		}
		Expect(withoutValidation).To(HaveLen(len(full) - 1))
		setWebhookDefinitions(ctx, withoutValidation)
		Eventually(func() error {
			return cluster.Client.Create(ctx, cronTab("v1", "broken-schedule", map[string]any{"cronSpec": "* *", "image": "x"}))
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(Succeed(), "Hookwright removes the validating webhook the install no longer lists")

		By("upgrading back: the validating webhook refuses new invalid schedules again, and lets the stored one be relabelled")
		setWebhookDefinitions(ctx, full)
		Eventually(func() error {
			return cluster.Client.Create(ctx, cronTab("v1", "broken-again", map[string]any{"cronSpec": "* *", "image": "x"}), client.DryRunAll)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(MatchError(ContainSubstring(`admission webhook "` + validatingWebhook + `" denied the request`)))
		stored := cronTab("v1", "broken-schedule", nil)
		Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(stored), stored)).To(Succeed())
		patch := client.MergeFrom(stored.DeepCopy())
		stored.SetLabels(map[string]string{"reviewed": "true"})
		Expect(cluster.Client.Patch(ctx, stored, patch)).To(Succeed(), "an update that keeps the stored schedule passes (with a warning)")

		_, err := list(ctx, "v2")
		Expect(err).To(HaveOccurred(), "no partial LIST")
		Expect(err.Error()).To(ContainSubstring("conversion webhook for stable.example.com/v1, Kind=CronTab failed"))
		Expect(err.Error()).To(ContainSubstring("default/broken-schedule"))
		Expect(err.Error()).To(ContainSubstring("needs five parts"))
		_, err = list(ctx, "v1")
		Expect(err).NotTo(HaveOccurred(), "the storage version needs no conversion")

		By("reporting the refusal (the install is Failed: clients of v2 fail), and rotating the CA anyway: the webhook answered, so the caBundle is proven; one bad object must not stall renewals")
		whi := exampleInstall()
		Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(whi), whi)).To(Succeed())
		const request = "ca: renew despite a broken object"
		rotate := client.MergeFrom(whi.DeepCopy())
		whi.Annotations = map[string]string{v1alpha1.AnnotationRotate: request}
		Expect(cluster.Client.Patch(ctx, whi, rotate)).To(Succeed())
		Eventually(func(g Gomega) {
			got := exampleStatus(ctx, g)
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

		By("the admission webhooks, on the same rotated certificate, still answer")
		Eventually(func(g Gomega) {
			err := cluster.Client.Create(ctx, cronTab("v1", "after-rotation", map[string]any{"cronSpec": "60 * * * *"}), client.DryRunAll)
			g.Expect(err).To(MatchError(ContainSubstring("minute: 60 is out of range 0-59")))
			defaulted := cronTab("v1", "after-rotation", map[string]any{"cronSpec": "0 * * * *"})
			g.Expect(cluster.Client.Create(ctx, defaulted, client.DryRunAll)).To(Succeed())
			g.Expect(defaulted.Object["spec"]).To(HaveKeyWithValue("image", crontab.DefaultImage))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
	})
})
