package conversion

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestMetricsRecorded(t *testing.T) {
	reg := prometheus.NewRegistry()
	conv := cronConverter().AddPair("v1", "v3", func(*unstructured.Unstructured) (*unstructured.Unstructured, error) { panic("boom") })
	wh := NewWebhook(conv)
	if err := wh.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}

	post(t, wh, reviewBody(t, reviewV1, "ok", v2, manyCronV1(3)...))                      // 3 objects, success
	post(t, wh, reviewBody(t, reviewV1, "bad", v2, cronV1("default", "bad", "1", "* *"))) // convert failure
	post(t, wh, reviewBody(t, reviewV1, "panic", group+"/v3", manyCronV1(1)...))          // panic
	renamed := NewWebhook(NewConverter(group, "CronTab").AddPair("v1", "v2", func(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		u.SetName("x")
		return u, nil
	}))
	if err := renamed.RegisterMetrics(prometheus.NewRegistry()); err != nil { // a second webhook, its own registry
		t.Fatal(err)
	}
	post(t, renamed, reviewBody(t, reviewV1, "meta", v2, manyCronV1(1)...))
	wh.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/convert", strings.NewReader("garbage"))) // decode

	for reason, want := range map[Reason]float64{ReasonConvert: 1, ReasonPanic: 1, ReasonDecode: 1, ReasonMetadata: 0, ReasonUnsupported: 0} {
		if got := testutil.ToFloat64(wh.metrics.failures.WithLabelValues(string(reason))); got != want {
			t.Errorf("failures{reason=%q} = %v, want %v", reason, got, want)
		}
	}
	if got := testutil.ToFloat64(renamed.metrics.failures.WithLabelValues(string(ReasonMetadata))); got != 1 {
		t.Errorf("failures{reason=metadata} = %v, want 1", got)
	}

	// Three reviews reached conversion: 3, 1 and 1 objects.
	want := `
# HELP hookwright_conversion_objects_per_review Number of objects in one ConversionReview: 1 for a GET, up to the page size for a LIST.
# TYPE hookwright_conversion_objects_per_review histogram
hookwright_conversion_objects_per_review_bucket{le="1"} 2
hookwright_conversion_objects_per_review_bucket{le="4"} 3
hookwright_conversion_objects_per_review_bucket{le="16"} 3
hookwright_conversion_objects_per_review_bucket{le="64"} 3
hookwright_conversion_objects_per_review_bucket{le="256"} 3
hookwright_conversion_objects_per_review_bucket{le="1024"} 3
hookwright_conversion_objects_per_review_bucket{le="4096"} 3
hookwright_conversion_objects_per_review_bucket{le="+Inf"} 3
hookwright_conversion_objects_per_review_sum 5
hookwright_conversion_objects_per_review_count 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "hookwright_conversion_objects_per_review"); err != nil {
		t.Error(err)
	}

	// One duration sample per review that reached conversion, by apiVersions.
	if n, err := testutil.GatherAndCount(reg, "hookwright_conversion_duration_seconds"); err != nil || n != 2 {
		t.Errorf("duration series = %d (%v), want 2", n, err)
	}
	if got := sampleCount(t, wh.metrics.duration.WithLabelValues(v1, v2)); got != 2 { // failed reviews take time too
		t.Errorf("duration{from=v1,to=v2} has %d samples, want 2", got)
	}
	if got := sampleCount(t, wh.metrics.duration.WithLabelValues(v1, group+"/v3")); got != 1 {
		t.Errorf("duration{from=v1,to=v3} has %d samples, want 1", got)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

func TestDurationIsPerVersionRun(t *testing.T) {
	reg := prometheus.NewRegistry()
	wh := NewWebhook(cronConverter())
	if err := wh.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	newer := cronV1("default", "n", "2", "")
	newer["apiVersion"] = v2
	post(t, wh, reviewBody(t, reviewV1, "u", v2, cronV1("default", "a", "1", "* * * * *"), cronV1("default", "b", "3", "* * * * *"), newer))
	// Two v1 objects then one v2 object: one sample per run of a version.
	for _, from := range []string{v1, v2} {
		if got := sampleCount(t, wh.metrics.duration.WithLabelValues(from, v2)); got != 1 {
			t.Errorf("duration{from=%s} has %d samples, want 1", from, got)
		}
	}
}

func sampleCount(t *testing.T, o prometheus.Observer) uint64 {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}
