package testcluster

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// WidgetConverter is a minimal conversion webhook for WidgetCRD: v1 has
// spec.value, v2 calls it spec.amount. It counts the reviews it served.
type WidgetConverter struct{ Calls atomic.Int64 }

// ServeHTTP implements http.Handler.
func (w *WidgetConverter) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.Calls.Add(1)
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(rw, "bad review", http.StatusBadRequest)
		return
	}
	resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range review.Request.Objects {
		var obj map[string]any
		if err := json.Unmarshal(raw.Raw, &obj); err != nil {
			resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
			break
		}
		if spec, _ := obj["spec"].(map[string]any); spec != nil {
			from, to := "amount", "value"
			if strings.HasSuffix(review.Request.DesiredAPIVersion, "/v2") {
				from, to = "value", "amount"
			}
			if v, ok := spec[from]; ok {
				spec[to] = v
				delete(spec, from)
			}
		}
		obj["apiVersion"] = review.Request.DesiredAPIVersion
		out, _ := json.Marshal(obj)
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: out})
	}
	review.Response, review.Request = resp, nil
	_ = json.NewEncoder(rw).Encode(review)
}

// WidgetCRD is a two-version CRD, widgets.<group>: v1 (storage) has
// spec.value, v2 has spec.amount. With a service it converts through that
// Service (port 443, path /convert) trusting caBundle; without, its
// conversion is left for the API server to default (None).
func WidgetCRD(group, namespace, service string, caBundle []byte) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: widgetSchema("value")},
				{Name: "v2", Served: true, Storage: false, Schema: widgetSchema("amount")},
			},
		},
	}
	if service != "" {
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ConversionReviewVersions: []string{"v1"},
				ClientConfig: &apiextensionsv1.WebhookClientConfig{
					Service:  &apiextensionsv1.ServiceReference{Namespace: namespace, Name: service, Path: ptr.To("/convert"), Port: ptr.To[int32](443)},
					CABundle: caBundle,
				},
			},
		}
	}
	return crd
}

func widgetSchema(field string) *apiextensionsv1.CustomResourceValidation {
	return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{field: {Type: "string"}}},
		},
	}}
}
