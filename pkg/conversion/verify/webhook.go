package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// Webhook converts through a running conversion webhook at url, sending
// apiextensions.k8s.io/v1 ConversionReviews as the API server does.
type Webhook struct {
	URL    string
	Client *http.Client
}

// Convert implements Target.
func (w Webhook) Convert(obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, error) {
	raw, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	gv := obj.GroupVersionKind().GroupVersion()
	gv.Version = toVersion
	uid := types.UID(uuid.NewUUID())
	review := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: uid, DesiredAPIVersion: gv.String(), Objects: []runtime.RawExtension{{Raw: raw}}},
	}
	body, err := json.Marshal(review)
	if err != nil {
		return nil, err
	}
	resp, err := w.Client.Post(w.URL, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("webhook answered HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(answer))
	}
	var out apiextensionsv1.ConversionReview
	if err := json.Unmarshal(answer, &out); err != nil || out.Response == nil {
		return nil, fmt.Errorf("webhook did not answer a ConversionReview: %v", err)
	}
	if out.Response.UID != uid {
		return nil, fmt.Errorf("webhook answered uid %q for request %q", out.Response.UID, uid)
	}
	if out.Response.Result.Status != metav1.StatusSuccess {
		return nil, fmt.Errorf("webhook failed the conversion: %s", out.Response.Result.Message)
	}
	if len(out.Response.ConvertedObjects) != 1 {
		return nil, fmt.Errorf("webhook answered %d objects for 1", len(out.Response.ConvertedObjects))
	}
	converted, err := decodeObject(out.Response.ConvertedObjects[0].Raw)
	if err != nil {
		return nil, fmt.Errorf("webhook answered an object that is not JSON: %w", err)
	}
	return &unstructured.Unstructured{Object: converted}, nil
}
