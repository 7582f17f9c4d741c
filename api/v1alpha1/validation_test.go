package v1alpha1_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

func validInstall(name string) *v1alpha1.WebhookInstall {
	labels := map[string]string{"app": "crontab-webhook"}
	return &v1alpha1.WebhookInstall{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: v1alpha1.WebhookInstallSpec{
			Version:      "1.0.0",
			InstallModes: []operatorsv1alpha1.InstallMode{{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces, Supported: true}, {Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Supported: false}},
			CustomResourceDefinitions: v1alpha1.CustomResourceDefinitions{Owned: []v1alpha1.CRDDescription{
				{Name: "crontabs.stable.example.com", Version: "v1", Kind: "CronTab"},
			}},
			Install: v1alpha1.InstallStrategy{StrategyName: "deployment", Spec: v1alpha1.InstallStrategySpec{
				Deployments: []operatorsv1alpha1.StrategyDeploymentSpec{{
					Name: "crontab-webhook",
					Spec: appsv1.DeploymentSpec{
						Selector: &metav1.LabelSelector{MatchLabels: labels},
						Template: corev1.PodTemplateSpec{
							ObjectMeta: metav1.ObjectMeta{Labels: labels},
							Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "webhook", Image: "example.com/crontab-webhook:v1"}}},
						},
					},
				}},
			}},
			WebhookDefinitions: []v1alpha1.WebhookDefinition{{
				GenerateName: "crontab-conversion", Type: operatorsv1alpha1.ConversionWebhook,
				DeploymentName: "crontab-webhook", ContainerPort: 443, TargetPort: ptr.To(intstr.FromInt32(9443)),
				AdmissionReviewVersions: []string{"v1"}, WebhookPath: ptr.To("/convert"),
				ConversionCRDs: []string{"crontabs.stable.example.com"},
			}},
		},
	}
}

