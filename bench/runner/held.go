package runner

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// heldKind is one kind of the operator's requests and how long they were
// in flight at the API server in all.
type heldKind struct {
	Kind  string
	Count int
	Held  time.Duration
}

// heldByKind sums, by kind of request, how long the operator's requests
// were in flight at the API server (received → completed): the part of
// its reconcile workers' time spent on round trips, and on which. Dry runs
// are a kind apart from writes, and the trust probes' requests (their
// CRDs, their dry runs) apart from the installs': the probes' share is
// what a rotation pays for its proof. Watches are left out (they last as
// long as the connection). Largest first.
func heldByKind(events []auditEvent) (kinds []heldKind, total time.Duration) {
	byKind := map[string]*heldKind{}
	for _, e := range events {
		if e.Verb == "watch" || e.Completed.Before(e.Received) {
			continue
		}
		k := requestKind(e)
		h := byKind[k]
		if h == nil {
			h = &heldKind{Kind: k}
			byKind[k] = h
		}
		d := e.Completed.Sub(e.Received)
		h.Count++
		h.Held += d
		total += d
	}
	for _, h := range byKind {
		kinds = append(kinds, *h)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if kinds[i].Held != kinds[j].Held {
			return kinds[i].Held > kinds[j].Held
		}
		return kinds[i].Kind < kinds[j].Kind
	})
	return kinds, total
}

// requestKind is "verb resource", "(dry run)" added for dry runs; a trust
// probe's request says so.
func requestKind(e auditEvent) string {
	resource, probe := e.resource(), false
	if _, ok := probeCRDOf(e); ok {
		probe = true
		if e.ObjectRef.Resource != "customresourcedefinitions" {
			resource = "the probe CRDs' objects"
		}
	}
	k := e.Verb + " " + resource
	if e.dryRun() {
		k += " (dry run)"
	}
	if probe {
		k += " [trust probe]"
	}
	return k
}

// probeCRDOf names the trust probe CRD a request is about: the CRD itself
// (get, patch) or one of its objects (the probe's dry runs).
func probeCRDOf(e auditEvent) (string, bool) {
	const group = "operators.hookwright.dev"
	switch {
	case e.ObjectRef.Resource == "customresourcedefinitions":
		name := e.ObjectRef.Name
		if strings.HasPrefix(name, "trustprobes") && strings.HasSuffix(name, "."+group) {
			return name, true
		}
	case e.ObjectRef.APIGroup == group && strings.HasPrefix(e.ObjectRef.Resource, "trustprobes"):
		return e.ObjectRef.Resource + "." + group, true
	}
	return "", false
}

// heldNote says, e.g., "the operator's requests were in flight 602 s in
// all, 62% of its workers' 973 s (...): create the probe CRDs' objects
// (dry run) [trust probe] ×2112 141 s, ...", the first n kinds.
func heldNote(kinds []heldKind, total time.Duration, workerSeconds float64, n int) string {
	if len(kinds) == 0 {
		return ""
	}
	parts := make([]string, 0, n)
	for _, k := range kinds[:min(n, len(kinds))] {
		parts = append(parts, fmt.Sprintf("%s ×%d %s (%s each)", k.Kind, k.Count, secs(k.Held.Seconds()), ms(k.Held.Seconds()/float64(k.Count))))
	}
	share := ""
	if workerSeconds > 0 {
		share = fmt.Sprintf(", %.0f%% of its reconcile workers' %s (reconciles × their mean time)", 100*total.Seconds()/workerSeconds, secs(workerSeconds))
	}
	return fmt.Sprintf("The operator's requests were in flight at the API server %s in all%s; the largest kinds: %s", secs(total.Seconds()), share, strings.Join(parts, "; "))
}

// probeLoadStats is how long the trust probes waited for the API server to
// load their CRD writes.
type probeLoadStats struct {
	Phases   int
	P50, P90 float64 // seconds
	DryRuns  float64 // per phase, on average
}

// probeLoads measures each phase of the trust probes: a write of a probe
// CRD, then dry runs of its objects until the API server answers through
// that write (trustprobe.go). A phase runs from the write's receipt to the
// end of the last dry run before the CRD's next write or read (a probe
// reads its CRD as it starts and as it ends); a write with no dry run
// after it is no phase.
func probeLoads(events []auditEvent) probeLoadStats {
	type phase struct {
		start, end time.Time
		dryRuns    int
	}
	sorted := append([]auditEvent(nil), events...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Received.Before(sorted[j].Received) })
	open := map[string]*phase{}
	var took []float64
	dryRuns := 0
	closePhase := func(crd string) {
		if p := open[crd]; p != nil && p.dryRuns > 0 {
			took = append(took, p.end.Sub(p.start).Seconds())
			dryRuns += p.dryRuns
		}
		delete(open, crd)
	}
	for _, e := range sorted {
		crd, ok := probeCRDOf(e)
		if !ok {
			continue
		}
		switch {
		case e.ObjectRef.Resource == "customresourcedefinitions" && e.isWrite():
			closePhase(crd)
			open[crd] = &phase{start: e.Received}
		case e.ObjectRef.Resource == "customresourcedefinitions":
			closePhase(crd)
		case e.dryRun() && open[crd] != nil:
			open[crd].dryRuns++
			open[crd].end = e.Completed
		}
	}
	for crd := range open {
		closePhase(crd)
	}
	s := probeLoadStats{Phases: len(took), P50: percentile(took, 50), P90: percentile(took, 90)}
	if len(took) > 0 {
		s.DryRuns = float64(dryRuns) / float64(len(took))
	}
	return s
}

func (s probeLoadStats) describe() string {
	if s.Phases == 0 {
		return ""
	}
	return fmt.Sprintf("A probe writes its CRD once, at the webhook under test, and dry-runs it once a barrier round has proven that write loaded (a write of the barrier CRD at a Service that does not exist, then dry runs until the API server answers naming it; the probes waiting at once share one). Each write of a probe CRD, the barrier's included, and its dry runs: %d such waits, from the write to the last dry run after it, took %s at p50 and %s at p90 (%.1f dry runs each).", s.Phases, ms(s.P50), ms(s.P90), s.DryRuns)
}
