package runner

import (
	"crypto/rand"
	"fmt"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/internal/testcluster"
)

// Every webhook of the benchmark is a Deployment "webhook" behind the
// Service "webhook-service" (port 443 to pod port 9443, path /convert) in
// the install's own namespace, as an operator's would be.
const (
	webhookDeployment = "webhook"
	webhookService    = "webhook-service"
	webhookPort       = 9443
	installName       = "bench"
)

// crdKinds are the kinds of an install's conversion CRDs (two in P4).
var crdKinds = []string{"Widget", "Gadget"}

// groupOf is the API group of the CRDs of a namespace's install.
func groupOf(ns string) string { return ns + ".bench.test" }

// crdNames are the names of the n conversion CRDs of a namespace's install.
func crdNames(ns string, n int) []string {
	var names []string
	for _, kind := range crdKinds[:n] {
		names = append(names, strings.ToLower(kind)+"s."+groupOf(ns))
	}
	return names
}

// namespaceOfCRD inverts crdNames: the namespace of the install a bench
// CRD belongs to, or "" for another CRD.
func namespaceOfCRD(name string) string {
	_, group, _ := strings.Cut(name, ".")
	ns, ok := strings.CutSuffix(group, groupOf(""))
	if !ok {
		return ""
	}
	return ns
}

// convertedCRD is a two-version CRD (v1 stores spec.value, v2 calls it
// spec.amount) that testcluster.WidgetConverter converts. conversion is
// left unset (Hookwright writes it) or given (cert-controller's CRDs name
// their Service and wait for the caBundle).
func convertedCRD(ns, kind string, conversion *apiextensionsv1.CustomResourceConversion) *apiextensionsv1.CustomResourceDefinition {
	plural := strings.ToLower(kind) + "s"
	group := groupOf(ns)
	schema := func(field string) *apiextensionsv1.CustomResourceValidation {
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{field: {Type: "string"}}},
			},
		}}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schema("value")},
				{Name: "v2", Served: true, Storage: false, Schema: schema("amount")},
			},
			Conversion: conversion,
		},
	}
}

// serviceConversion points a CRD at the namespace's webhook Service.
func serviceConversion(ns string) *apiextensionsv1.CustomResourceConversion {
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{
				Service: &apiextensionsv1.ServiceReference{Namespace: ns, Name: webhookService, Path: ptr.To("/convert"), Port: ptr.To[int32](443)},
			},
		},
	}
}

func webhookLabels() map[string]string { return map[string]string{"app": webhookDeployment} }

// webhookInstall declares the namespace's webhook for its crds, as a CSV
// would: one Deployment with a ServiceAccount, one ConversionWebhook.
func webhookInstall(ns string, crds []string, certificates v1alpha1.CertificatePolicy) *v1alpha1.WebhookInstall {
	var owned []v1alpha1.CRDDescription
	for i, name := range crds {
		owned = append(owned, v1alpha1.CRDDescription{Name: name, Version: "v1", Kind: crdKinds[i]})
	}
	return &v1alpha1.WebhookInstall{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: installName},
		Spec: v1alpha1.WebhookInstallSpec{
			Version:                   "1.0.0",
			InstallModes:              []operatorsv1alpha1.InstallMode{{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces, Supported: true}},
			CustomResourceDefinitions: v1alpha1.CustomResourceDefinitions{Owned: owned},
			Install: v1alpha1.InstallStrategy{StrategyName: "deployment", Spec: v1alpha1.InstallStrategySpec{
				Deployments: []operatorsv1alpha1.StrategyDeploymentSpec{{Name: webhookDeployment, Spec: webhookDeploymentSpec(nil, nil)}},
			}},
			WebhookDefinitions: []v1alpha1.WebhookDefinition{{
				GenerateName: "conversion", Type: operatorsv1alpha1.ConversionWebhook,
				DeploymentName: webhookDeployment, ContainerPort: 443, TargetPort: ptr.To(intstr.FromInt32(webhookPort)),
				AdmissionReviewVersions: []string{"v1"}, WebhookPath: ptr.To("/convert"),
				ConversionCRDs: crds,
			}},
			Certificates: certificates,
		},
	}
}

func webhookDeploymentSpec(volumes []corev1.Volume, mounts []corev1.VolumeMount) appsv1.DeploymentSpec {
	return appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: webhookLabels()},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: webhookLabels()},
			Spec: corev1.PodSpec{
				ServiceAccountName: "webhook",
				Containers: []corev1.Container{{
					Name: "webhook", Image: "example.com/bench-webhook:v1",
					Ports:        []corev1.ContainerPort{{Name: "webhook", ContainerPort: webhookPort}},
					VolumeMounts: mounts,
				}},
				Volumes: volumes,
			},
		},
	}
}

// anchorSecret is the Secret cert-controller fills (it must exist first,
// as cert-controller's own manifests ship it empty).
const anchorSecret = "webhook-cert"

// anchorWorkload is what an operator embedding cert-controller ships for
// its webhook: the Deployment mounting the rotator's Secret and the Service.
func anchorWorkload(ns string) (*appsv1.Deployment, *corev1.Service) {
	volumes := []corev1.Volume{{Name: "cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: anchorSecret}}}}
	mounts := []corev1.VolumeMount{{Name: "cert", MountPath: testcluster.DefaultCertMount, ReadOnly: true}}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: webhookDeployment},
		Spec:       webhookDeploymentSpec(volumes, mounts),
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: webhookService},
		Spec: corev1.ServiceSpec{
			Selector: webhookLabels(),
			Ports:    []corev1.ServicePort{{Name: "webhook", Port: 443, TargetPort: intstr.FromInt32(webhookPort)}},
		},
	}
	return dep, svc
}

// probeObject is a v2 object for a server-side dry-run create: the API
// server must convert it to the storage version v1 through the webhook.
func probeObject(ns, kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"amount": "1"}}}
	u.SetAPIVersion(groupOf(ns) + "/v2")
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetGenerateName("probe-")
	return u
}

// largeCRD is a foreign single-version CRD whose schema is about kb
// kilobytes of JSON: many described string properties, as generated
// operator CRDs have.
func largeCRD(i, kb int) *apiextensionsv1.CustomResourceDefinition {
	group := fmt.Sprintf("big%d.foreign.test", i/100)
	kind := fmt.Sprintf("Big%d", i)
	plural := strings.ToLower(kind) + "s"
	props := map[string]apiextensionsv1.JSONSchemaProps{}
	description := strings.Repeat("A field of a large generated schema, described at length as generated CRDs are. ", 2)
	// Each property is ~200 bytes of JSON.
	for p := 0; p < kb*1024/200; p++ {
		props[fmt.Sprintf("field%04d", p)] = apiextensionsv1.JSONSchemaProps{Type: "string", Description: description}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: props},
					},
				}},
			}},
		},
	}
}

// foreignSecret is a Secret nobody's operator manages (2 KiB of data).
func foreignSecret(ns string, i int) *corev1.Secret {
	data := make([]byte, 2048)
	_, _ = rand.Read(data)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("foreign-%05d", i), Labels: map[string]string{"app": "someone-else"}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"payload": data},
	}
}
