// Package specreport repeats a Ginkgo suite's failures, their messages
// included, as the last lines of its output. CI shows the tail of a failed
// test's output, and Ginkgo ends it with the failed specs' names only: a
// long failure message (a list of problems) scrolls out of that tail, and
// a failure seen once in CI cannot be told from its name.
package specreport

import (
	"fmt"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// MessageLines bounds each failure's message as repeated: the tail CI
// shows is short, and every failure should fit in it.
const MessageLines = 12

// RunSpecs runs the suite as ginkgo.RunSpecs does, then prints its
// failures last.
func RunSpecs(t *testing.T, description string) bool {
	var failures string
	ginkgo.ReportAfterSuite("failures repeated last", func(r ginkgo.Report) { failures = Failures(r, MessageLines) })
	passed := ginkgo.RunSpecs(t, description)
	if failures != "" {
		fmt.Print(failures)
	}
	return passed
}

// Failures describes each failed spec of the report: its name, where it
// failed and the first maxLines lines of its message. Empty when none
// failed.
func Failures(r types.Report, maxLines int) string {
	var b strings.Builder
	for _, spec := range r.SpecReports {
		if !spec.State.Is(types.SpecStateFailureStates) {
			continue
		}
		name := spec.FullText()
		if name == "" {
			name = spec.LeafNodeType.String() // BeforeSuite, AfterSuite, ...
		}
		fmt.Fprintf(&b, "FAILED (%s): %s\n  at %s\n", spec.State, name, spec.Failure.Location)
		message := spec.Failure.Message
		if spec.Failure.ForwardedPanic != "" {
			message = "panic: " + spec.Failure.ForwardedPanic + "\n" + message
		}
		lines := strings.Split(strings.TrimRight(message, "\n"), "\n")
		for i, line := range lines {
			if i == maxLines {
				fmt.Fprintf(&b, "  ... %d more lines\n", len(lines)-maxLines)
				break
			}
			fmt.Fprintf(&b, "  %s\n", line)
		}
	}
	return b.String()
}
