package verify

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// decodeObject decodes a JSON object the one way verify decodes every
// object it compares: samples (after YAML to JSON), webhook answers and,
// re-encoded, in-process answers. It is the API server's and client-go's
// decoding (unstructured.Unstructured's): integers as int64, other numbers
// as float64. A sample's `replicas: 1` and a webhook's "replicas":1 are
// then the same int64(1), whatever decoder first read either.
func decodeObject(raw []byte) (map[string]any, error) {
	obj := map[string]any{}
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// normalize is obj as its JSON value, decoded by decodeObject: only the
// JSON value of an answer counts (it is all the API server sees), not
// which Go number type a Target used for it.
func normalize(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding the answer as JSON: %w", err)
	}
	decoded, err := decodeObject(raw)
	if err != nil {
		return nil, fmt.Errorf("decoding the answer's JSON: %w", err)
	}
	return &unstructured.Unstructured{Object: decoded}, nil
}
