package conversiontest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookwright/hookwright/pkg/conversion"
)

// RoundTrip checks, for every ordered pair of distinct versions (a, b),
// that converting obj's version-a form to b and back to a gives that form
// exactly: spec, status, metadata and fields unknown to the schema alike.
// A conversion that drops a field the other version cannot hold (say
// status.conditions) fails here, with a diff, instead of silently losing
// data when a client reads an old version and writes it back.
//
// Every conversion goes through the webhook's handler as JSON, like a
// real ConversionReview, so the metadata rule and JSON number types apply
// exactly as in production. obj is not modified. Failures are reported
// with t.Errorf, so one call reports every broken pair.
func RoundTrip(t testing.TB, conv *conversion.Converter, obj *unstructured.Unstructured, versions []string) {
	t.Helper()
	wh := conv.Handler()
	group := conv.GroupKind().Group
	original, err := normalize(obj)
	if err != nil {
		t.Errorf("RoundTrip: %v", err)
		return
	}
	for _, a := range versions {
		// The object as version a, which b -> a must reproduce.
		start, err := convert(wh, original, apiVersion(group, a))
		if err != nil {
			t.Errorf("RoundTrip: to %s: %v", a, err)
			continue
		}
		for _, b := range versions {
			if a == b {
				continue
			}
			there, err := convert(wh, start, apiVersion(group, b))
			if err != nil {
				t.Errorf("RoundTrip: %s -> %s: %v", a, b, err)
				continue
			}
			back, err := convert(wh, there, apiVersion(group, a))
			if err != nil {
				t.Errorf("RoundTrip: %s -> %s -> %s: %v", a, b, a, err)
				continue
			}
			if diff := cmp.Diff(start.Object, back.Object); diff != "" {
				t.Errorf("RoundTrip: %s %s: %s -> %s -> %s is not lossless (-%s +after round trip):\n%s",
					conv.GroupKind(), obj.GetName(), a, b, a, a, diff)
			}
		}
	}
}

// normalize is obj as the API server would send it: through JSON, so
// numbers are int64 or float64 and nothing aliases obj.
func normalize(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", obj.GetName(), err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", obj.GetName(), err)
	}
	return out, nil
}

// convert sends obj to wh in a ConversionReview and returns the answer.
func convert(wh http.Handler, obj *unstructured.Unstructured, desired string) (*unstructured.Unstructured, error) {
	body, err := json.Marshal(map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "ConversionReview",
		"request": map[string]any{
			"uid":               "roundtrip",
			"desiredAPIVersion": desired,
			"objects":           []any{obj.Object},
		},
	})
	if err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	wh.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("webhook answered HTTP %d: %s", rec.Code, rec.Body.String())
	}
	var review apiextensionsv1.ConversionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil {
		return nil, fmt.Errorf("decoding the webhook's answer: %w", err)
	}
	switch resp := review.Response; {
	case resp == nil:
		return nil, fmt.Errorf("webhook answered without a response")
	case resp.Result.Status != metav1.StatusSuccess:
		return nil, fmt.Errorf("%s", resp.Result.Message)
	case len(resp.ConvertedObjects) != 1:
		return nil, fmt.Errorf("webhook answered %d objects for 1", len(resp.ConvertedObjects))
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(review.Response.ConvertedObjects[0].Raw); err != nil {
		return nil, fmt.Errorf("decoding the converted object: %w", err)
	}
	return out, nil
}

func apiVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}
