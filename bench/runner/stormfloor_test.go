package runner

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// Each install's second step runs only once its first is done and ready
// says it took effect; every install ends in done; a failed step stops
// the run with its error.
func TestFloorRunTakesEachSecondStepAfterItsFirstOnceReady(t *testing.T) {
	installs := []*floorInstall{{ns: "a"}, {ns: "b"}, {ns: "c"}}
	var mu sync.Mutex
	firstDone := map[string]bool{}
	readyAsked := map[string]int{}
	run := floorRun{
		workers: 2,
		first: func(_ context.Context, in *floorInstall) error {
			mu.Lock()
			defer mu.Unlock()
			firstDone[in.ns] = true
			return nil
		},
		// Ready on the second time asked: a waiting install holds no worker.
		ready: func(in *floorInstall) bool {
			mu.Lock()
			defer mu.Unlock()
			readyAsked[in.ns]++
			return readyAsked[in.ns] > 1
		},
		second: func(_ context.Context, in *floorInstall) (time.Time, int, error) {
			mu.Lock()
			defer mu.Unlock()
			if !firstDone[in.ns] || readyAsked[in.ns] < 2 {
				t.Errorf("%s: second step before its first took effect", in.ns)
			}
			return time.Now(), 1, nil
		},
	}
	t0, done, failed, err := run.run(context.Background(), installs, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 3 || failed != 3 {
		t.Errorf("done %v, %d failed dry runs; want a, b and c done and 3", done, failed)
	}
	for ns, at := range done {
		if at.Before(t0) {
			t.Errorf("%s done at %s, before the run started at %s", ns, at, t0)
		}
		if span := untilLast(t0, done); span < at.Sub(t0) {
			t.Errorf("untilLast = %s, shorter than %s's %s", span, ns, at.Sub(t0))
		}
	}
	if span := untilLast(t0, nil); span != 0 {
		t.Errorf("untilLast with nothing done = %s, want 0", span)
	}

	broken := errors.New("patch refused")
	run.second = func(context.Context, *floorInstall) (time.Time, int, error) { return time.Time{}, 0, broken }
	readyAsked = map[string]int{}
	if _, done, _, err := run.run(context.Background(), installs, time.Now().Add(10*time.Second)); !errors.Is(err, broken) || len(done) != 0 {
		t.Errorf("a failed second step: err %v, done %v; want %v and nothing done", err, done, broken)
	}
}

// The storm floor row extrapolates the floor's time per install to the
// storm's size and names Hookwright's figure; a floor the storm's goal
// cut short says how many it rotated.
func TestStormFloorRow(t *testing.T) {
	storm := &stormResult{Installs: 1000, Rotated: 201, Seconds: 120}
	for _, tc := range []struct {
		name  string
		floor *stormFloorResult
		storm *stormResult
		want  string // "" when there is no row
	}{
		{name: "floor done", floor: &stormFloorResult{N: 100, Rotated: 100, Workers: 8, Seconds: 12.5, Writes: 600}, storm: storm,
			want: "floor 12.5 s (125 ms per install, 6.0 writes per install); at the floor's time per install, 1000 rotations take 125.0 s (Hookwright: 201 of 1000 in 120.0 s)"},
		{name: "no storm rotation completed", floor: &stormFloorResult{N: 100, Rotated: 100, Workers: 8, Seconds: 12.5, Writes: 600}, storm: &stormResult{Installs: 1000, Seconds: 120},
			want: "floor 12.5 s (125 ms per install, 6.0 writes per install); at the floor's time per install, 1000 rotations take 125.0 s"},
		{name: "no floor measured", storm: storm},
		{name: "the floor did not finish", floor: &stormFloorResult{N: 1000, Rotated: 640, Seconds: 120, Writes: 5200}, storm: storm,
			want: "floor: 640 of 1000 rotated in 120.0 s, the storm's goal (5200 writes) (Hookwright: 201 of 1000 in 120.0 s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row, ok := tc.floor.row(tc.storm)
			if ok != (tc.want != "") {
				t.Fatalf("row given: %v, want %v", ok, tc.want != "")
			}
			if ok && row.Hookwright != tc.want {
				t.Errorf("row says %q, want %q", row.Hookwright, tc.want)
			}
		})
	}
}
