package controllers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// probeCRD is one CRD of the trust probe pool (config/crd): a probe points
// its conversion at the webhook under test and dry-run creates one of its
// objects at v2.
type probeCRD struct {
	name string // <plural>.operators.hookwright.dev
	kind string
}

func (c probeCRD) apiVersion() string { return trustProbeGroup + "/v2" } // served, not stored: creating at it converts

// trustProbeCRDs are the probe CRDs of the pool, identical to the other
// CRDs Hookwright ships for probes but for their names. A probe holds one
// for its whole run (its conversion is the probe's); four let the CA
// rotations of four installs be proven at once, where one CRD made a
// rotation storm of a thousand installs wait for two thousand probes one
// after the other (and three left probes waiting over probeSlotWait for a
// free CRD in a storm). The fifth, trustprobes, is the barrier rounds' CRD
// (trustProbeBarrierCRD, probe_barrier.go) and the resource of the
// admission probes (admission_probe.go).
var trustProbeCRDs = []probeCRD{
	{name: "trustprobes2." + trustProbeGroup, kind: "TrustProbe2"},
	{name: "trustprobes3." + trustProbeGroup, kind: "TrustProbe3"},
	{name: "trustprobes4." + trustProbeGroup, kind: "TrustProbe4"},
	{name: "trustprobes5." + trustProbeGroup, kind: "TrustProbe5"},
}

// probeSlotWait bounds the wait for a free probe CRD: a worker never sits
// behind a queue of probes (each may take seconds against a webhook that
// hangs) while other installs' events wait for a worker.
const probeSlotWait = 2 * time.Second

// probeCRDRecheck is how long a probe CRD found missing stays out of the
// pool (an operator upgraded before its bundle's new CRDs, an admin who
// deleted one): the others serve meanwhile.
const probeCRDRecheck = time.Minute

// probePool hands out its CRDs, one probe at a time on each, lowest free
// first (so that one install's probes always use the same CRD, and a
// crash replay meets the same writes).
type probePool struct {
	mu       sync.Mutex
	crds     []probeCRD
	busy     []bool
	outUntil []time.Time   // missing: not handed out before then
	changed  chan struct{} // closed and replaced whenever a CRD is released
}

func newProbePool(crds []probeCRD) *probePool {
	return &probePool{crds: crds, busy: make([]bool, len(crds)), outUntil: make([]time.Time, len(crds)), changed: make(chan struct{})}
}

// acquire takes the lowest free CRD, waiting at most probeSlotWait. It
// says why it could not: every CRD is busy (Inconclusive: the gate tries
// again shortly), or every CRD is missing (Unavailable: the gate falls back).
func (p *probePool) acquire(ctx context.Context) (crd probeCRD, release func(), busy *trustResult) {
	timer := time.NewTimer(probeSlotWait)
	defer timer.Stop()
	for {
		p.mu.Lock()
		now, missing := time.Now(), 0
		for i, c := range p.crds {
			switch {
			case now.Before(p.outUntil[i]):
				missing++
			case !p.busy[i]:
				p.busy[i] = true
				p.mu.Unlock()
				return c, func() { p.release(i) }, nil
			}
		}
		changed := p.changed
		p.mu.Unlock()
		if missing == len(p.crds) {
			return probeCRD{}, nil, &trustResult{trustUnavailable, p.missingMessage()}
		}
		select {
		case <-changed:
		case <-timer.C:
			return probeCRD{}, nil, &trustResult{trustInconclusive, fmt.Sprintf("every trust probe CRD (%d) has been busy for over %s; trying again shortly", len(p.crds), probeSlotWait)}
		case <-ctx.Done():
			return probeCRD{}, nil, &trustResult{trustInconclusive, ctx.Err().Error()}
		}
	}
}

func (p *probePool) release(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.busy[i] = false
	close(p.changed)
	p.changed = make(chan struct{})
}

// holdOut releases a CRD found missing and keeps it out of the pool for
// the given time.
func (p *probePool) holdOut(crd probeCRD, d time.Duration) {
	for i, c := range p.crds {
		if c == crd {
			p.mu.Lock()
			p.outUntil[i] = time.Now().Add(d)
			p.mu.Unlock()
			p.release(i)
		}
	}
}

func (p *probePool) missingMessage() string {
	names := make([]string, len(p.crds))
	for i, c := range p.crds {
		names[i] = c.name
	}
	return fmt.Sprintf("no trust probe CRD is installed (%s: they ship in config/crd and the bundle)", strings.Join(names, ", "))
}
