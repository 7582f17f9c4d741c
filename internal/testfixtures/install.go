// Package testfixtures holds the WebhookInstall and the continuous reader
// that the API-server suites share: the widget conversion webhook of
// internal/testcluster, declared the way an operator author would.
package testfixtures

import (
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// WidgetInstall declares one webhook deployment serving crdName's
// conversion on pod port 9443 behind Service port 443, path /convert.
func WidgetInstall(ns, name, deployment, crdName string) *v1alpha1.WebhookInstall {
	labels := map[string]string{"app": strings.ReplaceAll(deployment, ".", "-")}
	return &v1alpha1.WebhookInstall{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.WebhookInstallSpec{
			Version:      "1.0.0",
			InstallModes: []operatorsv1alpha1.InstallMode{{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces, Supported: true}},
			CustomResourceDefinitions: v1alpha1.CustomResourceDefinitions{Owned: []v1alpha1.CRDDescription{
				{Name: crdName, Version: "v1", Kind: "Widget"},
			}},
			Install: v1alpha1.InstallStrategy{StrategyName: "deployment", Spec: v1alpha1.InstallStrategySpec{
				Deployments: []operatorsv1alpha1.StrategyDeploymentSpec{{
					Name: deployment,
					Spec: appsv1.DeploymentSpec{
						Replicas: ptr.To[int32](1),
						Selector: &metav1.LabelSelector{MatchLabels: labels},
						Template: corev1.PodTemplateSpec{
							ObjectMeta: metav1.ObjectMeta{Labels: labels},
							Spec: corev1.PodSpec{
								ServiceAccountName: "widget-webhook",
								Containers: []corev1.Container{{
									Name: "webhook", Image: "example.com/widget-webhook:v1",
									Ports: []corev1.ContainerPort{{Name: "webhook", ContainerPort: 9443}},
								}},
							},
						},
					},
				}},
			}},
			WebhookDefinitions: []v1alpha1.WebhookDefinition{{
				GenerateName: "widget-conversion", Type: operatorsv1alpha1.ConversionWebhook,
				DeploymentName: deployment, ContainerPort: 443, TargetPort: ptr.To(intstr.FromInt32(9443)),
				AdmissionReviewVersions: []string{"v1"}, WebhookPath: ptr.To("/convert"),
				ConversionCRDs: []string{crdName},
			}},
		},
	}
}

// Widget is a widget object of the internal/testcluster widget CRD.
func Widget(group, version, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"value": name}}}
	u.SetAPIVersion(group + "/" + version)
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}
