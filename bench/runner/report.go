package runner

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hookwright/hookwright/internal/memlimit"
)

// Row is one line of the results table.
type Row struct {
	ID, Measure, Goal, Hookwright, Anchor, Met string
}

// RowIDs are the rows every complete run has, in table order.
var RowIDs = []string{"P1", "P2", "P3", "P4", "P4 fit", "P4 writes", "P4 floor", "P5 idle", "P5 loaded", "P5 vs anchor", "P5 limit", "Cert ECDSA-P256", "Cert ECDSA-P384", "Cert RSA-2048", "P6", "Storm", "Storm floor", "Migration"}

// Report is a run's results.
type Report struct {
	Started     time.Time
	Duration    time.Duration
	Budget      time.Duration // what the run was given (--budget)
	Cores       int
	Smoke       bool
	Overridden  bool // sizes set by flags: not the published configuration
	GoVersion   string
	KubeVersion string
	Commit      string
	MaxLoad     float64 // highest 1-minute load average seen during the run
	// ControllerManagerQPS is the test ground's kube-controller-manager
	// --kube-api-qps (0: its default, 20).
	ControllerManagerQPS int
	Rows                 []Row
	Failures             []string

	P1               *p1Result
	P2               *p2Result
	P3               *p3Result
	Migration        *migrationResult
	P4               *p4Result
	P4Floor          *p4FloorResult
	Storm            *stormResult
	StormFloor       *stormFloorResult
	P5               *p5Result
	MemoryLimit      *memoryLimitResult
	Profile          *profileResult
	CertBench        map[string]float64
	CertBenchCommand string
	KitBench         map[string]float64
	KitBenchCommand  string
}

type p1Result struct {
	N                               int
	HW, HWApply, CC                 []time.Duration // CC: cert-controller's start → first conversion
	HWWarmup, CCWarmup              time.Duration   // the uncounted first install of each
	HWFailures                      int             // conversions that failed between available and verified
	Floor                           []time.Duration // the physical floor: available → first conversion, the bench pointing the CRD
	FloorFailures                   int
	FloorThroughNone                int           // dry-runs that succeeded through None before the API server applied the floor's patch
	CCFailures                      int           // conversions that failed from the CRD pointing at the Service to the first success
	CCSlowest                       time.Duration // the longest of those requests
	WarmupSlowest                   string        // the warm-up's slowest operator request
	WarmupSlowestTime               time.Duration
	RequestsP50, BusyP50            float64 // operator requests in the window, API server time on them
	Split                           p1Split // where the median install's time goes
	Tail                            p1Tail  // the installs over the p99 goal, and what they waited on
	Median, Slowest                 string  // install (its time)
	MedianTimeline, SlowestTimeline []string
}

// profileResult is the operator's CPU profile over P4's largest batch.
type profileResult struct {
	Path    string
	N       int
	Elapsed time.Duration // wall time profiled
	CPU     float64       // CPU seconds sampled in it
	Top     string        // go tool pprof -top -cum, Hookwright's controllers
}

type p2Result struct {
	Delays   []time.Duration
	Installs int
	Period   time.Duration
}

type p3Result struct {
	Installs, Succeeded int
	SyncPeriod          time.Duration
	Settled             time.Duration // waited for every install to say Succeeded
	Restart, Periodic   *resyncResult
}

// resyncResult is what the operator did in one resync window.
type resyncResult struct {
	Writes         []auditEvent `json:"-"`
	Reads, DryRuns int
	Breakdown      string
	Took           time.Duration // the restart, or the periodic resync's first reconcile → n installs reconciled
	Waited         time.Duration // periodic: the restart wave's end → the resync's first reconcile
	Reconciles     float64
	// Traces are, for the first installs that wrote (writesTraced), every
	// request about them in the window, timed from its start: an idle
	// resync that writes says which install and after what.
	Traces []installTrace `json:"-"`
}

// installTrace is one install's requests in a window.
type installTrace struct {
	Namespace string
	Lines     []string
}

type p4Result struct {
	Sizes                   []p4Size
	TimeA, TimeB, TimeR2    float64
	WriteA, WriteB, WriteR2 float64
	Linear                  bool
	// APIServer: kube-apiserver's CPU profile over the largest batch.
	APIServer *apiServerProfile
}

