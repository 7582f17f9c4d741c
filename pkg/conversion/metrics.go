package conversion

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the webhook's Prometheus collectors. The API server has its
// own conversion metrics, but only the webhook can say which conversion
// is slow or failing, and why.
type metrics struct {
	duration *prometheus.HistogramVec
	objects  prometheus.Histogram
	failures *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hookwright_conversion_duration_seconds",
			Help: "Time spent converting the objects of one ConversionReview from one apiVersion to another, excluding JSON decoding and encoding.",
			// 100µs to 2s: one object takes microseconds, and the API
			// server gives up after its webhook timeout (at most 30s).
			Buckets: prometheus.ExponentialBuckets(0.0001, 3, 10),
		}, []string{"from", "to"}),
		objects: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hookwright_conversion_objects_per_review",
			Help:    "Number of objects in one ConversionReview: 1 for a GET, up to the page size for a LIST.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 7),
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookwright_conversion_failures_total",
			Help: "ConversionReviews answered with a failure (or HTTP 400 for reason decode), by reason.",
		}, []string{"reason"}),
	}
}

// RegisterMetrics registers the webhook's metrics on reg and starts
// recording them. Call it before serving; without it nothing is recorded.
func (w *Webhook) RegisterMetrics(reg prometheus.Registerer) error {
	m := newMetrics()
	for _, c := range []prometheus.Collector{m.duration, m.objects, m.failures} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	// Zero series for every reason, so an alert on a rate sees 0, not nothing.
	for _, r := range reasons {
		m.failures.WithLabelValues(string(r))
	}
	w.metrics = m
	return nil
}

func (m *metrics) failed(reason Reason) {
	if m != nil {
		m.failures.WithLabelValues(string(reason)).Inc()
	}
}

// run times consecutive objects converted from the same apiVersion:
// reviews usually hold one version only, so this reads the clock twice
// per review rather than twice per object.
type run struct {
	m     *metrics
	to    string
	from  string
	start time.Time
}

func (r *run) next(from string) {
	if r.m == nil || from == r.from {
		return
	}
	now := time.Now()
	r.observe(now)
	r.from, r.start = from, now
}

func (r *run) end() {
	if r.m != nil {
		r.observe(time.Now())
	}
}

func (r *run) observe(now time.Time) {
	if r.from != "" {
		r.m.duration.WithLabelValues(r.from, r.to).Observe(now.Sub(r.start).Seconds())
	}
}
