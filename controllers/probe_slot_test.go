package controllers

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestProbeSlotBoundsTheWait: a pass that needs a probe while another runs
// waits at most probeSlotWait, then gets an Inconclusive result (its gate
// tries again later) instead of holding a worker behind the probe.
func TestProbeSlotBoundsTheWait(t *testing.T) {
	slot := newProbeSlot()
	release, busy := slot.acquire(context.Background())
	if busy != nil {
		t.Fatalf("a free slot was busy: %v", busy.message)
	}
	start := time.Now()
	if _, busy := slot.acquire(context.Background()); busy == nil {
		t.Fatal("a second probe got the slot while the first ran")
	} else if busy.verdict != trustInconclusive || !strings.Contains(busy.message, "another trust probe") {
		t.Errorf("busy = %+v, want Inconclusive naming the running probe", *busy)
	}
	if waited := time.Since(start); waited < probeSlotWait || waited > probeSlotWait+time.Second {
		t.Errorf("waited %s for a busy slot, want about %s", waited, probeSlotWait)
	}
	release()
	release2, busy := slot.acquire(context.Background())
	if busy != nil {
		t.Fatalf("the slot is still busy after release: %v", busy.message)
	}
	release2()
}

// TestProbePoolRunsOneProbePerCRD: probes on different CRDs of the pool
// run at once, the lowest free CRD first; a probe finding every CRD busy
// waits at most probeSlotWait, and a release wakes it at once.
func TestProbePoolRunsOneProbePerCRD(t *testing.T) {
	pool := newProbePool(trustProbeCRDs[:2])
	ctx := context.Background()
	first, releaseFirst, busy := pool.acquire(ctx)
	if busy != nil || first != trustProbeCRDs[0] {
		t.Fatalf("first acquire = %v, %v; want %s", first, busy, trustProbeCRDs[0].name)
	}
	second, releaseSecond, busy := pool.acquire(ctx)
	if busy != nil || second != trustProbeCRDs[1] {
		t.Fatalf("second acquire while the first probe runs = %v, %v; want %s at once", second, busy, trustProbeCRDs[1].name)
	}
	start := time.Now()
	if _, _, busy := pool.acquire(ctx); busy == nil {
		t.Fatal("a third probe got a CRD while both ran")
	} else if busy.verdict != trustInconclusive || !strings.Contains(busy.message, "busy") {
		t.Errorf("busy = %+v, want Inconclusive saying every CRD is busy", *busy)
	}
	if waited := time.Since(start); waited < probeSlotWait {
		t.Errorf("gave up after %s, want %s", waited, probeSlotWait)
	}

	woken := make(chan probeCRD)
	go func() {
		crd, release, busy := pool.acquire(ctx)
		if busy != nil {
			t.Errorf("a waiting probe got no CRD after a release: %s", busy.message)
			close(woken)
			return
		}
		release()
		woken <- crd
	}()
	time.Sleep(50 * time.Millisecond)
	releaseFirst()
	select {
	case crd := <-woken:
		if crd != trustProbeCRDs[0] {
			t.Errorf("the waiting probe got %s, want the released %s", crd.name, trustProbeCRDs[0].name)
		}
	case <-time.After(probeSlotWait):
		t.Fatal("a release did not wake the waiting probe")
	}
	releaseSecond()
}

// TestProbePoolHoldsOutMissingCRDs: a CRD found missing is skipped while
// held out and comes back afterwards; with every CRD missing the probe is
// Unavailable at once (the gate falls back) instead of waiting as if busy.
func TestProbePoolHoldsOutMissingCRDs(t *testing.T) {
	pool := newProbePool(trustProbeCRDs[:2])
	ctx := context.Background()
	crd, _, _ := pool.acquire(ctx)
	pool.holdOut(crd, time.Hour)
	next, _, busy := pool.acquire(ctx) // holdOut releases it
	if busy != nil || next != trustProbeCRDs[1] {
		t.Fatalf("acquire with %s held out = %v, %v; want %s", crd.name, next, busy, trustProbeCRDs[1].name)
	}
	pool.holdOut(next, 100*time.Millisecond)
	start := time.Now()
	_, _, busy = pool.acquire(ctx)
	if busy == nil || busy.verdict != trustUnavailable || !strings.Contains(busy.message, trustProbeCRDs[1].name) {
		t.Fatalf("acquire with every CRD missing = %+v, want Unavailable naming the CRDs", busy)
	}
	if waited := time.Since(start); waited >= probeSlotWait {
		t.Errorf("waited %s with every CRD missing, want no wait", waited)
	}
	time.Sleep(150 * time.Millisecond)
	back, release, busy := pool.acquire(ctx)
	if busy != nil || back != trustProbeCRDs[1] {
		t.Fatalf("acquire after the hold = %v, %v; want %s back", back, busy, trustProbeCRDs[1].name)
	}
	release()
}
