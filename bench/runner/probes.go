package runner

import (
	"fmt"
	"sort"
	"strings"
)

// probeCounts is what the operator's trust probes did over a window: the
// delta of hookwright_trust_probes_total by gate and result, and of
// hookwright_trust_probes_spared_total by gate.
type probeCounts struct {
	Run    map[string]float64 // "<gate> <result>" → probes
	Spared map[string]float64 // gate → probes done without
}

func probeDelta(m0, m1 promText) probeCounts {
	c := probeCounts{Run: map[string]float64{}, Spared: map[string]float64{}}
	keyed := func(t promText, name string, key func(promSample) string) map[string]float64 {
		out := map[string]float64{}
		for _, s := range t {
			if s.name == name {
				out[key(s)] += s.value
			}
		}
		return out
	}
	run := func(s promSample) string { return s.labels["gate"] + " " + s.labels["result"] }
	gate := func(s promSample) string { return s.labels["gate"] }
	before, after := keyed(m0, "hookwright_trust_probes_total", run), keyed(m1, "hookwright_trust_probes_total", run)
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			c.Run[k] = d
		}
	}
	before, after = keyed(m0, "hookwright_trust_probes_spared_total", gate), keyed(m1, "hookwright_trust_probes_spared_total", gate)
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			c.Spared[k] = d
		}
	}
	return c
}

// describe says, e.g., "1200 trust probes (promote Trusted ×600, ...);
// 300 spared (promote ×300)".
func (c probeCounts) describe() string {
	list := func(m map[string]float64) (float64, string) {
		keys := make([]string, 0, len(m))
		total := 0.0
		for k, v := range m {
			keys = append(keys, k)
			total += v
		}
		sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s ×%.0f", k, m[k])
		}
		return total, strings.Join(parts, ", ")
	}
	run, runList := list(c.Run)
	spared, sparedList := list(c.Spared)
	s := fmt.Sprintf("%.0f trust probes", run)
	if run > 0 {
		s += " (" + runList + ")"
	}
	s += fmt.Sprintf("; %.0f done without", spared)
	if spared > 0 {
		s += " (" + sparedList + ")"
	}
	return s
}
