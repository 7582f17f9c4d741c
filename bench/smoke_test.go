package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookwright/hookwright/bench/runner"
)

// TestBenchSmoke runs `make bench` at tiny sizes (go run ./bench/cmd/bench
// --smoke) so the harness cannot rot: the operator and the cert-controller
// anchor are built and run as processes against a real control plane, and
// every row of the table must be produced. Goals are not asserted: tiny
// sizes on a busy test machine mean nothing.
func TestBenchSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("the bench smoke run starts a control plane")
	}
	// Generous: the run builds the operator, the anchor and two benchmark
	// binaries before it starts a control plane; on a loaded machine that
	// takes minutes, and a tight bound would measure the machine.
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	report, err := runner.Run(ctx, runner.Options{Smoke: true, Log: testWriter{t}})
	if report != nil {
		t.Log("\n" + report.Markdown())
	}
	if err != nil {
		t.Fatalf("bench smoke run: %v", err)
	}
	for _, id := range runner.RowIDs {
		row, ok := report.Row(id)
		if !ok {
			t.Errorf("row %s missing", id)
			continue
		}
		if row.Hookwright == "" || strings.Contains(row.Hookwright, "n/a") || row.Goal == "" || row.Met == "" {
			t.Errorf("row %s incomplete: %+v", id, row)
		}
	}
	for _, id := range []string{"P1", "P5 idle", "P5 loaded", "Cert RSA-2048"} {
		if row, _ := report.Row(id); row.Anchor == "" || strings.Contains(row.Anchor, "n/a") {
			t.Errorf("row %s has no cert-controller figure: %+v", id, row)
		}
	}
	if md := report.Markdown(); !strings.Contains(md, "| P4 fit |") || !strings.Contains(md, "cores") {
		t.Errorf("markdown lacks the table or the machine line:\n%s", md)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
