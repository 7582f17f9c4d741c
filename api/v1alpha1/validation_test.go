package v1alpha1_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
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

// withAdmissionWebhooks adds a validating and a mutating webhook served by
// the conversion webhook's deployment, as a kubebuilder operator's CSV has
// them (one manager pod, one certificate, three webhooks).
func withAdmissionWebhooks(w *v1alpha1.WebhookInstall) {
	w.Spec.WebhookDefinitions = append(w.Spec.WebhookDefinitions, validatingWebhook(), mutatingWebhook())
}

func validatingWebhook() v1alpha1.WebhookDefinition {
	return v1alpha1.WebhookDefinition{
		GenerateName: "vcrontab.kb.io", Type: operatorsv1alpha1.ValidatingAdmissionWebhook,
		DeploymentName: "crontab-webhook", ContainerPort: 443, TargetPort: ptr.To(intstr.FromInt32(9443)),
		AdmissionReviewVersions: []string{"v1"}, WebhookPath: ptr.To("/validate-stable-example-com-v1-crontab"),
		Rules:         []v1alpha1.AdmissionRule{crontabRule(admissionregistrationv1.Create, admissionregistrationv1.Update)},
		FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
	}
}

func mutatingWebhook() v1alpha1.WebhookDefinition {
	return v1alpha1.WebhookDefinition{
		GenerateName: "mcrontab.kb.io", Type: operatorsv1alpha1.MutatingAdmissionWebhook,
		DeploymentName: "crontab-webhook", ContainerPort: 443, TargetPort: ptr.To(intstr.FromInt32(9443)),
		AdmissionReviewVersions: []string{"v1", "v1beta1"}, WebhookPath: ptr.To("/mutate-stable-example-com-v1-crontab"),
		Rules:         []v1alpha1.AdmissionRule{crontabRule(admissionregistrationv1.Create)},
		FailurePolicy: ptr.To(admissionregistrationv1.Ignore), MatchPolicy: ptr.To(admissionregistrationv1.Equivalent),
		SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun), TimeoutSeconds: ptr.To[int32](5),
		ReinvocationPolicy: ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
		ObjectSelector: &v1alpha1.ObjectSelector{
			MatchLabels: map[string]string{"app.kubernetes.io/part-of": "crontab"},
			MatchExpressions: []v1alpha1.LabelSelectorRequirement{
				{Key: "example.com/skip-defaults", Operator: metav1.LabelSelectorOpDoesNotExist},
				{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"legacy", ""}},
			},
		},
	}
}

