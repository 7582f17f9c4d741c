package crontab

import (
	"fmt"
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
	out := in.DeepCopy()
	spec, _, _ := unstructured.NestedMap(out.Object, "spec")
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
		out.SetAnnotations(annotations)
	}
	return out, unstructured.SetNestedMap(out.Object, spec, "spec")
}

func v2ToV1(in *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	out := in.DeepCopy()
	spec, _, _ := unstructured.NestedMap(out.Object, "spec")
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
		out.SetAnnotations(annotations)
	}
	spec["cronSpec"] = cronSpec
	return out, unstructured.SetNestedMap(out.Object, spec, "spec")
}
