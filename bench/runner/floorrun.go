package runner

import (
	"context"
	"errors"
	"sync"
	"time"
)

// floorRun drives a floor's installs through two steps, as an operator
// with nothing in between would: workers (as many as the operator's
// reconcile workers) take the first steps in turn and, as soon as ready
// says an install's first step has taken effect (its Deployment available
// or rolled out), its second step; second steps go first, as Hookwright's
// in-flight installs overtake queued ones. An install waiting to be ready
// holds no worker.
type floorRun struct {
	workers int
	first   func(context.Context, *floorInstall) error
	ready   func(*floorInstall) bool
	// second returns when it ended and how many dry runs failed meanwhile.
	second func(context.Context, *floorInstall) (time.Time, int, error)
}

// run returns when the first step started, when each install's second
// step ended (by namespace), the dry runs that failed and the first
// error. It ends when every install is done, at the first error, or at
// deadline: the steps that deadline cut short are no error, the installs
// missing from done say what it cut.
func (f floorRun) run(ctx context.Context, installs []*floorInstall, deadline time.Time) (t0 time.Time, done map[string]time.Time, failed int, firstErr error) {
	for _, in := range installs {
		in.written, in.queued = false, false
	}
	firstSteps := make(chan *floorInstall, len(installs))
	second := make(chan *floorInstall, len(installs))
	for _, in := range installs {
		firstSteps <- in
	}
	close(firstSteps)
	var mu sync.Mutex // guards the installs' written and queued, done and failed
	done = map[string]time.Time{}
	runCtx, stop := context.WithDeadline(ctx, deadline)
	defer stop()
	t0 = time.Now()

	// The dispatcher queues an install's second step once it is ready,
	// and ends the run when every install is done or the deadline passed.
	go func() {
		defer stop()
		for {
			mu.Lock()
			all := len(done) == len(installs)
			for _, in := range installs {
				if in.written && !in.queued && f.ready(in) {
					in.queued = true
					second <- in
				}
			}
			mu.Unlock()
			if all {
				return
			}
			select {
			case <-runCtx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	var errOnce sync.Once
	fail := func(err error) {
		if errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return // cut short by the deadline
		}
		errOnce.Do(func() { firstErr = err })
		stop()
	}
	var wg sync.WaitGroup
	for range f.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var first <-chan *floorInstall = firstSteps
			for {
				in, isSecond, ok := nextFloorStep(runCtx, second, &first)
				if !ok {
					return
				}
				if !isSecond {
					if err := f.first(runCtx, in); err != nil {
						fail(err)
						return
					}
					mu.Lock()
					in.written = true
					mu.Unlock()
					continue
				}
				when, n, err := f.second(runCtx, in)
				mu.Lock()
				failed += n
				if err == nil {
					done[in.ns] = when
				}
				mu.Unlock()
				if err != nil {
					fail(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return t0, done, failed, firstErr
}

// untilLast is how long after t0 the last install was done (0 if none).
func untilLast(t0 time.Time, done map[string]time.Time) time.Duration {
	end := t0
	for _, t := range done {
		if t.After(end) {
			end = t
		}
	}
	return end.Sub(t0)
}

// nextFloorStep hands a worker the next step: a second step if one is
// queued, else a first; ok is false once the run has ended.
func nextFloorStep(ctx context.Context, second <-chan *floorInstall, first *<-chan *floorInstall) (in *floorInstall, isSecond, ok bool) {
	select {
	case in := <-second:
		return in, true, true
	default:
	}
	select {
	case <-ctx.Done():
		return nil, false, false
	case in := <-second:
		return in, true, true
	case in, open := <-*first:
		if !open {
			*first = nil // every first step is taken: wait for second steps only
			return nextFloorStep(ctx, second, first)
		}
		return in, false, true
	}
}
