package conversiontest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookwright/hookwright/pkg/conversion"
)

// recorder collects what RoundTrip reports, so tests can check that it
// fails when it should. Anything else goes to the real test.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

var cronFields = []string{"minute", "hour", "dayOfMonth", "month", "dayOfWeek"}

// cronTab converts the KEP's CronTab; dropConditions makes v2 -> v1 lose
// status.conditions, as kubebuilder's CronJob sample does.
func cronTab(dropConditions bool) *conversion.Converter {
	toHub := func(in *unstructured.Unstructured) (*unstructured.Unstructured, error) {
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
	fromHub := func(in *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		spec, _ := in.Object["spec"].(map[string]any)
		parts := make([]string, len(cronFields))
		for i, f := range cronFields {
			parts[i], _ = spec[f].(string)
			delete(spec, f)
		}
		spec["cronSpec"] = strings.Join(parts, " ")
		if dropConditions {
			unstructured.RemoveNestedField(in.Object, "status", "conditions")
		}
		return in, nil
	}
	return conversion.NewConverter("stable.example.com", "CronTab").AddHub("v2").AddSpoke("v1", toHub, fromHub)
}

func cronV2() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "stable.example.com/v2",
		"kind":       "CronTab",
		"metadata":   map[string]any{"name": "my-cron", "namespace": "default", "uid": "123", "labels": map[string]any{"app": "cron"}},
		"spec": map[string]any{
			"minute": "*/5", "hour": "*", "dayOfMonth": "*", "month": "*", "dayOfWeek": "1-5", "image": "busybox",
			"unknownToTheSchema": map[string]any{"kept": true, "count": 3}, // int: RoundTrip normalizes it
		},
		"status": map[string]any{
			"active":     int64(2),
			"conditions": []any{map[string]any{"type": "Ready", "status": "True"}},
		},
	}}
}

func TestRoundTripPassesForALosslessConversion(t *testing.T) {
	r := &recorder{TB: t}
	obj := cronV2()
	before := obj.UnstructuredContent()
	before, _ = copyJSON(before)
	RoundTrip(r, cronTab(false), obj, []string{"v1", "v2"})
	if len(r.errors) > 0 {
		t.Errorf("RoundTrip reported:\n%s", strings.Join(r.errors, "\n"))
	}
	if !equal(before, obj.Object) {
		t.Error("RoundTrip modified its argument")
	}
}

func TestRoundTripReportsLostFields(t *testing.T) {
	r := &recorder{TB: t}
	RoundTrip(r, cronTab(true), cronV2(), []string{"v1", "v2"})
	if len(r.errors) != 1 {
		t.Fatalf("want one report (v2 -> v1 -> v2), got %d:\n%s", len(r.errors), strings.Join(r.errors, "\n"))
	}
	for _, part := range []string{"CronTab.stable.example.com my-cron: v2 -> v1 -> v2 is not lossless", `"conditions"`, `"Ready"`} {
		if !strings.Contains(r.errors[0], part) {
			t.Errorf("report does not contain %q:\n%s", part, r.errors[0])
		}
	}
}

func TestRoundTripReportsFailedConversions(t *testing.T) {
	r := &recorder{TB: t}
	obj := cronV2()
	obj.Object["spec"].(map[string]any)["minute"] = "every 5" // a space: v1's cronSpec no longer has five parts
	RoundTrip(r, cronTab(false), obj, []string{"v1", "v2"})
	joined := strings.Join(r.errors, "\n")
	if !strings.Contains(joined, `RoundTrip: v2 -> v1 -> v2: converting stable.example.com/v1 CronTab default/my-cron (uid 123) to v2: invalid spec string, needs five parts: "every 5 * * * 1-5"`) {
		t.Errorf("reports:\n%s", joined)
	}
}

func TestRoundTripAppliesTheMetadataRule(t *testing.T) {
	renaming := conversion.NewConverter("stable.example.com", "CronTab").
		AddPair("v1", "v2", func(u *unstructured.Unstructured) (*unstructured.Unstructured, error) { return u, nil }).
		AddPair("v2", "v1", func(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
			u.SetName("renamed")
			return u, nil
		})
	r := &recorder{TB: t}
	RoundTrip(r, renaming, cronV2(), []string{"v1", "v2"})
	if joined := strings.Join(r.errors, "\n"); !strings.Contains(joined, `metadata.name changed from "my-cron" to "renamed"`) {
		t.Errorf("reports:\n%s", joined)
	}
}

// copyJSON copies through JSON; DeepCopy refuses the int in cronV2.
func copyJSON(m map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(raw, &out)
}