func crontabRule(ops ...admissionregistrationv1.OperationType) v1alpha1.AdmissionRule {
	return v1alpha1.AdmissionRule{
		Operations: ops,
		APIGroups:  []string{"stable.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"crontabs"},
		Scope: ptr.To(admissionregistrationv1.NamespacedScope),
	}
}

func selector(requirements ...v1alpha1.LabelSelectorRequirement) *v1alpha1.ObjectSelector {
	return &v1alpha1.ObjectSelector{MatchExpressions: requirements}
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

	It("admits storage migration policies, per conversion CRD, unchanged", func(ctx context.Context) {
		whi := validInstall("migration-policy")
		crd := whi.Spec.WebhookDefinitions[0].ConversionCRDs[0]
		whi.Spec.StorageMigration = v1alpha1.StorageMigrationSpec{Policy: v1alpha1.MigrationDisabled,
			CRDs: []v1alpha1.CRDMigrationPolicy{{Name: crd, Policy: v1alpha1.MigrationOnRequest}}}
		want := whi.Spec.StorageMigration
		Expect(cluster.Client.Create(ctx, whi)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(cluster.Client.Delete(ctx, whi)).To(Succeed()) })
		Expect(whi.Spec.StorageMigration).To(Equal(want))
		Expect(whi.Spec.StorageMigration.PolicyFor(crd)).To(Equal(v1alpha1.MigrationOnRequest))
		Expect(whi.Spec.StorageMigration.PolicyFor("others.stable.example.com")).To(Equal(v1alpha1.MigrationDisabled))
	})

	It("admits a CSV-like install with a conversion, a validating and a mutating webhook, unchanged", func(ctx context.Context) {
		whi := validInstall("three-webhooks")
		withAdmissionWebhooks(whi)
		// Rules as broad as the API server allows them.
		whi.Spec.WebhookDefinitions[1].Rules = append(whi.Spec.WebhookDefinitions[1].Rules, v1alpha1.AdmissionRule{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
			APIGroups:  []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*", "pods/status", "*/scale"},
			Scope: ptr.To(admissionregistrationv1.AllScopes),
		}, v1alpha1.AdmissionRule{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete, admissionregistrationv1.Connect},
			APIGroups:  []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/*", "services"},
			Scope: ptr.To(admissionregistrationv1.ClusterScope),
		}, v1alpha1.AdmissionRule{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			APIGroups:  []string{"apps", "batch"}, APIVersions: []string{"v1", "v1beta1"}, Resources: []string{"*/*"},
		})
		want := whi.Spec.DeepCopy()
		Expect(cluster.Client.Create(ctx, whi)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(cluster.Client.Delete(ctx, whi)).To(Succeed()) })
		whi.Spec.Certificates = want.Certificates // the server filled the defaults
		Expect(whi.Spec).To(Equal(*want), "the API server pruned or changed a field")
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
		Entry("a storage migration policy for a CRD the install does not convert", func(w *v1alpha1.WebhookInstall) {
			w.Spec.StorageMigration.CRDs = []v1alpha1.CRDMigrationPolicy{{Name: "widgets.other.example.com", Policy: v1alpha1.MigrationOnRequest}}
		}, "every storageMigration.crds entry must name a CRD listed in a webhookdefinition's conversionCRDs"),
		Entry("a storage migration policy that does not exist", func(w *v1alpha1.WebhookInstall) {
			w.Spec.StorageMigration.Policy = "Sometimes"
		}, `supported values: "Automatic", "OnRequest", "Disabled"`),
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
		// Admission webhooks: what admissionregistration.k8s.io/v1 would
		// refuse later in the configurations Hookwright writes. Index 1 is
		// the validating webhook, 2 the mutating one (withAdmissionWebhooks).
		Entry("an admission webhook without rules", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].Rules = nil
		}, "an admission webhook needs at least one rule"),
		Entry("sideEffects Some", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
		}, "an admission webhook needs sideEffects None or NoneOnDryRun: admissionregistration.k8s.io/v1 refuses Some and Unknown"),
		Entry("sideEffects unset on an admission webhook", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[2].SideEffects = nil
		}, "server-side dry-run"),
		Entry("sideEffects that is no side-effect class", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].SideEffects = ptr.To(admissionregistrationv1.SideEffectClass("Never"))
		}, `sideEffects: Unsupported value: "Never"`),
		Entry("reinvocationPolicy on a validating webhook", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].ReinvocationPolicy = ptr.To(admissionregistrationv1.NeverReinvocationPolicy)
		}, "reinvocationPolicy applies only to MutatingAdmissionWebhook"),
		Entry("reinvocationPolicy on a conversion webhook", func(w *v1alpha1.WebhookInstall) {
			w.Spec.WebhookDefinitions[0].ReinvocationPolicy = ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy)
		}, "reinvocationPolicy applies only to MutatingAdmissionWebhook"),
		Entry("an unknown reinvocationPolicy", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[2].ReinvocationPolicy = ptr.To(admissionregistrationv1.ReinvocationPolicyType("Always"))
		}, `reinvocationPolicy: Unsupported value: "Always"`),
		Entry("a rule with no operations", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].Rules[0].Operations = nil
		}, "a rule needs at least one operation"),
		Entry("an unknown operation", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].Rules[0].Operations = []admissionregistrationv1.OperationType{"PATCH"}
		}, `Unsupported value: "PATCH"`),
		Entry("'*' with other operations", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].Rules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll, admissionregistrationv1.Create}
		}, "'*' in operations means every operation: list it alone"),
		Entry("a rule with no apiGroups", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].Rules[0].APIGroups = nil
		}, "a rule needs apiGroups"),
		Entry("'*' with other apiGroups", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].Rules[0].APIGroups = []string{"*", "apps"}
		}, "'*' in apiGroups means every group: list it alone"),
		Entry("a rule with no apiVersions", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[2].Rules[0].APIVersions = nil
		}, "a rule needs apiVersions"),
		Entry("an empty apiVersion", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[2].Rules[0].APIVersions = []string{""}
		}, "apiVersions[0]: Invalid value"),
		Entry("'*' with other apiVersions", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[2].Rules[0].APIVersions = []string{"v1", "*"}
		}, "'*' in apiVersions means every version: list it alone"),
		Entry("a rule with no resources", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].Rules[0].Resources = nil
		}, "a rule needs resources"),
		Entry("an empty resource", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].Rules[0].Resources = []string{"crontabs", ""}
		}, "resources[1]: Invalid value"),
		Entry("'*/*' with other resources", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].Rules[0].Resources = []string{"*/*", "crontabs"}
		}, "'*/*' in resources means every resource and subresource: list it alone"),
		Entry("'*' with another resource", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].Rules[0].Resources = []string{"*", "crontabs"}
		}, "'*' in resources means every resource: list no other resource without a subresource"),
		Entry("'crontabs/*' with one of its subresources", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].Rules[0].Resources = []string{"crontabs/*", "crontabs/status"}
		}, "'x/*' in resources covers every subresource of x"),
		Entry("'*/status' with a resource's status", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].Rules[0].Resources = []string{"*/status", "crontabs/status"}
		}, "'*/y' in resources covers subresource y of every resource"),
		Entry("an unknown scope", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].Rules[0].Scope = ptr.To(admissionregistrationv1.ScopeType("Global"))
		}, `scope: Unsupported value: "Global"`),
		Entry("an unknown failurePolicy", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].FailurePolicy = ptr.To(admissionregistrationv1.FailurePolicyType("Retry"))
		}, `failurePolicy: Unsupported value: "Retry"`),
		Entry("an unknown matchPolicy", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].MatchPolicy = ptr.To(admissionregistrationv1.MatchPolicyType("Fuzzy"))
		}, `matchPolicy: Unsupported value: "Fuzzy"`),
		Entry("timeoutSeconds above 30", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].TimeoutSeconds = ptr.To[int32](31)
		}, "timeoutSeconds: Invalid value: 31: spec.webhookdefinitions[1].timeoutSeconds in body should be less than or equal to 30"),
		Entry("timeoutSeconds 0", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[2].TimeoutSeconds = ptr.To[int32](0)
		}, "timeoutSeconds in body should be greater than or equal to 1"),
		Entry("conversionCRDs on an admission webhook", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[0].ConversionCRDs = nil
			w.Spec.WebhookDefinitions[1].ConversionCRDs = []string{"crontabs.stable.example.com"}
		}, "conversionCRDs applies only to ConversionWebhook"),
		Entry("an admission webhook named with two DNS segments", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].GenerateName = "vcrontab.io"
		}, "needs at least three DNS segments"),
		Entry("an objectSelector with an unknown operator", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].ObjectSelector = selector(v1alpha1.LabelSelectorRequirement{Key: "app", Operator: "Equals", Values: []string{"x"}})
		}, `operator: Unsupported value: "Equals"`),
		Entry("an objectSelector In without values", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].ObjectSelector = selector(v1alpha1.LabelSelectorRequirement{Key: "app", Operator: metav1.LabelSelectorOpIn})
		}, "operators In and NotIn need at least one value"),
		Entry("an objectSelector Exists with values", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].ObjectSelector = selector(v1alpha1.LabelSelectorRequirement{Key: "app", Operator: metav1.LabelSelectorOpExists, Values: []string{"x"}})
		}, "operators Exists and DoesNotExist take no values"),
		Entry("an objectSelector key that is no label key", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].ObjectSelector = selector(v1alpha1.LabelSelectorRequirement{Key: "not a key", Operator: metav1.LabelSelectorOpExists})
		}, "must be a label key"),
		Entry("an admission webhookPath with a segment the API server refuses", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[1].WebhookPath = ptr.To("/validate_CronTab")
		}, "each segment of webhookPath must be a DNS subdomain"),
		Entry("admissionReviewVersions naming v2 on an admission webhook", func(w *v1alpha1.WebhookInstall) {
			withAdmissionWebhooks(w)
			w.Spec.WebhookDefinitions[2].AdmissionReviewVersions = []string{"v2"}
		}, "admissionReviewVersions may only name v1 and v1beta1"),
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
