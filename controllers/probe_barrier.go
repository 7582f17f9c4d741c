package controllers

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// A probe must not read an answer before the API server has loaded the
// configuration it wrote to its probe CRD: the answer could come through
// the configuration before it. It used to prove that on its own CRD, with
// a write of its own first (the CRD pointed at a Service that does not
// exist, answered naming it) and a second wait after its real write. Any
// later write of any probe CRD answered through proves it as well
// (load_barrier.go), so a probe now writes its CRD once, at the webhook
// under test, and waits for a barrier round: one write of the barrier CRD,
// at a Service that does not exist and is named anew each round, answered
// naming that Service. A round proves every probe CRD write completed
// before it started, so the probes that wait at once share one; and a
// probe whose write another probe's answer already proves waits for none.
// That halves the writes of the pool's CRDs and the waits a probe holds its
// CRD for; the rounds add a write each, shared (each CRD write makes the
// API server rebuild that CRD's handler and OpenAPI). Measured: 6 probes
// wrote 6 pool and 4 barrier writes where they had written 12
// (probe_pool_api_test.go).

// trustProbeBarrierCRD is the barrier rounds' CRD: the first CRD shipped,
// kept out of the probe pool (probe_pool.go), so that nothing else writes
// its conversion. The admission probes create its objects at the storage
// version, which no conversion touches.
var trustProbeBarrierCRD = probeCRD{name: "trustprobes." + trustProbeGroup, kind: trustProbeKind}

// barrierRounds runs one barrier round at a time and lets every probe
// waiting meanwhile share it.
type barrierRounds struct {
	mu      sync.Mutex
	current *barrierRound // the round under way, nil when none is
}

type barrierRound struct {
	started time.Time
	waiters int           // awaits sharing it besides the one running it (under barrierRounds.mu)
	done    chan struct{} // closed when the round ended; then res and ok are set
	res     trustResult   // why it failed
	ok      bool
}

// probeBarrier is the rounds every probe of this process shares.
var probeBarrier barrierRounds

// await returns once proven covers completed (a probe CRD write whose
// response arrived then is loaded), running a round with run when none
// under way can prove it. run writes the barrier CRD and proves the write
// once answered through; it says why it could not. A round that fails and
// started after completed is this wait's answer: ok false.
func (b *barrierRounds) await(ctx context.Context, proven *loadBarrier, completed time.Time, run func(context.Context) (trustResult, bool)) (trustResult, bool) {
	for !proven.covers(completed) {
		b.mu.Lock()
		round, mine := b.current, false
		if round == nil {
			round = &barrierRound{started: time.Now(), done: make(chan struct{})}
			b.current, mine = round, true
		} else {
			round.waiters++
		}
		b.mu.Unlock()
		if mine {
			round.res, round.ok = run(ctx)
			b.mu.Lock()
			b.current = nil
			b.mu.Unlock()
			close(round.done)
		} else {
			select {
			case <-round.done:
			case <-ctx.Done():
				return trustResult{trustInconclusive, ctx.Err().Error()}, false
			}
		}
		if !round.ok && round.started.After(completed) {
			return round.res, false
		}
		// A round that started before the write completed proves nothing
		// about it, whatever its outcome: the next one will.
	}
	return trustResult{}, true
}

// barrierRound points the barrier CRD at a Service that does not exist,
// under a name no earlier round used, and proves the write once the API
// server answers naming it.
func (r *WebhookInstallReconciler) barrierRound(ctx context.Context) (trustResult, bool) {
	target := r.idleProbeNamed(trustProbeIdleService + "-" + strconv.FormatInt(time.Now().UnixNano(), 36))
	sent := time.Now()
	if _, res, ok := r.writeProbe(ctx, trustProbeBarrierCRD, target); !ok {
		return res, false
	}
	res, o := r.awaitProbe(ctx, trustProbeBarrierCRD, target, func(o probeOutcome) bool { return o.host == target.host })
	if o == nil {
		return res, false
	}
	crdLoadBarrier.prove(sent)
	return trustResult{}, true
}
