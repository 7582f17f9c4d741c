package controllers

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeRounds is a barrier round's stand-in: each round proves the time it
// started (as barrierRound proves its write's send time) once released,
// or fails with fail.
type fakeRounds struct {
	proven  *loadBarrier
	rounds  atomic.Int32
	started chan struct{}    // one value per round started
	release chan trustResult // one value per round: its failure, or the zero result
}

func newFakeRounds() *fakeRounds {
	return &fakeRounds{proven: &loadBarrier{}, started: make(chan struct{}, 8), release: make(chan trustResult, 8)}
}

func (f *fakeRounds) run(context.Context) (trustResult, bool) {
	f.rounds.Add(1)
	sent := time.Now()
	f.started <- struct{}{}
	res := <-f.release
	if res.verdict != "" {
		return res, false
	}
	f.proven.prove(sent)
	return trustResult{}, true
}

// joined waits until n awaits share the round under way.
func joined(t *testing.T, b *barrierRounds, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		waiters := 0
		if b.current != nil {
			waiters = b.current.waiters
		}
		b.mu.Unlock()
		if waiters >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d awaits joined the round under way, want %d", waiters, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// next waits for the next round to start.
func (f *fakeRounds) next(t *testing.T) {
	t.Helper()
	select {
	case <-f.started:
	case <-time.After(10 * time.Second):
		t.Fatal("no round started")
	}
}

// result waits for an await's answer.
func result(t *testing.T, w <-chan awaited) awaited {
	t.Helper()
	select {
	case got := <-w:
		return got
	case <-time.After(10 * time.Second):
		t.Fatal("await did not return")
		return awaited{}
	}
}

// wantOK fails the test unless the await w answered ok.
func wantOK(t *testing.T, w <-chan awaited, what string) {
	t.Helper()
	if got := result(t, w); !got.ok {
		t.Fatalf("%s = %+v, want ok", what, got)
	}
}

// wantRounds fails the test unless n rounds ran.
func (f *fakeRounds) wantRounds(t *testing.T, n int32, why string) {
	t.Helper()
	if got := f.rounds.Load(); got != n {
		t.Errorf("%d rounds %s, want %d", got, why, n)
	}
}

type awaited struct {
	res trustResult
	ok  bool
}

func (f *fakeRounds) await(b *barrierRounds, completed time.Time) <-chan awaited {
	out := make(chan awaited, 1)
	go func() {
		res, ok := b.await(context.Background(), f.proven, completed, f.run)
		out <- awaited{res, ok}
	}()
	return out
}

func TestBarrierRoundsRunOnlyWhenNothingProvesTheWrite(t *testing.T) {
	f := newFakeRounds()
	b := &barrierRounds{}
	completed := time.Now()
	f.proven.prove(time.Now()) // another probe, written after, answered through

	wantOK(t, f.await(b, completed), "await")
	f.wantRounds(t, 0, "for a write another probe had proven")
}

func TestBarrierRoundsAreSharedByTheWritesCompletedBeforeThem(t *testing.T) {
	f := newFakeRounds()
	b := &barrierRounds{}
	completed := time.Now()
	first := f.await(b, completed)
	f.next(t)
	var waiters []<-chan awaited
	for range 4 {
		waiters = append(waiters, f.await(b, completed))
	}
	joined(t, b, 4)
	f.release <- trustResult{}
	for _, w := range append(waiters, first) {
		wantOK(t, w, "await")
	}
	f.wantRounds(t, 1, "for five writes completed before the first round")
}

func TestBarrierRoundsGiveALaterWriteARoundOfItsOwn(t *testing.T) {
	f := newFakeRounds()
	b := &barrierRounds{}
	first := f.await(b, time.Now())
	f.next(t)
	late := f.await(b, time.Now()) // completed after the running round started
	joined(t, b, 1)
	f.release <- trustResult{}
	wantOK(t, first, "first await")
	select {
	case got := <-late:
		t.Fatalf("the later write's await returned %+v after a round that started before it", got)
	case <-f.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the later write got no round of its own")
	}
	f.release <- trustResult{}
	wantOK(t, late, "late await")
	f.wantRounds(t, 2, "for a write completed before the first round and one after it started")
}

func TestBarrierRoundsReportTheFailureOfARoundAfterTheWrite(t *testing.T) {
	f := newFakeRounds()
	b := &barrierRounds{}
	failed := trustResult{trustUnavailable, "CRD trustprobes.operators.hookwright.dev is not installed"}
	got := f.await(b, time.Now())
	f.next(t)
	f.release <- failed
	if g := result(t, got); g.ok || g.res != failed {
		t.Fatalf("await = %+v, want the round's failure %+v", g, failed)
	}
	if f.proven.covers(time.Now().Add(-time.Hour)) {
		t.Error("a failed round proved a write")
	}
}

func TestBarrierRoundsRetryAfterAFailedRoundThatStartedBeforeTheWrite(t *testing.T) {
	f := newFakeRounds()
	b := &barrierRounds{}
	first := f.await(b, time.Now())
	f.next(t)
	late := f.await(b, time.Now())
	joined(t, b, 1)
	f.release <- trustResult{trustInconclusive, "the API server did not load the probe's configuration"}
	if got := result(t, first); got.ok {
		t.Fatalf("first await = %+v, want its round's failure", got)
	}
	f.next(t) // the later write's own round: the failed one said nothing about it
	f.release <- trustResult{}
	wantOK(t, late, "late await")
}

func TestBarrierRoundsStopWaitingWithTheContext(t *testing.T) {
	f := newFakeRounds()
	b := &barrierRounds{}
	first := f.await(b, time.Now())
	f.next(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	var got awaited
	go func() {
		defer wg.Done()
		got.res, got.ok = b.await(ctx, f.proven, time.Now(), f.run)
	}()
	joined(t, b, 1)
	cancel()
	wg.Wait()
	if got.ok || got.res.verdict != trustInconclusive {
		t.Errorf("await with a cancelled context = %+v, want Inconclusive", got)
	}
	f.release <- trustResult{}
	result(t, first)
}
