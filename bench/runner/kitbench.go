package runner

import (
	"context"
	"fmt"
)

// kitRatioGoal is P6's goal: the conversion kit serves a review at least
// this many times faster than controller-runtime's conversion handler.
const kitRatioGoal = 2.0

// kitBench runs BenchmarkConvert (examples/crontab/convert_bench_test.go):
// the same 1- and 100-object ConversionReviews served by the kit with the
// shipped CronTab converter and by controller-runtime's conversion
// webhook, and reports how many times faster the kit is.
func (b *bench) kitBench(ctx context.Context) error {
	nsPerOp, out, err := b.goBench(ctx, "^BenchmarkConvert$", b.sz.certBenchtime, "./examples/crontab")
	if err != nil {
		return err
	}
	b.report.KitBench = nsPerOp
	b.report.KitBenchCommand = "go test -run '^$' -bench '^BenchmarkConvert$' -benchtime " + b.sz.certBenchtime + " ./examples/crontab"
	var kit, cr, ratios []string
	met := true
	for _, n := range []int{1, 100} {
		k, okKit := nsPerOp[fmt.Sprintf("BenchmarkConvert/objects=%d/kit", n)]
		c, okCR := nsPerOp[fmt.Sprintf("BenchmarkConvert/objects=%d/controller-runtime", n)]
		if !okKit || !okCR || k == 0 {
			return fmt.Errorf("benchmark output lacks the %d-object kit or controller-runtime result:\n%s", n, out)
		}
		ratio := c / k
		met = met && ratio >= kitRatioGoal
		kit = append(kit, ms(k/1e9))
		cr = append(cr, ms(c/1e9))
		ratios = append(ratios, fmt.Sprintf("%.1f×", ratio))
	}
	b.report.setRow(Row{
		ID: "P6", Measure: "Serve a v1 → v2 ConversionReview of 1 / 100 CronTabs (Go benchmark, time per review); the kit is controller-runtime's time ÷ the kit's",
		Goal:       fmt.Sprintf("≥ %.0f× faster", kitRatioGoal),
		Hookwright: fmt.Sprintf("%s / %s (%s / %s faster)", kit[0], kit[1], ratios[0], ratios[1]),
		Anchor:     fmt.Sprintf("controller-runtime: %s / %s", cr[0], cr[1]), Met: metText(met),
	})
	return nil
}
