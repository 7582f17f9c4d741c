package conversion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// answer is what the API server reads back: the typed ConversionReview of
// the same apiVersion, so the test proves the wire format, not our own
// decoder.
type answer struct {
	apiVersion, kind string
	uid              string
	status, message  string
	objects          []*unstructured.Unstructured
}

func post(t *testing.T, h http.Handler, body []byte) answer {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", rec.Code, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(rec.Body.Bytes(), &tm); err != nil {
		t.Fatalf("answer %q: %v", rec.Body.String(), err)
	}
	a := answer{apiVersion: tm.APIVersion, kind: tm.Kind}
	var raws []runtime.RawExtension
	switch tm.APIVersion {
	case reviewV1:
		var rv apiextensionsv1.ConversionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &rv); err != nil || rv.Response == nil {
			t.Fatalf("answer %q: %v", rec.Body.String(), err)
		}
		a.uid, a.status, a.message, raws = string(rv.Response.UID), rv.Response.Result.Status, rv.Response.Result.Message, rv.Response.ConvertedObjects
	case reviewV1beta1:
		var rv apiextensionsv1beta1.ConversionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &rv); err != nil || rv.Response == nil {
			t.Fatalf("answer %q: %v", rec.Body.String(), err)
		}
		a.uid, a.status, a.message, raws = string(rv.Response.UID), rv.Response.Result.Status, rv.Response.Result.Message, rv.Response.ConvertedObjects
	default:
		t.Fatalf("answer has apiVersion %q", tm.APIVersion)
	}
	for _, raw := range raws {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw.Raw); err != nil {
			t.Fatalf("converted object %s: %v", raw.Raw, err)
		}
		a.objects = append(a.objects, u)
	}
	return a
}

func TestWebhookConvertsBatchesInOrder(t *testing.T) {
	wh := NewWebhook(cronConverter())
	for _, reviewVersion := range []string{reviewV1, reviewV1beta1} {
		for _, n := range []int{0, 1, 7} {
			t.Run(fmt.Sprintf("%s/%d objects", reviewVersion, n), func(t *testing.T) {
				in := manyCronV1(n)
				a := post(t, wh, reviewBody(t, reviewVersion, "review-42", v2, in...))

				if a.apiVersion != reviewVersion || a.kind != "ConversionReview" || a.uid != "review-42" || a.status != metav1.StatusSuccess {
					t.Fatalf("answer %+v, want a %s success for uid review-42", a, reviewVersion)
				}
				if len(a.objects) != n {
					t.Fatalf("%d objects, want %d", len(a.objects), n)
				}
				for i, obj := range a.objects {
					want := fmt.Sprintf("cron-%03d", i)
					if obj.GetName() != want || obj.GetAPIVersion() != v2 {
						t.Errorf("object %d is %s %s, want %s %s", i, obj.GetAPIVersion(), obj.GetName(), v2, want)
					}
					if got, _, _ := unstructured.NestedString(obj.Object, "spec", "minute"); got != fmt.Sprint(i%60) {
						t.Errorf("object %d spec.minute = %q", i, got)
					}
					if got, _, _ := unstructured.NestedInt64(obj.Object, "status", "active"); got != 1 {
						t.Errorf("object %d lost its status: %v", i, obj.Object["status"])
					}
				}
			})
		}
	}
}