var _ = Describe("WebhookInstall admission", func() {
	It("accepts a valid install and fills the certificate defaults", func(ctx context.Context) {
		whi := validInstall("valid")
		Expect(cluster.Client.Create(ctx, whi)).To(Succeed())
		Expect(whi.Spec.Certificates.KeyAlgorithm).To(Equal("ECDSA-P256"))
		Expect(whi.Spec.Certificates.CALifetime.Duration).To(Equal(17520 * time.Hour))
		Expect(whi.Spec.Certificates.ServingLifetime.Duration).To(Equal(2160 * time.Hour))
		Expect(cluster.Client.Delete(ctx, whi)).To(Succeed())
	})

	DescribeTable("rejects a bad spec with a message that says what to fix",
		func(ctx context.Context, mutate func(*v1alpha1.WebhookInstall), message string) {
			whi := validInstall("bad")
			mutate(whi)
			err := cluster.Client.Create(ctx, whi)
			Expect(err).To(MatchError(ContainSubstring(message)))
		},
		Entry("a deployment name that is no Deployment name", func(w *v1alpha1.WebhookInstall) {
			w.Spec.Install.Spec.Deployments[0].Name = "CronTab_Webhook"
			w.Spec.WebhookDefinitions[0].DeploymentName = "CronTab_Webhook"
		}, "deploymentName must be a Deployment name"),
		Entry("Hookwright's own CRD", func(w *v1alpha1.WebhookInstall) {
			w.Spec.CustomResourceDefinitions.Owned = append(w.Spec.CustomResourceDefinitions.Owned, v1alpha1.CRDDescription{Name: "webhookinstalls.operators.hookwright.dev", Version: "v1alpha1", Kind: "WebhookInstall"})
			w.Spec.WebhookDefinitions[0].ConversionCRDs = append(w.Spec.WebhookDefinitions[0].ConversionCRDs, "webhookinstalls.operators.hookwright.dev")
		}, "Hookwright's own CRDs (*.operators.hookwright.dev) are never converted by a WebhookInstall"),
		Entry("more conversion CRDs than the admission guard can check", func(w *v1alpha1.WebhookInstall) {
			second := w.Spec.WebhookDefinitions[0]
			second.GenerateName, second.ConversionCRDs = "more-things", nil
			for i := range 16 { // 1 + 16 conversion CRDs over two webhooks
				name := fmt.Sprintf("things%d.stable.example.com", i)
				w.Spec.CustomResourceDefinitions.Owned = append(w.Spec.CustomResourceDefinitions.Owned, v1alpha1.CRDDescription{Name: name, Version: "v1", Kind: "Thing"})
				if i < 8 {
					w.Spec.WebhookDefinitions[0].ConversionCRDs = append(w.Spec.WebhookDefinitions[0].ConversionCRDs, name)
				} else {
					second.ConversionCRDs = append(second.ConversionCRDs, name)
				}
			}
			w.Spec.WebhookDefinitions = append(w.Spec.WebhookDefinitions, second)
		}, "an install converts at most 16 CRDs"),
		Entry("deploymentName names no install deployment", func(w *v1alpha1.WebhookInstall) {
			w.Spec.WebhookDefinitions[0].DeploymentName = "elsewhere"
		}, "every webhookdefinitions[].deploymentName must name a deployment in install.spec.deployments"),
		Entry("ConversionWebhook without conversionCRDs", func(w *v1alpha1.WebhookInstall) {
			w.Spec.WebhookDefinitions[0].ConversionCRDs = nil
		}, "a ConversionWebhook needs at least one conversionCRDs entry"),
		Entry("conversionCRD that is not a <plural>.<group> name", func(w *v1alpha1.WebhookInstall) {
			w.Spec.WebhookDefinitions[0].ConversionCRDs = []string{"CronTab"}
		}, "each conversionCRDs entry must be a CRD name, <plural>.<group>"),
		Entry("conversionCRD that is not owned", func(w *v1alpha1.WebhookInstall) {
			w.Spec.WebhookDefinitions[0].ConversionCRDs = []string{"crontabs.stable.example.com", "widgets.other.example.com"}
		}, "every conversionCRDs entry must be listed in customresourcedefinitions.owned"),
		Entry("containerPort out of range", func(w *v1alpha1.WebhookInstall) {
			w.Spec.WebhookDefinitions[0].ContainerPort = 70000
		}, "should be less than or equal to 65535"),
		Entry("targetPort out of range", func(w *v1alpha1.WebhookInstall) {
			w.Spec.WebhookDefinitions[0].TargetPort = ptr.To(intstr.FromInt32(0))
		}, "targetPort must be a port number from 1 to 65535 or a port name"),
		Entry("webhookPath without a leading slash", func(w *v1alpha1.WebhookInstall) {
			w.Spec.WebhookDefinitions[0].WebhookPath = ptr.To("convert")
		}, "webhookPath: Invalid value"),
		Entry("admissionReviewVersions empty", func(w *v1alpha1.WebhookInstall) {
			w.Spec.WebhookDefinitions[0].AdmissionReviewVersions = []string{}
		}, "admissionReviewVersions: Invalid value"),
		Entry("admissionReviewVersions naming v2", func(w *v1alpha1.WebhookInstall) {
			w.Spec.WebhookDefinitions[0].AdmissionReviewVersions = []string{"v1", "v2"}
		}, "admissionReviewVersions may only name v1 and v1beta1"),
		Entry("duplicate generateName", func(w *v1alpha1.WebhookInstall) {
			second := w.Spec.WebhookDefinitions[0]
			second.ConversionCRDs = nil
			w.Spec.WebhookDefinitions = append(w.Spec.WebhookDefinitions, second)
		}, "Duplicate value"),
		Entry("one CRD in two webhookdefinitions", func(w *v1alpha1.WebhookInstall) {
			second := w.Spec.WebhookDefinitions[0]
			second.GenerateName = "second"
			w.Spec.WebhookDefinitions = append(w.Spec.WebhookDefinitions, second)
		}, "a conversionCRDs entry must not appear in two webhookdefinitions"),
		Entry("AllNamespaces not supported", func(w *v1alpha1.WebhookInstall) {
			w.Spec.InstallModes = []operatorsv1alpha1.InstallMode{{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Supported: true}}
		}, "installModes must support AllNamespaces and no other mode"),
		Entry("another install mode supported too", func(w *v1alpha1.WebhookInstall) {
			w.Spec.InstallModes = append(w.Spec.InstallModes, operatorsv1alpha1.InstallMode{Type: operatorsv1alpha1.InstallModeTypeSingleNamespace, Supported: true})
		}, "installModes must support AllNamespaces and no other mode"),
		Entry("a validating webhook", func(w *v1alpha1.WebhookInstall) {
			w.Spec.WebhookDefinitions[0].Type = operatorsv1alpha1.ValidatingAdmissionWebhook
		}, "ValidatingAdmissionWebhook and MutatingAdmissionWebhook are not supported yet"),
		Entry("version that is not semver", func(w *v1alpha1.WebhookInstall) {
			w.Spec.Version = "v1"
		}, "spec.version: Invalid value"),
		Entry("replaces naming itself", func(w *v1alpha1.WebhookInstall) {
			w.Spec.Replaces = "bad"
		}, "it cannot be this install itself"),
		Entry("serving lifetime longer than the CA's", func(w *v1alpha1.WebhookInstall) {
			w.Spec.Certificates.CALifetime = &metav1.Duration{Duration: time.Hour}
			w.Spec.Certificates.ServingLifetime = &metav1.Duration{Duration: 2 * time.Hour}
		}, "servingLifetime must not exceed caLifetime"),
		Entry("renewBefore not shorter than the serving lifetime", func(w *v1alpha1.WebhookInstall) {
			w.Spec.Certificates.CALifetime = &metav1.Duration{Duration: 2 * time.Hour}
			w.Spec.Certificates.ServingLifetime = &metav1.Duration{Duration: time.Hour}
			w.Spec.Certificates.RenewBefore = &metav1.Duration{Duration: time.Hour}
		}, "renewBefore must be shorter than servingLifetime"),
		Entry("deployment names that map to one Service name", func(w *v1alpha1.WebhookInstall) {
			second := w.Spec.Install.Spec.Deployments[0]
			second.Name = "crontab.webhook"
			w.Spec.Install.Spec.Deployments = append(w.Spec.Install.Spec.Deployments, second)
			def := w.Spec.WebhookDefinitions[0]
			def.GenerateName, def.DeploymentName, def.ConversionCRDs = "second", "crontab.webhook", []string{"crontabs2.stable.example.com"}
			w.Spec.CustomResourceDefinitions.Owned = append(w.Spec.CustomResourceDefinitions.Owned, v1alpha1.CRDDescription{Name: "crontabs2.stable.example.com", Version: "v1", Kind: "CronTab2"})
			w.Spec.WebhookDefinitions = append(w.Spec.WebhookDefinitions, def)
		}, "they would share one webhook Service name"),
		Entry("unknown key algorithm", func(w *v1alpha1.WebhookInstall) {
			w.Spec.Certificates.KeyAlgorithm = "DSA"
		}, `supported values: "ECDSA-P256", "ECDSA-P384", "RSA-2048", "RSA-3072"`),
	)
})
