package conversion

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Typed adapts a conversion between Go types, e.g. func(*v1.CronTab)
// (*v2.CronTab, error), to a Func. It costs two reflective copies per
// object, and drops fields the Go types do not have (conversiontest's
// RoundTrip reports that); write a Func on the unstructured object where
// either matters. Kind and apiVersion need not be set on the result; types
// without ObjectMeta keep the input's metadata, types with it must copy it
// (out.ObjectMeta = in.ObjectMeta), or the renamed object is an error.
func Typed[From, To any](fn func(in *From) (*To, error)) Func {
	return func(in *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		from := new(From)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(in.Object, from); err != nil {
			return nil, fmt.Errorf("reading into %T: %w", from, err)
		}
		to, err := fn(from)
		if err != nil {
			return nil, err
		}
		if to == nil {
			return nil, nil
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(to)
		if err != nil {
			return nil, fmt.Errorf("writing %T: %w", to, err)
		}
		if _, ok := obj["metadata"]; !ok {
			// Types without ObjectMeta keep the object's labels and
			// annotations rather than dropping them.
			obj["metadata"] = in.Object["metadata"]
		}
		return &unstructured.Unstructured{Object: obj}, nil
	}
}