func TestWebhookIdentityAndMixedVersions(t *testing.T) {
	older := cronV1("default", "old", "u1", "1 2 3 4 5")
	newer := cronV1("default", "new", "u2", "")
	newer["apiVersion"] = v2
	newer["spec"] = map[string]any{"minute": "1", "hour": "2", "dayOfMonth": "3", "month": "4", "dayOfWeek": "5", "image": "x", "extra": []any{int64(1), 2.5, nil, true}}
	wantNewer := (&unstructured.Unstructured{Object: newer}).DeepCopy()

	a := post(t, NewWebhook(cronConverter()), reviewBody(t, reviewV1, "u", v2, older, newer))
	if a.status != metav1.StatusSuccess || len(a.objects) != 2 {
		t.Fatalf("answer %+v", a)
	}
	if got := a.objects[0].Object["spec"].(map[string]any)["dayOfWeek"]; got != "5" {
		t.Errorf("v1 object not converted: %v", a.objects[0].Object["spec"])
	}
	// A v2 object asked for as v2 comes back exactly, numbers included.
	if !equalJSON(t, a.objects[1].Object, wantNewer.Object) {
		t.Errorf("identity changed the object:\n%v\nwant\n%v", a.objects[1].Object, wantNewer.Object)
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return bytes.Equal(ja, jb)
}

func TestWebhookFailureNamesTheObject(t *testing.T) {
	good1 := cronV1("default", "good-1", "1", "* * * * *")
	bad := cronV1("default", "my-cron", "123", "* *")
	good2 := cronV1("default", "good-2", "2", "* * * * *")
	a := post(t, NewWebhook(cronConverter()), reviewBody(t, reviewV1, "review-7", v2, good1, bad, good2))

	want := `converting stable.example.com/v1 CronTab default/my-cron (uid 123) to v2: invalid spec string, needs five parts: "* *"`
	if a.status != metav1.StatusFailure || a.message != want {
		t.Errorf("status %q message %q, want Failure %q", a.status, a.message, want)
	}
	if a.uid != "review-7" {
		t.Errorf("uid = %q", a.uid)
	}
	if len(a.objects) != 0 {
		t.Errorf("a failure answered %d partial objects", len(a.objects))
	}
}

func TestWebhookRecoversPanics(t *testing.T) {
	boom := NewConverter(group, "CronTab").AddPair("v1", "v2", func(in *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		if in.GetName() == "bomb" {
			var m map[string]any
			m["x"] = 1 // nil map write
		}
		return in, nil
	})
	wh := NewWebhook(boom)
	var logged []string
	logger := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/convert", bytes.NewReader(reviewBody(t, reviewV1, "u", v2, cronV1("ns", "bomb", "b1", ""))))
	wh.ServeHTTP(rec, req.WithContext(logr.NewContext(req.Context(), logger)))
	if len(logged) != 1 || !strings.Contains(logged[0], "Conversion function panicked") || !strings.Contains(logged[0], "webhook_test.go") {
		t.Errorf("the panic and its stack were not logged: %q", logged)
	}

	a := post(t, wh, reviewBody(t, reviewV1, "u", v2, cronV1("ns", "bomb", "b1", "")))
	for _, part := range []string{"ns/bomb (uid b1) to v2: ", "panic: assignment to entry in nil map"} {
		if a.status != metav1.StatusFailure || !strings.Contains(a.message, part) {
			t.Errorf("message %q, want a failure containing %q", a.message, part)
		}
	}
	if strings.Contains(a.message, "goroutine") {
		t.Errorf("the stack leaked into the answer: %q", a.message)
	}
	// The server lives on.
	if a := post(t, wh, reviewBody(t, reviewV1, "u", v2, cronV1("ns", "fine", "f1", ""))); a.status != metav1.StatusSuccess {
		t.Errorf("after a panic: %+v", a)
	}
}

func TestWebhookRejectsUnconvertibleObjects(t *testing.T) {
	noKind := cronV1("default", "nameless", "n1", "* * * * *")
	delete(noKind, "kind")
	otherKind := cronV1("default", "x", "x1", "* * * * *")
	otherKind["kind"] = "Widget"
	otherGroup := cronV1("default", "y", "y1", "* * * * *")
	otherGroup["apiVersion"] = "other.example.com/v1"
	tests := []struct {
		name   string
		object map[string]any
		want   string
	}{
		{"no kind", noKind, "default/nameless (uid n1) to v2: object 0 has no apiVersion or kind"},
		{"unknown kind", otherKind, "Widget default/x (uid x1) to v2: this webhook converts CronTab.stable.example.com only"},
		{"other group", otherGroup, "cannot convert group other.example.com to group stable.example.com"},
		{"null object", nil, "converting <unnamed object> to v2: object 0 is null"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := post(t, NewWebhook(cronConverter()), reviewBody(t, reviewV1, "u", v2, tc.object))
			if a.status != metav1.StatusFailure || !strings.Contains(a.message, tc.want) {
				t.Errorf("status %q message %q, want failure containing %q", a.status, a.message, tc.want)
			}
		})
	}
}

func TestWebhookBadRequests(t *testing.T) {
	wh := NewWebhook(cronConverter())
	tests := []struct {
		name   string
		method string
		body   string
		want   string
	}{
		{"GET", http.MethodGet, "", "accepts POST, not GET"},
		{"garbage", http.MethodPost, "{not json", "decoding ConversionReview"},
		{"empty body", http.MethodPost, "", "decoding ConversionReview"},
		{"objects not a list", http.MethodPost, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"a/v2","objects":{}}}`, "decoding ConversionReview"},
		{"admission review", http.MethodPost, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}}`, `unsupported ConversionReview apiVersion "admission.k8s.io/v1"`},
		{"wrong kind", http.MethodPost, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"Other"}`, `kind is "Other"`},
		{"no request", http.MethodPost, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`, "has no request"},
		{"no desired version", http.MethodPost, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","objects":[]}}`, "no desiredAPIVersion"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			wh.ServeHTTP(rec, httptest.NewRequest(tc.method, "/convert", strings.NewReader(tc.body)))
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), tc.want) {
				t.Errorf("HTTP %d %q, want 400 containing %q", rec.Code, rec.Body.String(), tc.want)
			}
		})
	}
}

func TestWebhookReportsUnencodableObjects(t *testing.T) {
	nan := NewConverter(group, "CronTab").AddPair("v1", "v2", func(in *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		in.Object["spec"] = map[string]any{"ratio": func() float64 { z := 0.0; return z / z }()}
		return in, nil
	})
	a := post(t, NewWebhook(nan), reviewBody(t, reviewV1, "u", v2, cronV1("default", "c", "1", "")))
	if a.status != metav1.StatusFailure || !strings.Contains(a.message, `encoding the converted objects: object 0: "spec": "ratio": unsupported value NaN`) {
		t.Errorf("status %q message %q", a.status, a.message)
	}
}
