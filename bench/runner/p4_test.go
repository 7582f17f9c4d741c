package runner

import "testing"

// The P4 section tells how the whole cluster grew between batches apart
// from N, with ratios computed from the batches' own figures.
func TestClusterGrowth(t *testing.T) {
	batch := func(n int, seconds, reconcile float64, crds int, rss int64) p4Size {
		return p4Size{N: n, Seconds: seconds, ReconcileMean: reconcile, Cluster: clusterSize{Installs: n, CRDs: crds, APIServerRSS: rss}}
	}
	tests := []struct {
		name  string
		sizes []p4Size
		want  string
	}{
		{"one batch: nothing to compare", []p4Size{batch(100, 10, 0.3, 400, 1<<30)}, ""},
		{"the last batch against the first",
			[]p4Size{batch(100, 10, 0.25, 400, 1<<30), batch(300, 45, 0.4, 1000, 2<<30), batch(1000, 200, 0.5, 2400, 6<<30)},
			"The cluster each batch ran in, sampled just before its creates (its own CRDs included; earlier batches and measures stay installed): " +
				"N=100: 100 installs, 400 CRDs, kube-apiserver RSS 1024.0 MiB; N=300: 300 installs, 1000 CRDs, kube-apiserver RSS 2048.0 MiB; " +
				"N=1000: 1000 installs, 2400 CRDs, kube-apiserver RSS 6144.0 MiB. " +
				"From N=100 to N=1000, N grew 10×; the time per install 2.00× and the mean reconcile 2.00×, while the cluster's CRDs grew 6.0× and kube-apiserver's RSS 6.0×."},
		{"the API server's memory unreadable",
			[]p4Size{batch(100, 10, 0, 400, 0), batch(300, 60, 0, 1000, 0)},
			"The cluster each batch ran in, sampled just before its creates (its own CRDs included; earlier batches and measures stay installed): " +
				"N=100: 100 installs, 400 CRDs, kube-apiserver RSS unreadable; N=300: 300 installs, 1000 CRDs, kube-apiserver RSS unreadable. " +
				"From N=100 to N=300, N grew 3×; the time per install 2.00×, while the cluster's CRDs grew 2.5×."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (&p4Result{Sizes: tt.sizes}).clusterGrowth(); got != tt.want {
				t.Errorf("clusterGrowth =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
