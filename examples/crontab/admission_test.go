package crontab_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/hookwright/hookwright/examples/crontab"
)

// validV2 is a fresh valid v2 spec: defaulting changes the map it gets.
func validV2() map[string]any {
	return map[string]any{"minute": "30", "hour": "2", "dayOfMonth": "*", "month": "*", "dayOfWeek": "1-5"}
}

func withImage(spec map[string]any, image string) map[string]any {
	out := map[string]any{"image": image}
	for k, v := range spec {
		out[k] = v
	}
	return out
}

func TestValidate(t *testing.T) {
	noSpec := cronTab("v2", nil)
	delete(noSpec.Object, "spec")
	other := cronTab("v1", map[string]any{"cronSpec": "* * * * *"})
	other.SetKind("CronJob")
	v3 := cronTab("v3", map[string]any{"cronSpec": "* * * * *"})
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want []string // one substring per expected field error; none: valid
	}{
		{"v1 valid", cronTab("v1", map[string]any{"cronSpec": "*/5 * * * 1-5", "image": "i"}), nil},
		{"v2 valid", cronTab("v2", validV2()), nil},
		{"v2 valid with names and lists", cronTab("v2", map[string]any{"minute": "0,30", "hour": "9-17/2", "dayOfMonth": "?", "month": "JAN-JUN", "dayOfWeek": "MON-FRI"}), nil},
		{"no spec: the converter carries it over, Hookwright's dry-run creates it", noSpec, nil},
		{"null spec", cronTab("v1", nil), nil},
		{"v1 minute out of range", cronTab("v1", map[string]any{"cronSpec": "61 * * * *"}), []string{
			`spec.cronSpec: Invalid value: "61 * * * *": minute: 61 is out of range 0-59; a valid cronSpec is for example "30 2 * * 1-5" (02:30 Monday to Friday)`,
		}},
		{"v1 two fields", cronTab("v1", map[string]any{"cronSpec": "* *"}), []string{`spec.cronSpec: Invalid value: "* *": has 2 fields, needs five`}},
		{"v1 descriptor", cronTab("v1", map[string]any{"cronSpec": "@weekly"}), []string{`write "0 0 * * 0" instead`}},
		{"v1 spec without schedule", cronTab("v1", map[string]any{"image": "i"}), []string{
			`spec.cronSpec: Required value: a CronTab with a spec needs a schedule: five fields, minute hour day-of-month month day-of-week, for example "30 2 * * 1-5"`,
		}},
		{"v1 cronSpec not a string", cronTab("v1", map[string]any{"cronSpec": int64(5)}), []string{"spec.cronSpec: Invalid value: 5: must be a string"}},
		{"spec not an object", func() *unstructured.Unstructured {
			u := cronTab("v1", nil)
			u.Object["spec"] = "every day"
			return u
		}(), []string{"spec: Invalid value: \"every day\": must be an object"}},
		{"v2 two bad fields, each named", cronTab("v2", map[string]any{"minute": "60", "hour": "2", "dayOfMonth": "*", "month": "13", "dayOfWeek": "1-5"}), []string{
			`spec.minute: Invalid value: "60": minute: 60 is out of range 0-59; a valid minute is for example "30"`,
			`spec.month: Invalid value: "13": month: 13 is out of range 1-12 (or a name JAN-DEC); a valid month is for example "JAN-JUN"`,
		}},
		{"v2 missing field", cronTab("v2", map[string]any{"minute": "30", "hour": "2", "dayOfMonth": "*", "month": "*"}), []string{
			`spec.dayOfWeek: Required value: a CronTab with a spec needs all five schedule fields, for example minute: "30", hour: "2", dayOfMonth: "*", month: "*", dayOfWeek: "1-5" (02:30 Monday to Friday)`,
		}},
		{"v2 field with a space", cronTab("v2", withImage(map[string]any{"minute": "1 2", "hour": "2", "dayOfMonth": "*", "month": "*", "dayOfWeek": "*"}, "i")), []string{
			`spec.minute: Invalid value: "1 2": must be one cron field without spaces`,
		}},
		{"another kind", other, []string{`apiVersion: Unsupported value: "stable.example.com/v1, kind CronJob": supported values: "stable.example.com/v1, kind CronTab", "stable.example.com/v2, kind CronTab"`}},
		{"another version", v3, []string{`apiVersion: Unsupported value: "stable.example.com/v3, kind CronTab"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := crontab.Validate(tc.obj)
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors, want %d: %v", len(errs), len(tc.want), errs)
			}
			for i, want := range tc.want {
				if !strings.Contains(errs[i].Error(), want) {
					t.Errorf("error %d:\n  %s\nwant it to contain\n  %s", i, errs[i].Error(), want)
				}
			}
		})
	}
}

func TestValidatorAnswersInvalidWithEveryCause(t *testing.T) {
	obj := cronTab("v2", map[string]any{"minute": "60", "hour": "24", "dayOfMonth": "*", "month": "*", "dayOfWeek": "*"})
	_, err := crontab.Validator{}.ValidateCreate(context.Background(), obj)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("err = %v, want a 422 Invalid", err)
	}
	status := err.(apierrors.APIStatus).Status()
	if status.Details == nil || len(status.Details.Causes) != 2 || status.Details.Causes[1].Field != "spec.hour" {
		t.Errorf("causes = %+v, want spec.minute and spec.hour", status.Details)
	}
	if want := `CronTab.stable.example.com "c" is invalid: [spec.minute: Invalid value: "60"`; !strings.HasPrefix(status.Message, want) {
		t.Errorf("message %q, want it to start with %q", status.Message, want)
	}
}

// An update that keeps an invalid stored schedule passes with a warning
// (so a CronTab stored before the webhook can still be relabelled or have
// its finalizers removed); one that changes the schedule to an invalid one
// is refused, as is a create.
func TestValidateUpdateRatchets(t *testing.T) {
	stored := cronTab("v1", map[string]any{"cronSpec": "61 * * * *", "image": "a"})
	for _, tc := range []struct {
		name        string
		update      map[string]any
		wantErr     string
		wantWarning string
	}{
		{"same invalid schedule, new image", map[string]any{"cronSpec": "61 * * * *", "image": "b"}, "", "unchanged invalid schedule, fix it: spec.cronSpec: Invalid value"},
		{"fixed", map[string]any{"cronSpec": "1 * * * *", "image": "a"}, "", ""},
		{"another invalid schedule", map[string]any{"cronSpec": "62 * * * *", "image": "a"}, "62 is out of range 0-59", ""},
		{"schedule removed", map[string]any{"image": "a"}, "spec.cronSpec: Required value", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warnings, err := crontab.Validator{}.ValidateUpdate(context.Background(), stored, cronTab("v1", tc.update))
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
			if tc.wantWarning == "" && len(warnings) > 0 || tc.wantWarning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tc.wantWarning)) {
				t.Errorf("warnings = %q, want %q", warnings, tc.wantWarning)
			}
		})
	}
	var v crontab.Validator
	if _, err := v.ValidateCreate(context.Background(), stored); err == nil {
		t.Error("a create with the invalid schedule passed")
	}
	if _, err := v.ValidateDelete(context.Background(), stored); err != nil {
		t.Errorf("delete refused: %v", err)
	}
}

func TestSetDefaults(t *testing.T) {
	noSpec := cronTab("v1", nil)
	delete(noSpec.Object, "spec")
	for _, tc := range []struct {
		name    string
		obj     *unstructured.Unstructured
		want    any // spec after defaulting
		changed bool
	}{
		{"v1 without image", cronTab("v1", map[string]any{"cronSpec": "* * * * *"}), map[string]any{"cronSpec": "* * * * *", "image": crontab.DefaultImage}, true},
		{"v2 without image", cronTab("v2", validV2()), withImage(validV2(), crontab.DefaultImage), true},
		{"empty image", cronTab("v1", map[string]any{"cronSpec": "* * * * *", "image": ""}), map[string]any{"cronSpec": "* * * * *", "image": crontab.DefaultImage}, true},
		{"image kept", cronTab("v2", withImage(validV2(), "mine:1")), withImage(validV2(), "mine:1"), false},
		{"replicas untouched", cronTab("v1", map[string]any{"cronSpec": "* * * * *", "image": "i", "replicas": int64(0)}), map[string]any{"cronSpec": "* * * * *", "image": "i", "replicas": int64(0)}, false},
		{"no spec: left alone (a spec with only an image has no schedule)", noSpec, nil, false},
		{"null spec", cronTab("v1", nil), nil, false},
		{"image not a string: the schema's to refuse", cronTab("v1", map[string]any{"image": int64(1)}), map[string]any{"image": int64(1)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changed := crontab.SetDefaults(tc.obj)
			var got any
			if spec, _ := tc.obj.Object["spec"].(map[string]any); spec != nil {
				got = spec
			}
			if tc.want == nil {
				if got != nil {
					t.Errorf("spec = %v, want none", got)
				}
			} else if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			if crontab.SetDefaults(tc.obj) {
				t.Error("a second call changed the object: defaulting must be idempotent")
			}
		})
	}
}

// The handlers as the API server calls them: AdmissionReview v1 JSON in,
// AdmissionReview out, on the paths the WebhookInstall names.
func TestAdmissionReviewsOverHTTP(t *testing.T) {
	server := httptest.NewServer(crontab.NewHandler())
	defer server.Close()

	review := func(t *testing.T, path string, op admissionv1.Operation, obj, old *unstructured.Unstructured) *admissionv1.AdmissionResponse {
		t.Helper()
		req := &admissionv1.AdmissionRequest{UID: "req-1", Operation: op, Namespace: "default", Name: obj.GetName(),
			Kind:     metav1.GroupVersionKind{Group: crontab.Group, Version: obj.GroupVersionKind().Version, Kind: crontab.Kind},
			Resource: metav1.GroupVersionResource{Group: crontab.Group, Version: obj.GroupVersionKind().Version, Resource: "crontabs"}}
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		req.Object.Raw = raw
		if old != nil {
			if req.OldObject.Raw, err = json.Marshal(old); err != nil {
				t.Fatal(err)
			}
		}
		body, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(server.URL+path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s answered %s", path, resp.Status)
		}
		var out admissionv1.AdmissionReview
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || out.Response == nil || out.Response.UID != "req-1" {
			t.Fatalf("not an AdmissionReview v1 answering req-1: %+v", out)
		}
		return out.Response
	}

	t.Run("validate refuses an invalid cronSpec with 422 and the message", func(t *testing.T) {
		resp := review(t, crontab.ValidatePath, admissionv1.Create, cronTab("v1", map[string]any{"cronSpec": "0 25 * * *"}), nil)
		if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusUnprocessableEntity || resp.Result.Reason != metav1.StatusReasonInvalid {
			t.Fatalf("response %+v, want refused 422 Invalid", resp)
		}
		for _, want := range []string{`spec.cronSpec: Invalid value: "0 25 * * *"`, "hour: 25 is out of range 0-23", `for example "30 2 * * 1-5"`} {
			if !strings.Contains(resp.Result.Message, want) {
				t.Errorf("message %q lacks %q", resp.Result.Message, want)
			}
		}
	})
	t.Run("validate allows a valid v2 CronTab", func(t *testing.T) {
		if resp := review(t, crontab.ValidatePath, admissionv1.Create, cronTab("v2", validV2()), nil); !resp.Allowed {
			t.Fatalf("refused: %+v", resp.Result)
		}
	})
	t.Run("validate allows an update keeping a stored invalid schedule, with a warning", func(t *testing.T) {
		old := cronTab("v1", map[string]any{"cronSpec": "0 25 * * *"})
		obj := cronTab("v1", map[string]any{"cronSpec": "0 25 * * *"})
		obj.SetLabels(map[string]string{"team": "a"})
		resp := review(t, crontab.ValidatePath, admissionv1.Update, obj, old)
		if !resp.Allowed || len(resp.Warnings) != 1 {
			t.Fatalf("response %+v, want allowed with one warning", resp)
		}
	})
	t.Run("mutate patches in the default image", func(t *testing.T) {
		resp := review(t, crontab.MutatePath, admissionv1.Create, cronTab("v2", validV2()), nil)
		if !resp.Allowed || resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
			t.Fatalf("response %+v, want allowed with a JSON patch", resp)
		}
		var patch []map[string]any
		if err := json.Unmarshal(resp.Patch, &patch); err != nil {
			t.Fatal(err)
		}
		want := []map[string]any{{"op": "add", "path": "/spec/image", "value": crontab.DefaultImage}}
		if diff := cmp.Diff(want, patch); diff != "" {
			t.Errorf("patch (-want +got):\n%s", diff)
		}
	})
	t.Run("mutate leaves a CronTab with an image or without spec alone", func(t *testing.T) {
		noSpec := cronTab("v1", nil)
		delete(noSpec.Object, "spec")
		for _, obj := range []*unstructured.Unstructured{cronTab("v1", map[string]any{"cronSpec": "* * * * *", "image": "mine"}), noSpec} {
			if resp := review(t, crontab.MutatePath, admissionv1.Create, obj, nil); !resp.Allowed || resp.PatchType != nil || len(resp.Patch) != 0 {
				t.Errorf("%v: response %+v, want allowed without a patch", obj.Object, resp)
			}
		}
	})
	t.Run("convert still serves ConversionReviews", func(t *testing.T) {
		body := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"c-1","desiredAPIVersion":"stable.example.com/v2","objects":[` +
			`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"c","namespace":"default","uid":"1"},"spec":{"cronSpec":"30 2 * * *"}}]}}`
		resp, err := http.Post(server.URL+crontab.ConvertPath, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var out struct {
			Response struct {
				Result           metav1.Status
				ConvertedObjects []map[string]any
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		if out.Response.Result.Status != metav1.StatusSuccess || len(out.Response.ConvertedObjects) != 1 ||
			out.Response.ConvertedObjects[0]["spec"].(map[string]any)["hour"] != "2" {
			t.Fatalf("conversion answered %+v", out.Response)
		}
	})
	t.Run("other paths are not found", func(t *testing.T) {
		resp, err := http.Post(server.URL+"/validate-stable-example-com-v2-crontab", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("status %s, want 404", resp.Status)
		}
	})
}

// The author guide applies these two files against the webhooks.
func TestAdmissionTestdataDoWhatTheGuideSays(t *testing.T) {
	load := func(name string) *unstructured.Unstructured {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join("testdata", "admission", name))
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	invalid := load("invalid-schedule.yaml")
	if errs := crontab.Validate(invalid); len(errs) != 1 || !strings.Contains(errs[0].Error(), "hour: 25 is out of range 0-23") {
		t.Errorf("invalid-schedule.yaml: %v, want the hour refused", errs)
	}
	noImage := load("no-image.yaml")
	if errs := crontab.Validate(noImage); len(errs) != 0 {
		t.Errorf("no-image.yaml refused: %v", errs)
	}
	if !crontab.SetDefaults(noImage) || noImage.Object["spec"].(map[string]any)["image"] != "example.com/crontab-runner:1.0" {
		t.Errorf("no-image.yaml not defaulted to the image the guide prints: %v", noImage.Object["spec"])
	}
}
