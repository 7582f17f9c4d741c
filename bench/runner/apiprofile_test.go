package runner

import (
	"math"
	"testing"

	"github.com/google/pprof/profile"
)

// TestCumulativeShares: a sample counts under every listed function on
// its stack, once however often the function recurs, as a share of all
// samples' CPU.
func TestCumulativeShares(t *testing.T) {
	fn := func(id uint64, name string) *profile.Function { return &profile.Function{ID: id, Name: name} }
	openapi := fn(1, apiServerCosts[0].fn)
	update := fn(2, "k8s.io/apiserver/pkg/storage/etcd3.(*store).GuaranteedUpdate")
	other := fn(3, "main.other")
	loc := func(id uint64, f *profile.Function) *profile.Location {
		return &profile.Location{ID: id, Line: []profile.Line{{Function: f}}}
	}
	lOpenAPI, lUpdate, lOther := loc(1, openapi), loc(2, update), loc(3, other)
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{lOther, lOpenAPI, lOpenAPI}, Value: []int64{1, 3e9}}, // recursion counts once
			{Location: []*profile.Location{lUpdate}, Value: []int64{1, 1e9}},
			{Location: []*profile.Location{lOther}, Value: []int64{1, 4e9}},
			{Location: []*profile.Location{lUpdate, lOpenAPI}, Value: []int64{1, 2e9}}, // under both
		},
	}
	cpu, shares := cumulativeShares(p)
	if cpu != 10 {
		t.Errorf("CPU = %v s, want 10", cpu)
	}
	want := map[string]float64{openapi.Name: 0.5, update.Name: 0.3}
	for _, s := range shares {
		if math.Abs(s.Share-want[s.Func]) > 1e-9 {
			t.Errorf("%s: share %.3f, want %.3f", s.Func, s.Share, want[s.Func])
		}
	}
	if len(shares) != len(apiServerCosts) {
		t.Errorf("%d shares, want one per listed function (%d)", len(shares), len(apiServerCosts))
	}
}

func TestCumulativeSharesWithoutCPU(t *testing.T) {
	cpu, shares := cumulativeShares(&profile.Profile{SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}}})
	if cpu != 0 || shares != nil {
		t.Errorf("a profile without CPU samples: got %v s, %v", cpu, shares)
	}
}
