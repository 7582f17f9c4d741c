package crontab_test

import (
	"bytes"
	"math/rand/v2"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookwright/hookwright/examples/crontab"
	"github.com/hookwright/hookwright/pkg/conversion"
	"github.com/hookwright/hookwright/pkg/conversion/conversiontest"
	"github.com/hookwright/hookwright/pkg/conversion/verify"
)

func cronTab(version string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(crontab.Group + "/" + version)
	u.SetKind(crontab.Kind)
	u.SetNamespace("default")
	u.SetName("c")
	u.SetUID("1234")
	return u
}

func TestConvertV1ToV2(t *testing.T) {
	got, err := crontab.Converter().Convert(cronTab("v1", map[string]any{"cronSpec": "30 2 * * 1-5", "image": "i"}), "v2")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"minute": "30", "hour": "2", "dayOfMonth": "*", "month": "*", "dayOfWeek": "1-5", "image": "i"}
	if spec := got.Object["spec"]; !equalMaps(spec.(map[string]any), want) {
		t.Fatalf("spec = %v, want %v", spec, want)
	}
	if got.GetAPIVersion() != "stable.example.com/v2" {
		t.Fatalf("apiVersion = %s", got.GetAPIVersion())
	}
}

func TestInvalidCronSpecFailsWithClearMessage(t *testing.T) {
	for _, spec := range []string{"* *", "", "1 2 3 4 5 6"} {
		_, err := crontab.Converter().Convert(cronTab("v1", map[string]any{"cronSpec": spec}), "v2")
		if err == nil || !strings.Contains(err.Error(), "needs five parts") || !strings.Contains(err.Error(), spec) {
			t.Errorf("cronSpec %q: error %v, want one saying it needs five parts and quoting the value", spec, err)
		}
	}
}

// Status, shared fields and an odd v1 spelling survive both round trips.
func TestRoundTrips(t *testing.T) {
	status := map[string]any{"active": int64(2), "lastScheduleTime": "2026-11-22T02:30:00Z"}
	objects := []*unstructured.Unstructured{
		cronTab("v1", map[string]any{"cronSpec": "30 2 * * *", "image": "i", "replicas": int64(3)}),
		cronTab("v1", map[string]any{"cronSpec": "30  2 *\t* *", "image": "i"}), // kept in an annotation
		cronTab("v2", map[string]any{"minute": "0", "hour": "*/4", "dayOfMonth": "1", "month": "*", "dayOfWeek": "*", "image": "i"}),
	}
	for _, obj := range objects {
		obj.Object["status"] = status
		obj.SetLabels(map[string]string{"team": "a"})
		conversiontest.RoundTrip(t, crontab.Converter(), obj, []string{"v1", "v2"})
	}
}

// fuzzSeeds is FuzzRoundTrip's seed corpus. A plain `go test` (so `make
// test`) runs each seed as a subtest, without -fuzz; `make fuzz` explores
// beyond them. TestFuzzSeedsReachEveryField checks that the seeds matter.
var fuzzSeeds = func() []int64 {
	seeds := make([]int64, 20)
	for i := range seeds {
		seeds[i] = int64(i)
	}
	return seeds
}()

// FuzzRoundTrip feeds random valid v2 objects (from the CRD's own v2
// schema) through v2 -> v1 -> v2. Run longer with `make fuzz`.
func FuzzRoundTrip(f *testing.F) {
	schema := v2Schema(f)
	for _, seed := range fuzzSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		conversiontest.RoundTrip(t, crontab.Converter(), fuzzObject(schema, seed), []string{"v2", "v1"})
	})
}

// fuzzObject is the random v2 CronTab of a seed. A CronTab without spec
// stays without one: the converter must carry it over as it is.
func fuzzObject(schema *apiextensionsv1.JSONSchemaProps, seed int64) *unstructured.Unstructured {
	r := rand.New(rand.NewPCG(uint64(seed), 0))
	obj := &unstructured.Unstructured{Object: conversiontest.RandomObject(r, schema)}
	if spec, ok := obj.Object["spec"].(map[string]any); ok {
		for _, name := range []string{"minute", "hour", "dayOfMonth", "month", "dayOfWeek"} {
			// The schema's pattern says one field without spaces; the
			// generator does not know patterns.
			value, _ := spec[name].(string)
			spec[name] = strings.Join(strings.Fields(value+"x"), "_")
		}
	}
	obj.SetAPIVersion("stable.example.com/v2")
	obj.SetKind(crontab.Kind)
	obj.SetName("fuzz")
	obj.SetNamespace("default")
	return obj
}

// The seed corpus is what `make test` runs of FuzzRoundTrip, so it must
// reach every field of the v2 schema, and a CronTab without spec.
func TestFuzzSeedsReachEveryField(t *testing.T) {
	schema := v2Schema(t)
	want := map[string]bool{"(no spec)": true}
	for _, part := range []string{"spec", "status"} {
		for name := range schema.Properties[part].Properties {
			want[part+"."+name] = true
		}
	}
	if len(want) < 10 {
		t.Fatalf("the v2 schema has only %v: has crd.yaml changed?", want)
	}
	reached := map[string]bool{}
	for _, seed := range fuzzSeeds {
		obj := fuzzObject(schema, seed)
		if _, ok := obj.Object["spec"]; !ok {
			reached["(no spec)"] = true
		}
		for _, part := range []string{"spec", "status"} {
			m, _ := obj.Object[part].(map[string]any)
			for name := range m {
				reached[part+"."+name] = true
			}
		}
	}
	for field := range want {
		if !reached[field] {
			t.Errorf("no seed of FuzzRoundTrip has %s: add a seed that does", field)
		}
	}
}

func v2Schema(t testing.TB) *apiextensionsv1.JSONSchemaProps {
	crd, err := verify.LoadCRD("crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == "v2" {
			return v.Schema.OpenAPIV3Schema
		}
	}
	t.Fatal("no v2 in crd.yaml")
	return nil
}

func TestSamplesVerifyInProcess(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := verify.Main([]string{"--crd", "crd.yaml", "--samples", "samples", "--in-process"}, &out, &errOut, crontab.Converter()); code != 0 {
		t.Fatalf("verify exited %d:\n%s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "ok: 4 sample(s)") {
		t.Fatalf("unexpected output: %s", out.String())
	}
}

// The broken fixture fails with a diff naming the mismatching field, and
// with the conversion error of the invalid cronSpec, through a running
// webhook as `hookwright verify --webhook` uses it.
func TestBrokenSamplesFailThroughAWebhook(t *testing.T) {
	server := httptest.NewTLSServer(conversion.NewWebhook(crontab.Converter()))
	defer server.Close()
	var out, errOut bytes.Buffer
	code := verify.Main([]string{"--crd", "crd.yaml", "--samples", filepath.Join("testdata", "broken"), "--webhook", server.URL + "/convert", "--insecure-skip-tls-verify"}, &out, &errOut, nil)
	if code != 1 {
		t.Fatalf("verify exited %d, want 1:\n%s%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{"does not match", `"hour"`, `-`, `+`, "needs five parts", "invalid.yaml"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func equalMaps(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