type p5Result struct {
	HWIdle, HWLoaded, CCIdle, CCLoaded memory
	HWHeap, CCHeap                     int64 // Go heap in use when loaded
	HWIdleHeap, CCIdleHeap             int64
	Secrets, CRDs, SchemaKB            int
	Created                            time.Duration
	Census                             []string
	Unsettled                          []string // samples whose RSS had not settled within the wait
}

func (r *Report) setRow(row Row) {
	for i := range r.Rows {
		if r.Rows[i].ID == row.ID {
			r.Rows[i] = row
			return
		}
	}
	r.Rows = append(r.Rows, row)
}

func (r *Report) amendRow(id string, fn func(*Row)) {
	for i := range r.Rows {
		if r.Rows[i].ID == id {
			fn(&r.Rows[i])
		}
	}
}

// Row returns the row id, if the run produced it.
func (r *Report) Row(id string) (Row, bool) {
	for _, row := range r.Rows {
		if row.ID == id {
			return row, true
		}
	}
	return Row{}, false
}

// Markdown renders the report: the table, then how each figure was
// measured, then the evidence for every goal not met.
func (r *Report) Markdown() string {
	var s strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&s, format+"\n", args...) }
	title := "Hookwright benchmark results"
	if r.Smoke {
		title += " (SMOKE MODE: tiny sizes, the figures mean nothing)"
	}
	if r.Overridden {
		title += " (sizes overridden by flags: not the published configuration)"
	}
	w("# %s", title)
	w("")
	w("Measured %s on %d cores (%s, kube-apiserver %s) at commit %s, in one run of %s%s; the highest 1-minute load average during the run was %.1f (the benchmark's own processes included). Reproduce with `make bench` (writes this file).",
		r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Cores, r.GoVersion, r.KubeVersion, r.Commit, r.Duration.Round(time.Second), overBudget(r.Duration, r.Budget), r.MaxLoad)
	w("")
	w("The anchor is open-policy-agent/cert-controller v0.16.0 in a minimal manager of ours (bench/certcontroller), run against the same control plane in the same run. Both operators run as separate processes; API writes are counted from the API server's audit log (level Metadata), memory from /proc/<pid>/status.")
	if r.ControllerManagerQPS > 0 {
		w("")
		w("The control plane's kube-controller-manager runs with --kube-api-qps=%d (burst %d) instead of its default 20 (burst 30): it writes several objects for every new webhook Deployment (its ReplicaSet, Pod, their status, EndpointSlices), and at its default rate those writes, not the operator, would bound how fast N installs' Deployments become available.", r.ControllerManagerQPS, 2*r.ControllerManagerQPS)
	}
	w("")
	w("| | Measure | Goal | Hookwright | cert-controller v0.16.0 | Met |")
	w("|---|---|---|---|---|---|")
	ordered := append([]Row(nil), r.Rows...)
	order := map[string]int{}
	for i, id := range RowIDs {
		order[id] = i
	}
	sort.SliceStable(ordered, func(i, j int) bool { return order[ordered[i].ID] < order[ordered[j].ID] })
	for _, row := range ordered {
		w("| %s | %s | %s | %s | %s | %s |", row.ID, row.Measure, row.Goal, orDash(row.Hookwright), orDash(row.Anchor), row.Met)
	}
	for _, id := range RowIDs {
		if _, ok := r.Row(id); !ok {
			w("| %s | not measured in this run (see failures) | | | | **no** |", id)
		}
	}
	if len(r.Failures) > 0 {
		w("")
		w("**Failures in this run:**")
		w("")
		for _, f := range r.Failures {
			w("- %s", strings.ReplaceAll(f, "\n", " "))
		}
	}
	r.details(w)
	return s.String()
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func (r *Report) details(w func(string, ...any)) {
	w("")
	w("## How each figure is measured")
	w("")
	if p := r.P1; p != nil {
		w("**P1.** Each install gets its own namespace, with its CRD (two served versions) already established and the pod stand-in ready to run its webhook. Hookwright: a WebhookInstall is created, and the time runs from the moment the driver's watch sees the webhook Deployment available (written by kube-controller-manager's deployment controller once the node stand-in reports the pod ready) to the moment it sees ConversionVerified=True. Installs are applied one at a time, after one warm-up install that is not counted (the first conversion through a new webhook pays the test ground's cold paths): it took %s (its slowest request, audit log: %s, %s at the API server).", ms(p.HWWarmup.Seconds()), p.WarmupSlowest, ms(p.WarmupSlowestTime.Seconds()))
		w("")
		w("cert-controller is timed from its own start, as an operator embedding it runs: per webhook, its CRD is created pointing at the Service (no caBundle, as cert-controller requires) with an empty Secret, and conversions are probed from that moment (a server-side dry-run create at v2 every 5 ms); its own process with one rotator starts; the Deployment and Service are created once it filled the Secret (the pod waits for its certificate). From start to the first conversion through the webhook: p50 %s, p90 %s, max %s over %d webhooks (warm-up %s, not counted); %d conversions failed between the CRD pointing at the Service and that first success, and the slowest request took %s: the API server retries a conversion webhook it cannot connect to for a few seconds (with backoff), so a webhook that comes up within that budget holds requests instead of failing them, and one that takes longer fails them; cert-controller points the CRD at the webhook before anything serves.",
			ms(percentile(durations(p.CC), 50)), ms(percentile(durations(p.CC), 90)), ms(percentile(durations(p.CC), 100)), len(p.CC), ms(p.CCWarmup.Seconds()), p.CCFailures, ms(p.CCSlowest.Seconds()))
		w("")
		w("The physical floor is measured in the same run: the bench does an operator's job with nothing in between (certificates and Secret made before the Deployment; the instant its watch sees the Deployment available it points the CRD at the Service, caBundle included, in one patch) and times until the first conversion through the webhook. Failed conversions are counted with a server-side dry-run create at v2 every 5 ms: for Hookwright from the Deployment available (the earliest moment it may point the CRD) to ConversionVerified=True: %d over %d installs; for the floor, from its patch to the first success: %d (what pointing a CRD before the endpoints are ready costs). A dry-run the webhook did not answer is no success: the CRD said None until the patch, and the API server applies a CRD change asynchronously, so a dry-run right after the patch may still convert through None; the floor's first success is the first dry-run the stand-in webhook answered (it counts the reviews it serves). %d dry-runs succeeded through None and were not counted.", p.HWFailures, len(p.HW), p.FloorFailures, p.FloorThroughNone)
		w("")
		w("| | p50 | p90 | p99 | max | apply → ready p50 |")
		w("|---|---|---|---|---|---|")
		for _, row := range []struct {
			name         string
			avail, apply []time.Duration
		}{{"Hookwright", p.HW, p.HWApply}, {"physical floor", p.Floor, nil}} {
			if len(row.avail) == 0 {
				continue
			}
			d := durations(row.avail)
			w("| %s | %s | %s | %s | %s | %s |", row.name, ms(percentile(d, 50)), ms(percentile(d, 90)), ms(percentile(d, 99)), ms(percentile(d, 100)), ms(percentile(durations(row.apply), 50)))
		}
		w("")
	}
	if p := r.P2; p != nil {
		d := durations(p.Delays)
		w("**P2.** %d installs with servingLifetime %s and renewBefore %s renew their serving certificate every %s. A renewal is due at the replaced certificate's NotAfter minus renewBefore; it starts with the operator's write of the new serving Secret, timed by the API server (audit requestReceivedTimestamp). Delays: p50 %s, p90 %s, max %s over %d renewals (negative: started before the due second).",
			p.Installs, r.p2Lifetime(), r.p2RenewBefore(), p.Period, ms(percentile(d, 50)), ms(percentile(d, 90)), ms(percentile(d, 100)), len(d))
		w("")
	}
	if p := r.P3; p != nil {
		w("**P3.** It starts once every install says Succeeded (%s after P4's last batch; at most %s): P4's largest batch may leave installs converging when its wait ends. Two idle resyncs over %d installs (%d Succeeded), each counted from the operator's requests in the audit log until 3 s without a write (create/update/patch/delete) or a dry run. After a restart (with `--sync-period=%s`), its fresh caches hand every install to the reconciler once, and it verifies again the conversions and admission webhooks first verified in the 10 minutes before it (a stopped predecessor may not have confirmed them): %s. Then controller-runtime's periodic resync (SyncPeriod %s: every informer replays its objects) delivers every install again: %s. It came %s after the restart wave: client-go resyncs an event handler added after its informer started, as controller-runtime adds its controllers', only at the informer's second resync check, about twice SyncPeriod after the start. The operator is then restarted with its default flags for P5.",
			p.Settled.Round(time.Second), sizesFor(r.Smoke).settleInstalls, p.Installs, p.Succeeded, p.SyncPeriod, p.Restart.describe("restart"), p.SyncPeriod, p.Periodic.describe("resync's first reconcile"), p.Periodic.Waited.Round(time.Second))
		if p4 := r.P4; p4 != nil && len(p4.Sizes) > 0 {
			last := p4.Sizes[len(p4.Sizes)-1]
			w("")
			w("The restart follows P4's N=%d batch: %d of its installs were first seen verified with their first certificates still in progress, a completion the restart's pass would write.", last.N, last.Unfinished)
		}
		w("")
	}
	if p := r.Migration; p != nil {
		w("**Migration.** %d Widgets are stored as v1 in one namespace whose install converts them (the webhook verified); the CRD's storage version is then moved to v2, and the time runs from that update to the install's migration record saying Succeeded, with status.storedVersions [v2]: %s, method %s, with the operator binary's default flags (pages of 500, 4 rewrites in parallel, at most 200 per second: the rate limit bounds the throughput on purpose). The operator's requests on the resource in the audit log over that window: %d (%s), %.2f per object: a list per page and one patch per object, each of which makes the API server call the webhook to read the stored object.",
			p.Objects, p.Elapsed.Round(100*time.Millisecond), p.Method, p.Requests, verbs(p.ByVerb), float64(p.Requests)/float64(p.Objects))
		w("")
	}
	if p := r.P4; p != nil {
		w("**P4.** For each N, N namespaces each get two established CRDs and a ready pod stand-in; then N WebhookInstalls are created at once (16 concurrent creates), and the time runs from the first create to the last ConversionVerified=True seen. Writes are the operator's, from the audit log, until 3 s without a write or a dry run (dry-run verifications counted apart; a first verification is confirmed by a second one 2 s later). Batches run in order; earlier batches stay installed (idle).")
		w("")
		w("| N | converged | time | per install | writes | writes/install | dry runs | reconciles | mean reconcile | mean queue wait | API busy with operator | operator CPU | create → verified p50 / p99 | stand-in share p50 |")
		w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
		for _, s := range p.Sizes {
			w("| %d | %d | %s | %s | %d | %.1f | %d | %.0f | %s | %s | %.0f%% | %s (%.0f%% of wall) | %s / %s | %s |", s.N, s.Converged, secs(s.Seconds), ms(s.Seconds/float64(s.N)),
				s.Writes, float64(s.Writes)/float64(s.N), s.DryRuns, s.Reconciles, ms(s.ReconcileMean), ms(s.QueueWaitMean), 100*s.BusyFraction,
				secs(s.OperatorCPU), 100*s.OperatorCPU/s.Seconds, secs(s.ApplyP50), secs(s.ApplyP99), ms(s.StandInP50))
		}
		w("")
		w("Fit over the converged sizes: time = %s + %.1f ms × N (R² %.3f); writes = %.0f + %.2f × N (R² %.3f). \"Linear\" means the per-install time at the largest N is within 1.5× of that at the smallest: %v.",
			secs(p.TimeA), p.TimeB*1000, p.TimeR2, p.WriteA, p.WriteB, p.WriteR2, p.Linear)
		w("")
		if growth := p.clusterGrowth(); growth != "" {
			w("%s", growth)
			w("")
		}
		for _, s := range p.Sizes {
			w("- N=%d writes by kind: %s", s.N, s.Breakdown)
		}
		w("")
		var unfinished []string
		for _, s := range p.Sizes {
			unfinished = append(unfinished, fmt.Sprintf("N=%d: %d", s.N, s.Unfinished))
		}
		w("Installs first seen verified while their first certificates were still recorded in progress (their completion left to a later pass, with one more status write and its Event): %s.", strings.Join(unfinished, ", "))
		if len(p.Sizes) > 0 && p.Sizes[0].Concurrency > 0 {
			w("")
			w("The operator ran %0.f concurrent reconcile(s) (controller_runtime_max_concurrent_reconciles).", p.Sizes[0].Concurrency)
		}
		w("")
		if f := r.P4Floor; f != nil {
			w("%s", f.describe())
			w("")
		}
	}
	if p := r.Storm; p != nil {
		w("%s", p.describe())
		w("")
	}
	if f := r.StormFloor; f != nil {
		w("%s", f.describe())
		w("")
	}
	if p := r.P5; p != nil {
		w("**P5.** RSS is VmRSS from /proc/<pid>/status: the median of the last 10 samples taken 2 s apart (both operators over the same seconds), once they lie within 3%% of it (not settled within %s: %v); HWM is VmHWM, the peak since the process started. Idle: with every install present, at least %s after P3's restart resync ended and after cert-controller started (the Go runtime forces a GC every 2 minutes; until then an idle heap still counts the burst's garbage). Loaded: after creating %d foreign Secrets (2 KiB each, 10 namespaces) and %d foreign CRDs (~%d KB schema each) in %s, and %s to settle. cert-controller runs one rotator for one webhook (its smallest deployment) in the same cluster at the same moments. Go heap in use when loaded: Hookwright %s, cert-controller %s.",
			sizesFor(r.Smoke).memoryWait, orNone(p.Unsettled), sizesFor(r.Smoke).idleAfter, p.Secrets, p.CRDs, p.SchemaKB, p.Created.Round(time.Second), r.p5Settle(), mib(p.HWHeap), mib(p.CCHeap))
		w("")
		w("What the caches could hold when loaded (JSON as served; Go objects take more). Hookwright's cache drops the objects' managedFields, cert-controller's keeps them:")
		w("")
		for _, c := range p.Census {
			w("- %s", c)
		}
		w("")
	}
	if m := r.MemoryLimit; m != nil {
		w("**P5 limit.** Every operator process the run starts has its VmHWM read after each phase and before it is stopped (the first process lives through P1 and P4's bursts, one through P3's resyncs, the last through P5 and the storm); the highest is the peak. The limit is the manager container's `resources.limits.memory` in `%s`, as shipped; every operator process is given it in %s, as the manifest gives it, and so runs with the Go runtime's soft memory limit at %d%% of it, collecting more often as its heap nears that (a peak below the soft limit is what the collector paced by GOGC alone would reach). Heap per install: Go heap in use (go_memstats_heap_inuse_bytes) just after the first start, with no install, and idle in P5 with %d installs, a slope between two points.", shippedManifest, memlimit.EnvVar, memlimit.SharePercent, m.IdleInstalls)
		w("")
	}
	if len(r.CertBench) > 0 {
		w("**Cert issuance.** `%s` (key generation, signing, PEM encoding):", r.CertBenchCommand)
		w("")
		for _, n := range sortedKeys(r.CertBench) {
			w("- %s: %.0f ns/op (%s)", n, r.CertBench[n], ms(r.CertBench[n]/1e9))
		}
		w("")
	}
	if len(r.KitBench) > 0 {
		w("**P6.** `%s`: one ConversionReview (apiextensions.k8s.io/v1) of 1 or 100 v1 CronTabs to v2, served by the kit with the shipped converter (`crontab.Converter`, with and without its Prometheus metrics) and by controller-runtime's conversion webhook with the same conversion as typed Go types (Hub and Convertible); the request and response plumbing is shared:", r.KitBenchCommand)
		w("")
		for _, n := range sortedKeys(r.KitBench) {
			w("- %s: %.0f ns/op (%s)", n, r.KitBench[n], ms(r.KitBench[n]/1e9))
		}
		w("")
	}
	r.evidence(w)
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// evidence explains every goal the run did not meet, from the audit log
// and the operator's own metrics.
func (r *Report) evidence(w func(string, ...any)) {
	var notes []string
	if row, ok := r.Row("P1"); ok && row.Met != "yes" && r.P1 != nil {
		p := r.P1
		note := fmt.Sprintf("**P1.** Audit log, per install, between the Deployment seen available and ConversionVerified=True seen: the operator made %.0f requests at the median (the API server spent %s on them).",
			p.RequestsP50, ms(p.BusyP50))
		if sp := p.Split; sp.Installs > 0 {
			note += fmt.Sprintf(" Where the time goes, each part the median over the %d installs whose window holds a CRD patch, a dry run and a status write after it (the parts' medians need not add up): the Deployment available → the operator's CRD patch received %s; that patch → the verification's last dry run answered %s (the floor's own path, from its patch to its first success, plus the verification's reads); → the status write received %s; the status write %s at the API server; → the driver's watch saw it %s.",
				sp.Installs, ms(sp.Reaction.Seconds()), ms(sp.Verified.Seconds()), ms(sp.ToStatus.Seconds()), ms(sp.Status.Seconds()), ms(sp.Seen.Seconds()))
			if len(p.Floor) > 0 {
				floor := percentile(durations(p.Floor), 50)
				bound := floor + (sp.Status + sp.Seen).Seconds()
				note += fmt.Sprintf(" The floor ends where a dry run is answered; an install is verified once its status says so, so even an operator that reacted in no time would take the floor's %s plus the status write and its watch, %s: %.1f× the floor.",
					ms(floor), ms(bound), bound/floor)
			}
		}
		if t := p.Tail; t.Read && t.Over+t.FloorOver > 0 {
			note += fmt.Sprintf(" Over the p99 goal (%s): %d of Hookwright's installs and %d of the floor's; %d and %d of them waited on kube-controller-manager: its EndpointSlice controller had found its cache behind its own last write for the webhook's Service and synced it again %s later (its log, \"Error syncing endpoint slices for service, retrying\"; defaultSyncBackOff in kubernetes pkg/controller/endpointslice), and until then the Service listed no ready endpoint, which the operator waits for and against which the floor's conversions fail. (The pod stand-in reports a pod running, then ready, in two status writes milliseconds apart, each a change the controller syncs.)",
				ms(p1P99Goal.Seconds()), t.Over, t.FloorOver, t.OverRetried, t.FloorOverRetried, ms(sliceRetryBackOff.Seconds()))
		}
		note += fmt.Sprintf(" The median install, %s, then the slowest, %s; their requests, timed from the Deployment available (audit requestReceivedTimestamp, server time on the request, status):\n", p.Median, p.Slowest)
		for _, line := range p.MedianTimeline {
			note += "\n    " + line
		}
		note += "\n"
		for _, line := range p.SlowestTimeline {
			note += "\n    " + line
		}
		notes = append(notes, note)
	}
	if row, ok := r.Row("P3"); ok && row.Met != "yes" && r.P3 != nil {
		note := fmt.Sprintf("**P3.** The audit log shows the writes after the restart: %s; of the periodic resync: %s.", r.P3.Restart.Breakdown, r.P3.Periodic.Breakdown)
		for _, window := range []struct {
			name   string
			traces []installTrace
		}{{"restart", r.P3.Restart.Traces}, {"periodic resync", r.P3.Periodic.Traces}} {
			for _, t := range window.traces {
				note += fmt.Sprintf("\n\nThe requests about the install in %s during the %s, timed from its start (audit requestReceivedTimestamp, server time, status):\n", t.Namespace, window.name)
				for _, line := range t.Lines {
					note += "\n    " + line
				}
			}
		}
		notes = append(notes, note)
	}
	if p := r.P4; p != nil && len(p.Sizes) > 0 {
		row, _ := r.Row("P4")
		fit, _ := r.Row("P4 fit")
		if row.Met != "yes" || fit.Met != "yes" {
			last := p.Sizes[len(p.Sizes)-1]
			notes = append(notes, fmt.Sprintf("**P4.** At N=%d the operator ran %0.f concurrent reconcile(s); %.0f reconciles took %s each on average (%.1f per install) and queued items waited %s on average in the workqueue. The API server was serving the operator's requests %.0f%% of the wall time (union of the audit log's request intervals) while the operator process itself used %s of CPU (%.0f%% of the wall time, procfs); the rest is waiting: on each of the %0.f reconcile workers' sequence of round trips and on the pod stand-in (Deployment written → available %s at p50). Writes by kind: %s.",
				last.N, last.Concurrency, last.Reconciles, ms(last.ReconcileMean), last.Reconciles/float64(last.N), ms(last.QueueWaitMean), 100*last.BusyFraction,
				secs(last.OperatorCPU), 100*last.OperatorCPU/last.Seconds, last.Concurrency, ms(last.StandInP50), last.Breakdown))
			if held := heldNote(last.Held, last.HeldTotal, last.Reconciles*last.ReconcileMean, 6); held != "" {
				notes[len(notes)-1] += " " + held + "."
			}
		}
	}
	if p := r.P4; p != nil && len(p.Sizes) > 0 {
		if row, ok := r.Row("P4 writes"); ok && row.Met != "yes" {
			last := p.Sizes[len(p.Sizes)-1]
			notes = append(notes, writesNote(last.WriteKinds, last.N, r.P4Floor))
		}
	}
	if p := r.P4; p != nil && p.APIServer != nil && len(p.Sizes) > 0 {
		row, _ := r.Row("P4")
		if row.Met != "yes" {
			notes = append(notes, apiServerNote(p.APIServer, "P4", fmt.Sprintf("the N=%d batch", p.Sizes[len(p.Sizes)-1].N)))
		}
	}
	if st := r.Storm; st != nil {
		if row, _ := r.Row("Storm"); row.Met != "yes" {
			notes = append(notes, st.timeNote())
		}
	}
	if p := r.Profile; p != nil {
		row, _ := r.Row("P4")
		fit, _ := r.Row("P4 fit")
		if row.Met != "yes" || fit.Met != "yes" {
			notes = append(notes, fmt.Sprintf("**P4 CPU profile** (`%s`): the operator's own CPU profile (its `--pprof-bind-address`, /debug/pprof/profile in chunks of %s, merged) over the N=%d batch: %s of CPU in %s of wall time. Top entries by cumulative CPU, limited to Hookwright's controllers (`go tool pprof -top -cum -focus=hookwright/hookwright/controllers`):\n\n```\n%s\n```",
				filepath.Base(p.Path), operatorProfileChunk, p.N, secs(p.CPU), secs(p.Elapsed.Seconds()), p.Top))
		}
	}
	if p := r.P5; p != nil {
		if row, ok := r.Row("P5 loaded"); ok && row.Met != "yes" {
			notes = append(notes, fmt.Sprintf("**P5.** Hookwright's Go heap in use when loaded: %s of %s RSS.", mib(p.HWHeap), mib(p.HWLoaded.RSS)))
		}
		if row, ok := r.Row("P5 vs anchor"); ok && row.Met != "yes" {
			notes = append(notes, fmt.Sprintf("**P5 vs anchor.** Hookwright %s RSS (heap %s) against cert-controller %s (heap %s).", mib(p.HWLoaded.RSS), mib(p.HWHeap), mib(p.CCLoaded.RSS), mib(p.CCHeap)))
		}
	}
	if m := r.MemoryLimit; m != nil {
		if row, ok := r.Row("P5 limit"); ok && row.Met != "yes" {
			notes = append(notes, m.note())
		}
	}
	if row, ok := r.Row("P2"); ok && row.Met != "yes" && r.P2 != nil {
		notes = append(notes, "**P2.** See the delays above; the audit log timestamps of the renewal writes are the evidence.")
	}
	if len(notes) == 0 {
		return
	}
	w("## Goals not met: where the time, writes or memory go")
	w("")
	for _, n := range notes {
		w("%s", n)
		w("")
	}
}

func (r *Report) p2Lifetime() string    { return sizesFor(r.Smoke).p2Lifetime.String() }
func (r *Report) p2RenewBefore() string { return sizesFor(r.Smoke).p2RenewBefore.String() }
func (r *Report) p5Settle() string      { return sizesFor(r.Smoke).settle.String() }

var _ = math.NaN

// overBudget says when a run took longer than its budget, and why a run
// can: the budget shrinks only P4's largest size, so on a machine slower
// than the one the sizes were set on every other measure takes longer too.
// The Go benchmark rows (Cert, P6) time the same code in every run: they
// show how much slower.
func overBudget(took, budget time.Duration) string {
	if budget <= 0 || took <= budget {
		return ""
	}
	return fmt.Sprintf(", over its %s budget (the budget shrinks only P4's largest size; the Cert and P6 rows, the same code in every run, show this machine's speed against earlier runs')", budget)
}
