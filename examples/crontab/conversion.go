package crontab

import (
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookwright/hookwright/pkg/conversion"
)

// Group and Kind of the example CRD.
const (
	Group = "stable.example.com"
	Kind  = "CronTab"
)

// annotationCronSpec keeps a v1 cronSpec that v2 cannot spell (extra
// spaces), so that v1 -> v2 -> v1 gives back the exact string, as
// Kubernetes' own types keep lossy fields in annotations.
const annotationCronSpec = "stable.example.com/v1-cronspec"

// fields are v2's names of the five cron fields, in cronSpec order.
var fields = []string{"minute", "hour", "dayOfMonth", "month", "dayOfWeek"}

// Converter converts CronTabs between v1 and v2, with v2 as the hub.
// Status and every field the versions share are carried over untouched.
func Converter() *conversion.Converter {
	return conversion.NewConverter(Group, Kind).
		AddHub("v2").
		AddSpoke("v1", v1ToV2, v2ToV1)
}

func v1ToV2(in *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	out, spec := withOwnSpec(in)
	if spec == nil {
		return out, nil
	}
	cronSpec, _ := spec["cronSpec"].(string)
	delete(spec, "cronSpec")
	parts := strings.Fields(cronSpec)
	if len(parts) != len(fields) {
		return nil, fmt.Errorf("invalid spec string, needs five parts: %q", cronSpec)
	}
	for i, name := range fields {
		spec[name] = parts[i]
	}
	if strings.Join(parts, " ") != cronSpec {
		annotations := out.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[annotationCronSpec] = cronSpec
		setAnnotations(out, annotations)
	}
	return out, nil
}

func v2ToV1(in *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	out, spec := withOwnSpec(in)
	if spec == nil {
		return out, nil
	}
	parts := make([]string, 0, len(fields))
	for _, name := range fields {
		value, _ := spec[name].(string)
		if value == "" || strings.ContainsAny(value, " \t") {
			return nil, fmt.Errorf("spec.%s must be one non-empty cron field, got %q", name, value)
		}
		parts = append(parts, value)
		delete(spec, name)
	}
	cronSpec := strings.Join(parts, " ")
	annotations := out.GetAnnotations()
	if kept, ok := annotations[annotationCronSpec]; ok {
		if strings.Join(strings.Fields(kept), " ") == cronSpec {
			cronSpec = kept // the exact v1 spelling of the same schedule
		}
		delete(annotations, annotationCronSpec)
		if len(annotations) == 0 {
			annotations = nil // do not leave an empty map the original did not have
		}
		setAnnotations(out, annotations)
	}
	spec["cronSpec"] = cronSpec
	return out, nil
}

// withOwnSpec copies in only where a conversion writes: the top-level map
// and spec (returned, nil when in has none). Everything else (metadata,
// status, fields the versions share) is shared with in, which is never
// written: a deep copy of whole objects was most of the cost of a review.
func withOwnSpec(in *unstructured.Unstructured) (*unstructured.Unstructured, map[string]any) {
	out := &unstructured.Unstructured{Object: maps.Clone(in.Object)}
	spec, _ := in.Object["spec"].(map[string]any)
	if spec == nil {
		return out, nil
	}
	spec = maps.Clone(spec)
	out.Object["spec"] = spec
	return out, spec
}

// setAnnotations sets out's annotations on a metadata map of its own:
// withOwnSpec shares metadata with the object converted.
func setAnnotations(out *unstructured.Unstructured, annotations map[string]string) {
	if metadata, ok := out.Object["metadata"].(map[string]any); ok {
		out.Object["metadata"] = maps.Clone(metadata)
	}
	out.SetAnnotations(annotations)
}
