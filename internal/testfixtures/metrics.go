package testfixtures

import (
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// MetricValue sums the samples of a metric on controller-runtime's
// registry (where Hookwright's metrics live) whose labels include every
// given label; for histograms, their sample count.
func MetricValue(name string, labels map[string]string) (float64, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	samples:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue samples
				}
			}
			switch {
			case m.Counter != nil:
				total += m.GetCounter().GetValue()
			case m.Gauge != nil:
				total += m.GetGauge().GetValue()
			case m.Histogram != nil:
				total += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return total, nil
}
