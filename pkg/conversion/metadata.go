package conversion

import (
	"fmt"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The API server keeps only labels and annotations of a converted object's
// metadata and restores everything else from the object it sent, and it
// rejects a changed kind, name, namespace or uid with a message that does
// not say which object of a LIST was wrong. The webhook applies the same
// rule first, so what it answers is what the API server will store, and an
// error names the object.

// copyMeta is the metadata handed to a conversion function, so that the
// original stays untouched for restoreMeta. Nested values are copied too,
// because a function may edit a label map or an ownerReference in place.
// managedFields is shared: it is large, and no conversion edits it.
func copyMeta(meta map[string]any) map[string]any {
	cp := make(map[string]any, len(meta))
	for k, v := range meta {
		switch v.(type) {
		case map[string]any, []any:
			if k != "managedFields" {
				v = runtime.DeepCopyJSONValue(v)
			}
		}
		cp[k] = v
	}
	return cp
}

// restoreMeta checks converted against the original kind and metadata and
// returns the metadata the API server would store: orig with labels and
// annotations taken from converted. orig is reused, not copied: the
// conversion function never saw it.
func restoreMeta(kind string, orig map[string]any, converted map[string]any) (map[string]any, error) {
	if got, _ := converted["kind"].(string); got != kind {
		return nil, fmt.Errorf("kind changed from %q to %q", kind, got)
	}
	outMeta, ok := converted["metadata"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the converted object has no metadata (got %T)", converted["metadata"])
	}
	for _, key := range [...]string{"name", "namespace", "uid"} {
		if was, is := stringField(orig, key), stringField(outMeta, key); was != is {
			return nil, fmt.Errorf("metadata.%s changed from %q to %q: only labels and annotations may change", key, was, is)
		}
	}
	if orig == nil {
		orig = map[string]any{}
	}
	for _, key := range [...]string{"labels", "annotations"} {
		if err := keepStringMap(key, orig, outMeta); err != nil {
			return nil, err
		}
	}
	return orig, nil
}

// keepStringMap moves metadata.<key> from converted into orig, validating
// it as the API server does when it changed. Absent or null removes it.
func keepStringMap(key string, orig, converted map[string]any) error {
	raw := converted[key]
	if raw == nil {
		delete(orig, key)
		return nil
	}
	got, err := stringMap(raw)
	if err != nil {
		return fmt.Errorf("metadata.%s: %w", key, err)
	}
	was, _ := orig[key].(map[string]any)
	if !changed(was, got) {
		// Equal content: keep orig's map. Assigning would cost an
		// allocation when orig is a full small map.
		return nil
	}
	if errs := validateStringMap(key, got); len(errs) > 0 {
		return errs.ToAggregate()
	}
	orig[key] = got
	return nil
}

// stringMap accepts map[string]string too: a function may assign one
// directly, and it encodes to the same JSON.
func stringMap(raw any) (map[string]any, error) {
	switch m := raw.(type) {
	case map[string]any:
		for k, v := range m {
			if _, ok := v.(string); !ok {
				return nil, fmt.Errorf("value of %q must be a string, got %T", k, v)
			}
		}
		return m, nil
	case map[string]string:
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out, nil
	default:
		return nil, fmt.Errorf("must be a map of strings, got %T", raw)
	}
}

func changed(was, is map[string]any) bool {
	if len(was) != len(is) {
		return true
	}
	for k, v := range is {
		if w, ok := was[k]; !ok || w != v {
			return true
		}
	}
	return false
}

func validateStringMap(key string, m map[string]any) field.ErrorList {
	strs := make(map[string]string, len(m))
	for k, v := range m {
		strs[k] = v.(string)
	}
	path := field.NewPath("metadata", key)
	if key == "labels" {
		return metav1validation.ValidateLabels(strs, path)
	}
	return apivalidation.ValidateAnnotations(strs, path)
}
