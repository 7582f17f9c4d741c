package runner

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// percentile of values (nearest rank); NaN when empty.
func percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	rank := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

func durations(values []time.Duration) []float64 {
	out := make([]float64, len(values))
	for i, d := range values {
		out[i] = d.Seconds()
	}
	return out
}

// ms formats seconds as milliseconds.
func ms(seconds float64) string {
	if math.IsNaN(seconds) {
		return "n/a"
	}
	if math.Abs(seconds) < 0.001 {
		return fmt.Sprintf("%.0f µs", seconds*1e6)
	}
	if math.Abs(seconds) < 0.01 {
		return fmt.Sprintf("%.1f ms", seconds*1000)
	}
	return fmt.Sprintf("%.0f ms", seconds*1000)
}

func secs(seconds float64) string {
	if math.IsNaN(seconds) {
		return "n/a"
	}
	if seconds < 10 {
		return fmt.Sprintf("%.2f s", seconds)
	}
	return fmt.Sprintf("%.1f s", seconds)
}

func mib(bytes int64) string { return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20)) }

// linearFit is the least-squares line y = a + b·x and its R².
func linearFit(xs, ys []float64) (a, b, r2 float64) {
	n := float64(len(xs))
	if len(xs) < 2 {
		if len(xs) == 1 && xs[0] != 0 {
			return 0, ys[0] / xs[0], math.NaN()
		}
		return math.NaN(), math.NaN(), math.NaN()
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	b = (n*sxy - sx*sy) / (n*sxx - sx*sx)
	a = (sy - b*sx) / n
	mean := sy / n
	var ssTot, ssRes float64
	for i := range xs {
		ssTot += (ys[i] - mean) * (ys[i] - mean)
		r := ys[i] - (a + b*xs[i])
		ssRes += r * r
	}
	r2 = 1 - ssRes/ssTot
	if ssTot == 0 {
		r2 = 1
	}
	return a, b, r2
}

// parallel runs fn(0..n-1) on workers goroutines and returns the first error.
func parallel(n, workers int, fn func(i int) error) error {
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					errOnce.Do(func() { first = err })
					next.Store(int64(n)) // stop handing out work
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
