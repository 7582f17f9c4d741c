package crontab_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crconversion "sigs.k8s.io/controller-runtime/pkg/conversion"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/hookwright/hookwright/examples/crontab"
	"github.com/hookwright/hookwright/pkg/conversion"
)

// The kit's side of the comparison is the shipped CronTab converter
// (crontab.Converter), as the webhook binary serves it. Controller-runtime's
// webhook needs typed Go types in a runtime.Scheme, with a Hub (v2) and a
// Convertible (v1): below, the same CronTab and the same v1 <-> v2 mapping.

type cronTabV1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              cronTabV1Spec `json:"spec,omitempty"`
	Status            cronTabStatus `json:"status,omitempty"`
}

type cronTabV1Spec struct {
	CronSpec string `json:"cronSpec,omitempty"`
	Image    string `json:"image,omitempty"`
}

type cronTabV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              cronTabV2Spec `json:"spec,omitempty"`
	Status            cronTabStatus `json:"status,omitempty"`
}

type cronTabV2Spec struct {
	Minute     string `json:"minute,omitempty"`
	Hour       string `json:"hour,omitempty"`
	DayOfMonth string `json:"dayOfMonth,omitempty"`
	Month      string `json:"month,omitempty"`
	DayOfWeek  string `json:"dayOfWeek,omitempty"`
	Image      string `json:"image,omitempty"`
}

type cronTabStatus struct {
	LastScheduleTime string `json:"lastScheduleTime,omitempty"`
	Active           int64  `json:"active,omitempty"`
}

func (in *cronTabV1) DeepCopyObject() runtime.Object {
	out := *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func (in *cronTabV2) DeepCopyObject() runtime.Object {
	out := *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func (*cronTabV2) Hub() {}

func (in *cronTabV1) ConvertTo(hub crconversion.Hub) error {
	dst := hub.(*cronTabV2)
	parts := strings.Fields(in.Spec.CronSpec)
	if len(parts) != 5 {
		return fmt.Errorf("invalid spec string, needs five parts: %q", in.Spec.CronSpec)
	}
	dst.ObjectMeta = in.ObjectMeta
	dst.Spec = cronTabV2Spec{Minute: parts[0], Hour: parts[1], DayOfMonth: parts[2], Month: parts[3], DayOfWeek: parts[4], Image: in.Spec.Image}
	dst.Status = in.Status
	return nil
}

func (in *cronTabV1) ConvertFrom(hub crconversion.Hub) error {
	src := hub.(*cronTabV2)
	in.ObjectMeta = src.ObjectMeta
	s := src.Spec
	in.Spec = cronTabV1Spec{CronSpec: strings.Join([]string{s.Minute, s.Hour, s.DayOfMonth, s.Month, s.DayOfWeek}, " "), Image: s.Image}
	in.Status = src.Status
	return nil
}

func controllerRuntimeHandler(b *testing.B) http.Handler {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(schema.GroupVersionKind{Group: crontab.Group, Version: "v1", Kind: crontab.Kind}, &cronTabV1{})
	scheme.AddKnownTypeWithName(schema.GroupVersionKind{Group: crontab.Group, Version: "v2", Kind: crontab.Kind}, &cronTabV2{})
	if ok, err := crwebhook.IsConvertible(scheme, &cronTabV1{}); !ok || err != nil {
		b.Fatalf("CronTab is not convertible for controller-runtime: %v", err)
	}
	return crwebhook.NewWebhookHandler(scheme, crwebhook.NewRegistry())
}

// BenchmarkConvert serves identical v1 -> v2 reviews of 1 and 100 objects
// with the kit (pkg/conversion serving the shipped converter) and with
// controller-runtime's conversion webhook. Request and response plumbing
// is minimal and shared, so the difference is the handlers'. make bench
// runs it and reports the ratio (bench/runner/kitbench.go).
func BenchmarkConvert(b *testing.B) {
	withMetrics := conversion.NewWebhook(crontab.Converter())
	if err := withMetrics.RegisterMetrics(prometheus.NewRegistry()); err != nil {
		b.Fatal(err)
	}
	handlers := []struct {
		name string
		h    http.Handler
	}{
		{"kit", conversion.NewWebhook(crontab.Converter())},
		{"kit+metrics", withMetrics},
		{"controller-runtime", controllerRuntimeHandler(b)},
	}
	for _, n := range []int{1, 100} {
		body := reviewBody(b, "review-uid", crontab.Group+"/v2", manyCronV1(n))
		for _, tc := range handlers {
			b.Run(fmt.Sprintf("objects=%d/%s", n, tc.name), func(b *testing.B) {
				checkAnswer(b, tc.h, body, n)
				req, _ := http.NewRequest(http.MethodPost, "/convert", nil)
				rw := &discardWriter{header: http.Header{}}
				reader := bytes.NewReader(body)
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				b.ResetTimer()
				for b.Loop() {
					reader.Reset(body)
					req.Body = io.NopCloser(reader)
					tc.h.ServeHTTP(rw, req)
				}
			})
		}
	}
}

// checkAnswer makes sure a handler really converts before it is timed.
func checkAnswer(b *testing.B, h http.Handler, body []byte, n int) {
	b.Helper()
	req, _ := http.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body))
	rw := &discardWriter{header: http.Header{}, keep: true}
	h.ServeHTTP(rw, req)
	var got struct {
		Response struct {
			ConvertedObjects []map[string]any `json:"convertedObjects"`
			Result           metav1.Status    `json:"result"`
		} `json:"response"`
	}
	if err := json.Unmarshal(rw.body.Bytes(), &got); err != nil {
		b.Fatalf("decoding answer %q: %v", rw.body.String(), err)
	}
	if got.Response.Result.Status != metav1.StatusSuccess || len(got.Response.ConvertedObjects) != n {
		b.Fatalf("answer is not %d converted objects: %s", n, rw.body.String())
	}
	if spec := got.Response.ConvertedObjects[n-1]["spec"].(map[string]any); spec["dayOfWeek"] != "*" || spec["cronSpec"] != nil {
		b.Fatalf("not converted to v2: %v", spec)
	}
}

type discardWriter struct {
	header http.Header
	keep   bool
	body   bytes.Buffer
}

func (w *discardWriter) Header() http.Header { return w.header }
func (w *discardWriter) WriteHeader(int)     {}
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.keep {
		return w.body.Write(p)
	}
	return len(p), nil
}

// cronV1 is a stored v1 CronTab as the API server sends it.
func cronV1(name, uid, cronSpec string) map[string]any {
	return map[string]any{
		"apiVersion": crontab.Group + "/v1",
		"kind":       crontab.Kind,
		"metadata": map[string]any{
			"name":              name,
			"namespace":         "default",
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

// manyCronV1 is n distinct v1 CronTabs.
func manyCronV1(n int) []map[string]any {
	objs := make([]map[string]any, n)
	for i := range objs {
		objs[i] = cronV1(fmt.Sprintf("cron-%03d", i), fmt.Sprintf("uid-%03d", i), fmt.Sprintf("%d * * * *", i%60))
	}
	return objs
}

// reviewBody is an apiextensions.k8s.io/v1 ConversionReview request.
func reviewBody(b *testing.B, uid, desired string, objects []map[string]any) []byte {
	b.Helper()
	body, err := json.Marshal(map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "ConversionReview",
		"request":    map[string]any{"uid": uid, "desiredAPIVersion": desired, "objects": objects},
	})
	if err != nil {
		b.Fatal(err)
	}
	return body
}
