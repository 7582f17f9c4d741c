package desired

import (
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

const (
	testNamespace = "ns"
	testName      = "whi"
	testUID       = types.UID("0b6f2c1e-7d0a-4c1b-9a43-5f1e2d3c4b5a")
)

// newInstall is a WebhookInstall ns/whi with the given deployments and
// webhookdefinitions.
func newInstall(deployments []operatorsv1alpha1.StrategyDeploymentSpec, defs ...v1alpha1.WebhookDefinition) *v1alpha1.WebhookInstall {
	return &v1alpha1.WebhookInstall{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "WebhookInstall"},
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testName, UID: testUID},
		Spec: v1alpha1.WebhookInstallSpec{
			Version: "1.0.0",
			Install: v1alpha1.InstallStrategy{
				StrategyName: "deployment",
				Spec:         v1alpha1.InstallStrategySpec{Deployments: deployments},
			},
			WebhookDefinitions: defs,
		},
	}
}

// newDeploymentSpec is a StrategyDeploymentSpec named name whose selector and
// pod labels are app=<name>, with the given containers.
func newDeploymentSpec(name string, containers ...corev1.Container) operatorsv1alpha1.StrategyDeploymentSpec {
	if len(containers) == 0 {
		containers = []corev1.Container{{Name: "manager", Image: "example.com/manager:v1"}}
	}
	selector := map[string]string{"app": name}
	return operatorsv1alpha1.StrategyDeploymentSpec{
		Name: name,
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: containers},
			},
		},
	}
}

// newDefinition is a ConversionWebhook definition served by deployment.
func newDefinition(generateName, deployment string) v1alpha1.WebhookDefinition {
	return v1alpha1.WebhookDefinition{
		GenerateName:            generateName,
		Type:                    operatorsv1alpha1.ConversionWebhook,
		DeploymentName:          deployment,
		AdmissionReviewVersions: []string{"v1"},
		ConversionCRDs:          []string{"crontabs.stable.example.com"},
	}
}

// assertControllerRef checks that obj is owned by the test install as its
// controller.
func assertControllerRef(t *testing.T, obj metav1.Object) {
	t.Helper()
	refs := obj.GetOwnerReferences()
	if len(refs) != 1 {
		t.Fatalf("%s: want 1 owner reference, got %d: %+v", obj.GetName(), len(refs), refs)
	}
	ref := refs[0]
	if ref.APIVersion != v1alpha1.GroupVersion.String() || ref.Kind != "WebhookInstall" || ref.Name != testName || ref.UID != testUID {
		t.Errorf("%s: owner reference = %s/%s %s uid %s, want %s/WebhookInstall %s uid %s",
			obj.GetName(), ref.APIVersion, ref.Kind, ref.Name, ref.UID, v1alpha1.GroupVersion.String(), testName, testUID)
	}
	if ref.Controller == nil || !*ref.Controller {
		t.Errorf("%s: owner reference Controller = %v, want true", obj.GetName(), ref.Controller)
	}
}

// assertInstallLabels checks the managed-by and install labels, and that
// obj is in the install's namespace.
func assertInstallLabels(t *testing.T, obj metav1.Object) {
	t.Helper()
	if obj.GetNamespace() != testNamespace {
		t.Errorf("%s: namespace = %q, want %q", obj.GetName(), obj.GetNamespace(), testNamespace)
	}
	labels := obj.GetLabels()
	// Literal keys: the manager's caches and cleanup select on these exact
	// labels, so a renamed constant must fail here.
	if got := labels["app.kubernetes.io/managed-by"]; got != "hookwright" {
		t.Errorf("%s: label app.kubernetes.io/managed-by = %q, want %q", obj.GetName(), got, "hookwright")
	}
	if got := labels["operators.hookwright.dev/install"]; got != testName {
		t.Errorf("%s: label operators.hookwright.dev/install = %q, want %q", obj.GetName(), got, testName)
	}
}
