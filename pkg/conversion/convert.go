package conversion

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Convert converts obj to toVersion of its group with the same checks as
// the webhook: apiVersion is set, metadata other than labels and
// annotations is restored, a changed name, namespace, uid or kind is an
// error, and a panic becomes an error. Failures are *Error.
//
// Like a Func, Convert owns obj: it may modify it and return it. Pass
// obj.DeepCopy() to keep the original.
func (c *Converter) Convert(obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, error) {
	toAPIVersion := joinAPIVersion(c.gk.Group, toVersion)
	apiVersion, _ := obj.Object["apiVersion"].(string)
	kind, _ := obj.Object["kind"].(string)
	meta, _ := obj.Object["metadata"].(map[string]any)
	if group, _ := splitAPIVersion(apiVersion); group != c.gk.Group || kind != c.gk.Kind {
		return nil, newError(ReasonUnsupported, apiVersion, kind, meta, toVersion,
			fmt.Errorf("this converter converts %s only", c.gk))
	}
	out, err := c.convert(obj, toVersion, toAPIVersion)
	if err != nil {
		return nil, err // not a typed nil *Error in a non-nil error
	}
	return out, nil
}

// convert is Convert after the kind check. toAPIVersion is an interface so
// the webhook boxes the desired apiVersion once per review, not per object.
func (c *Converter) convert(obj *unstructured.Unstructured, toVersion string, toAPIVersion any) (out *unstructured.Unstructured, err *Error) {
	apiVersion, _ := obj.Object["apiVersion"].(string)
	kind, _ := obj.Object["kind"].(string)
	meta, _ := obj.Object["metadata"].(map[string]any)
	_, from := splitAPIVersion(apiVersion)

	defer func() {
		// Recovering here, not in the HTTP handler, lets the answer name
		// the object; a panicking function must never take down a webhook
		// that the API server needs for every read of the kind.
		if r := recover(); r != nil {
			out, err = nil, newError(ReasonPanic, apiVersion, kind, meta, toVersion, &panicError{value: r, stack: debug.Stack()})
		}
	}()

	first, second, ok := c.route(from, toVersion)
	if !ok {
		return nil, newError(ReasonUnsupported, apiVersion, kind, meta, toVersion,
			fmt.Errorf("no conversion from %s to %s is registered for %s", from, toVersion, c.gk))
	}
	if first == nil {
		obj.Object["apiVersion"] = toAPIVersion
		return obj, nil
	}
	if meta != nil {
		obj.Object["metadata"] = copyMeta(meta)
	}
	out, ferr := first(obj)
	if ferr == nil && out != nil && second != nil {
		// The hub's own apiVersion, so the second function sees a
		// well-formed hub object.
		out.Object["apiVersion"] = c.hubAPIVersion
		out, ferr = second(out)
	}
	switch {
	case ferr != nil:
		return nil, newError(ReasonConvert, apiVersion, kind, meta, toVersion, ferr)
	case out == nil || out.Object == nil:
		return nil, newError(ReasonConvert, apiVersion, kind, meta, toVersion, errors.New("the conversion function returned no object"))
	}
	if k, _ := out.Object["kind"].(string); k == "" {
		// A function building a typed object often leaves TypeMeta empty;
		// the kind cannot be anything else, so fill it like apiVersion.
		out.Object["kind"] = kind
	}
	restored, merr := restoreMeta(kind, meta, out.Object)
	if merr != nil {
		return nil, newError(ReasonMetadata, apiVersion, kind, meta, toVersion, merr)
	}
	out.Object["metadata"] = restored
	out.Object["apiVersion"] = toAPIVersion
	return out, nil
}

func joinAPIVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

// splitAPIVersion splits "group/version"; a bare "v1" is the core group.
func splitAPIVersion(apiVersion string) (group, version string) {
	if g, v, ok := strings.Cut(apiVersion, "/"); ok {
		return g, v
	}
	return "", apiVersion
}
