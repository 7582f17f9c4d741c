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
