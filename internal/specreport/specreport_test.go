package specreport

import (
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

func TestFailures(t *testing.T) {
	failed := func(text, message string) types.SpecReport {
		return types.SpecReport{
			LeafNodeType: types.NodeTypeIt, LeafNodeText: text, State: types.SpecStateFailed,
			Failure: types.Failure{Message: message, Location: types.CodeLocation{FileName: "upgrade_test.go", LineNumber: 722}},
		}
	}
	for _, tc := range []struct {
		name  string
		specs []types.SpecReport
		want  []string // lines, in order
	}{
		{name: "all passed", specs: []types.SpecReport{{LeafNodeType: types.NodeTypeIt, LeafNodeText: "installs", State: types.SpecStatePassed}}},
		{name: "skipped and pending are no failures", specs: []types.SpecReport{
			{LeafNodeType: types.NodeTypeIt, LeafNodeText: "a", State: types.SpecStateSkipped, Failure: types.Failure{Message: "skipped"}},
			{LeafNodeType: types.NodeTypeIt, LeafNodeText: "b", State: types.SpecStatePending},
		}},
		{name: "a failure's name, place and message", specs: []types.SpecReport{
			{LeafNodeType: types.NodeTypeIt, LeafNodeText: "installs", State: types.SpecStatePassed},
			failed("upgrades", "the upgrade alone changed what it must not:\nns-1: 2 reads failed"),
		}, want: []string{
			"FAILED (failed): upgrades",
			"  at upgrade_test.go:722",
			"  the upgrade alone changed what it must not:",
			"  ns-1: 2 reads failed",
		}},
		{name: "a long message is cut", specs: []types.SpecReport{failed("upgrades", "1\n2\n3\n4\n5")}, want: []string{
			"FAILED (failed): upgrades", "  at upgrade_test.go:722", "  1", "  2", "  3", "  ... 2 more lines",
		}},
		{name: "a panic says so", specs: []types.SpecReport{{
			LeafNodeType: types.NodeTypeIt, LeafNodeText: "rotates", State: types.SpecStatePanicked,
			Failure: types.Failure{Message: "Test Panicked", ForwardedPanic: "nil map"},
		}}, want: []string{"FAILED (panicked): rotates", "  at :0", "  panic: nil map", "  Test Panicked"}},
		{name: "a suite node has no text: its type names it", specs: []types.SpecReport{{
			LeafNodeType: types.NodeTypeBeforeSuite, State: types.SpecStateTimedout, Failure: types.Failure{Message: "timed out"},
		}}, want: []string{"FAILED (timedout): BeforeSuite", "  at :0", "  timed out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Failures(types.Report{SpecReports: tc.specs}, 3)
			want := ""
			if tc.want != nil {
				want = strings.Join(tc.want, "\n") + "\n"
			}
			if got != want {
				t.Errorf("Failures:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
