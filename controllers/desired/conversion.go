package desired

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// Conversion is the spec.conversion a CRD needs to call def's webhook
// through service in namespace, trusting caBundle.
func Conversion(namespace, service string, def v1alpha1.WebhookDefinition, caBundle []byte) *apiextensionsv1.CustomResourceConversion {
	port := def.ContainerPort
	if port == 0 {
		port = 443
	}
	webhookPath := "/"
	if def.WebhookPath != nil {
		webhookPath = *def.WebhookPath
	}
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig: &apiextensionsv1.WebhookClientConfig{
				Service:  &apiextensionsv1.ServiceReference{Namespace: namespace, Name: service, Path: ptr.To(webhookPath), Port: ptr.To(port)},
				CABundle: caBundle,
			},
			ConversionReviewVersions: append([]string(nil), def.AdmissionReviewVersions...),
		},
	}
}
