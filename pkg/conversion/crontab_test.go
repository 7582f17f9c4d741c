package conversion

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The CronTab of the conversion KEP: v1 has spec.cronSpec, v2 (the hub)
// splits it into five fields.

const (
	group = "stable.example.com"
	v1    = group + "/v1"
	v2    = group + "/v2"
)

var cronFields = []string{"minute", "hour", "dayOfMonth", "month", "dayOfWeek"}

func cronV1ToV2(in *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	spec, _ := in.Object["spec"].(map[string]any)
	cronSpec, _ := spec["cronSpec"].(string)
	parts := strings.Split(cronSpec, " ")
	if len(parts) != len(cronFields) {
		return nil, fmt.Errorf("invalid spec string, needs five parts: %q", cronSpec)
	}
	delete(spec, "cronSpec")
	for i, f := range cronFields {
		spec[f] = parts[i]
	}
	return in, nil
}

func cronV2ToV1(in *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	spec, _ := in.Object["spec"].(map[string]any)
	parts := make([]string, len(cronFields))
	for i, f := range cronFields {
		parts[i], _ = spec[f].(string)
		delete(spec, f)
	}
	if spec != nil {
		spec["cronSpec"] = strings.Join(parts, " ")
	}
	return in, nil
}

func cronConverter() *Converter {
	return NewConverter(group, "CronTab").AddHub("v2").AddSpoke("v1", cronV1ToV2, cronV2ToV1)
}

// cronV1 is a stored v1 CronTab as the API server sends it.
func cronV1(namespace, name, uid, cronSpec string) map[string]any {
	return map[string]any{
		"apiVersion": v1,
		"kind":       "CronTab",
		"metadata": map[string]any{
			"name":              name,
			"namespace":         namespace,
			"uid":               uid,
			"resourceVersion":   "4711",
			"generation":        int64(3),
			"creationTimestamp": "2026-01-02T03:04:05Z",
			"labels":            map[string]any{"app": "cron"},
			"annotations":       map[string]any{"team": "batch"},
		},
		"spec":   map[string]any{"cronSpec": cronSpec, "image": "busybox:1.36"},
		"status": map[string]any{"lastScheduleTime": "2026-01-02T03:05:00Z", "active": int64(1)},
	}
}

// reviewBody is a ConversionReview request in apiVersion reviewAPIVersion.
func reviewBody(t testing.TB, reviewAPIVersion, uid, desired string, objects ...map[string]any) []byte {
	t.Helper()
	if objects == nil {
		objects = []map[string]any{}
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": reviewAPIVersion,
		"kind":       "ConversionReview",
		"request":    map[string]any{"uid": uid, "desiredAPIVersion": desired, "objects": objects},
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// manyCronV1 is n distinct v1 CronTabs.
func manyCronV1(n int) []map[string]any {
	objs := make([]map[string]any, n)
	for i := range objs {
		objs[i] = cronV1("default", fmt.Sprintf("cron-%03d", i), fmt.Sprintf("uid-%03d", i), fmt.Sprintf("%d * * * *", i%60))
	}
	return objs
}
