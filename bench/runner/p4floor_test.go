package runner

import (
	"context"
	"strings"
	"testing"
)

// A worker takes a queued second step (an install whose Deployment is
// available) before any first step, as Hookwright's in-flight installs
// overtake queued ones; once the first steps are all taken it waits for
// second steps only, and it stops when the run ends.
func TestNextFloorStepPrefersSecondSteps(t *testing.T) {
	a, b, c := &floorInstall{ns: "a"}, &floorInstall{ns: "b"}, &floorInstall{ns: "c"}
	firstSteps := make(chan *floorInstall, 2)
	firstSteps <- a
	firstSteps <- b
	close(firstSteps)
	second := make(chan *floorInstall, 2)
	second <- c
	var first <-chan *floorInstall = firstSteps
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var got []string
	for range 3 {
		in, isSecond, ok := nextFloorStep(ctx, second, &first)
		if !ok {
			t.Fatal("the run ended early")
		}
		step := "first"
		if isSecond {
			step = "second"
		}
		got = append(got, in.ns+":"+step)
	}
	if want := "c:second a:first b:first"; strings.Join(got, " ") != want {
		t.Errorf("steps taken in the order %q, want %q", strings.Join(got, " "), want)
	}
	second <- a
	if in, isSecond, ok := nextFloorStep(ctx, second, &first); !ok || !isSecond || in != a {
		t.Errorf("after every first step: got %v second=%v ok=%v, want a's second step", in, isSecond, ok)
	}
	cancel()
	if _, _, ok := nextFloorStep(ctx, second, &first); ok {
		t.Error("a step was handed out after the run ended")
	}
}

// The floor row compares Hookwright's batch of the floor's size only,
// and only when both converged.
func TestP4FloorRow(t *testing.T) {
	floor := &p4FloorResult{N: 100, Converged: 100, Workers: 8, Seconds: 10, Writes: 500}
	for _, tc := range []struct {
		name  string
		floor *p4FloorResult
		hw    p4Size
		want  string // "" when there is no row
	}{
		{name: "same size, both converged", floor: floor, hw: p4Size{N: 100, Converged: 100, Seconds: 32.5},
			want: "floor 10.0 s (100 ms per install, 5.0 writes per install); Hookwright 32.5 s, 3.2× it; at the floor's time per install, 1,000 installs take 100.0 s"},
		{name: "no floor measured", hw: p4Size{N: 100, Seconds: 32.5}},
		{name: "another size", floor: floor, hw: p4Size{N: 300, Seconds: 90}},
		{name: "Hookwright's batch timed out", floor: floor, hw: p4Size{N: 100, Seconds: 600, TimedOut: true}},
		{name: "the floor did not finish", floor: &p4FloorResult{N: 100, Converged: 99, Seconds: 10, Writes: 495}, hw: p4Size{N: 100, Seconds: 32.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row, ok := tc.floor.row(tc.hw)
			if ok != (tc.want != "") {
				t.Fatalf("row given: %v, want %v", ok, tc.want != "")
			}
			if ok && row.Hookwright != tc.want {
				t.Errorf("row says %q, want %q", row.Hookwright, tc.want)
			}
		})
	}
}
