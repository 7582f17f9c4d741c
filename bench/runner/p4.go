package runner

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// p4Size is one P4 batch: N installs (two CRDs each) created at once.
type p4Size struct {
	N, Converged     int
	Seconds          float64 // first create → last ConversionVerified
	CreateSeconds    float64 // how long creating the N installs took
	Writes, DryRuns  int
	EventWrites      int // of Writes, Events created or patched
	Breakdown        string
	WriteKinds       map[string]int // the writes by "<verb> <resource>"
	Reconciles       float64
	ReconcileMean    float64       // s per reconcile
	QueueWaitMean    float64       // s an item waited in the workqueue
	BusyFraction     float64       // share of the window the API server was serving the operator
	Held             []heldKind    // the operator's requests in the window by kind, and their time in flight
	HeldTotal        time.Duration // all of them
	ApplyP50         float64       // create → verified per install
	ApplyP99         float64
	StandInP50       float64 // Deployment written by the operator → available (the pod stand-in's share)
	Concurrency      float64
	OperatorCPU      float64 // CPU seconds the operator process used in the window
	TimedOut         bool
	Unfinished       int       // installs first seen verified with their first certificates in progress
	Stopped          string    // why the wait ended early
	StandInPerDeploy []float64 `json:"-"`
	// Cluster is the cluster the batch ran in, just before its creates.
	Cluster clusterSize
}

// clusterSize is how big the cluster was: earlier batches and measures
// stay installed, so a later batch runs against a larger API server.
type clusterSize struct {
	Installs, CRDs int
	APIServerRSS   int64 // bytes; 0 when unreadable
}

// clusterSize samples the cluster's installs and CRDs and kube-apiserver's
// RSS.
func (b *bench) clusterSize(ctx context.Context) clusterSize {
	size := clusterSize{Installs: b.countInstalls(ctx)}
	if crds, err := b.countCRDs(ctx); err == nil {
		size.CRDs = crds
	}
	if pid, err := processByExe("kube-apiserver"); err == nil {
		if m, err := sampleMemory(pid); err == nil {
			size.APIServerRSS = m.RSS
		}
	}
	return size
}

// p4 creates N installs at once for each size and times convergence; the
// writes are the operator's, as the audit log records them.
func (b *bench) p4(ctx context.Context) error {
	r := b.report
	r.P4 = &p4Result{}
	for idx, n := range b.sz.p4 {
		res, err := b.p4Batch(ctx, n, idx == len(b.sz.p4)-1)
		if res != nil {
			r.P4.Sizes = append(r.P4.Sizes, *res)
		}
		if err != nil {
			return err
		}
		if res.TimedOut {
			break
		}
	}
	b.p4Rows()
	return nil
}

func (b *bench) p4Batch(ctx context.Context, n int, last bool) (*p4Size, error) {
	nss := names(fmt.Sprintf("p4-%d-%%04d", n), n)
	b.logf("P4 N=%d: preparing %d namespaces with %d CRD(s) each", n, n, b.sz.p4CRDs)
	prepStart := time.Now()
	if err := b.prepareInstalls(ctx, nss, b.sz.p4CRDs); err != nil {
		return nil, err
	}
	b.logf("P4 N=%d: %d CRDs ready in %s", n, b.sz.p4CRDs*n, time.Since(prepStart).Round(time.Second))

	// The largest size gets what the budget leaves after the later measures.
	limit := b.sz.p4MaxPerSize
	if left := time.Until(b.deadline) - b.sz.reserveAfterP4; left < limit {
		limit = max(left, time.Minute)
	}
	m0, err := b.operator.metrics()
	if err != nil {
		return nil, err
	}
	mark, err := b.audit.mark()
	if err != nil {
		return nil, err
	}
	keys := make([]types.NamespacedName, n)
	var profiled <-chan profileOutcome
	var opProfiled <-chan operatorProfileOutcome
	stopProfile := make(chan struct{})
	if last {
		profiled = profileAPIServer(ctx, b.cluster.Config, b.apiServerProfilePath("p4"), stopProfile)
		opProfiled = b.profileOperator(ctx, b.operatorProfilePath(), stopProfile)
	}
	cluster := b.clusterSize(ctx)
	cpu0 := cpuSeconds(b.operator.pid())
	t0 := time.Now()
	if err := parallel(n, 16, func(i int) error {
		keys[i] = types.NamespacedName{Namespace: nss[i], Name: installName}
		// trustOverlap 0s changes nothing here; it lets the rotation storm
		// (storm.go) run these installs' CA rotations to their end.
		return b.c.Create(ctx, webhookInstall(nss[i], crdNames(nss[i], b.sz.p4CRDs), v1alpha1.CertificatePolicy{TrustOverlap: &metav1.Duration{}}))
	}); err != nil {
		return nil, err
	}
	res := &p4Size{N: n, CreateSeconds: time.Since(t0).Seconds(), Cluster: cluster}
	b.logf("P4 N=%d: created in %s; waiting up to %s for every install to be verified", n, secs(res.CreateSeconds), limit.Round(time.Second))
	done, waitErr := b.observer.waitAllStall(ctx, b.observer.verified, keys, t0.Add(limit), 90*time.Second)
	res.Converged = done
	res.Unfinished = b.observer.countUnfinished(keys)
	end := time.Now()
	if waitErr == nil {
		end = t0
		for _, k := range keys {
			if t, _ := b.observer.get(b.observer.verified, k); t.After(end) {
				end = t
			}
		}
	} else {
		res.TimedOut = true
		res.Stopped = waitErr.Error() + "; " + b.unconverged(ctx, keys)
		b.logf("P4 N=%d: stopped waiting (limit %s): %v", n, limit.Round(time.Second), waitErr)
	}
	res.Seconds = end.Sub(t0).Seconds()
	res.OperatorCPU = cpuSeconds(b.operator.pid()) - cpu0
	if profiled != nil {
		close(stopProfile)
		if out := <-profiled; out.err != nil {
			b.record("P4 kube-apiserver profile", out.err)
		} else {
			b.report.P4.APIServer = out.profile
			b.logf("P4 N=%d: kube-apiserver profile %s (%s of CPU in %s)", n, out.profile.Path, secs(out.profile.CPU), secs(out.profile.Seconds))
		}
		if out := <-opProfiled; out.err != nil {
			b.record("P4 operator profile", out.err)
		} else {
			out.profile.N = n
			b.report.Profile = out.profile
			b.logf("P4 N=%d: operator profile %s (%s of CPU in %s)", n, out.profile.Path, secs(out.profile.CPU), out.profile.Elapsed.Round(time.Second))
		}
	}

	// Quiet for longer than the 2 s after which a first verification is
	// confirmed, so that the dry runs and reconciles include the
	// confirmations of the last installs verified.
	events, err := b.audit.waitQuiet(mark, operatorUser, 3*time.Second, 30*time.Second)
	if err != nil {
		return res, err
	}
	writes := writesOf(events)
	res.Writes, res.DryRuns, res.Breakdown, res.WriteKinds = len(writes), dryRunsOf(events), breakdown(writes), kindCounts(writes)
	for _, e := range writes {
		if e.ObjectRef.Resource == "events" {
			res.EventWrites++
		}
	}
	var window []auditEvent
	deploymentWritten := map[string]time.Time{}
	for _, e := range events {
		if !e.Received.After(end) {
			window = append(window, e)
		}
		if e.isWrite() && e.ObjectRef.Resource == "deployments" {
			if _, seen := deploymentWritten[e.ObjectRef.Namespace]; !seen {
				deploymentWritten[e.ObjectRef.Namespace] = e.Received
			}
		}
	}
	res.BusyFraction = busyTime(window).Seconds() / end.Sub(t0).Seconds()
	res.Held, res.HeldTotal = heldByKind(window)
	var applyToVerified, standIn []float64
	for _, k := range keys {
		verified, ok := b.observer.get(b.observer.verified, k)
		if !ok {
			continue
		}
		if created, ok := b.observer.get(b.observer.created, k); ok {
			applyToVerified = append(applyToVerified, verified.Sub(created).Seconds())
		}
		available, ok := b.observer.get(b.observer.available, types.NamespacedName{Namespace: k.Namespace, Name: webhookDeployment})
		if written, ok2 := deploymentWritten[k.Namespace]; ok && ok2 {
			standIn = append(standIn, available.Sub(written).Seconds())
		}
	}
	res.ApplyP50, res.ApplyP99 = percentile(applyToVerified, 50), percentile(applyToVerified, 99)
	res.StandInP50 = percentile(standIn, 50)
	if m1, err := b.operator.metrics(); err == nil {
		res.Reconciles, res.ReconcileMean, res.QueueWaitMean = workqueueDelta(m0, m1)
		res.Concurrency = m1.sum("controller_runtime_max_concurrent_reconciles", "controller", reconcilerName)
	}
	b.logf("P4 N=%d: %d/%d converged in %s, %d writes (%.1f per install), %d dry runs", n, res.Converged, n, secs(res.Seconds), res.Writes, float64(res.Writes)/float64(n), res.DryRuns)
	return res, nil
}

// unconverged summarizes the reasons of the installs not yet verified.
func (b *bench) unconverged(ctx context.Context, keys []types.NamespacedName) string {
	count := map[string]int{}
	example := map[string]string{}
	for _, k := range keys {
		if _, ok := b.observer.get(b.observer.verified, k); ok {
			continue
		}
		whi := &v1alpha1.WebhookInstall{}
		if err := b.c.Get(ctx, k, whi); err != nil {
			continue
		}
		reason := string(whi.Status.Phase) + "/" + whi.Status.Reason
		count[reason]++
		example[reason] = whi.Status.Message
	}
	var parts []string
	for reason, n := range count {
		msg := example[reason]
		if len(msg) > 160 {
			msg = msg[:160] + "…"
		}
		parts = append(parts, fmt.Sprintf("%d %s (e.g. %q)", n, reason, msg))
	}
	sort.Strings(parts)
	return "unverified installs: " + strings.Join(parts, ", ")
}

// p4Rows fits time and writes against N and writes the P4 rows.
func (b *bench) p4Rows() {
	sizes := b.report.P4.Sizes
	var xs, ts, ws []float64
	for _, s := range sizes {
		if s.TimedOut {
			continue
		}
		xs = append(xs, float64(s.N))
		ts = append(ts, s.Seconds)
		ws = append(ws, float64(s.Writes))
	}
	p := b.report.P4
	p.TimeA, p.TimeB, p.TimeR2 = linearFit(xs, ts)
	p.WriteA, p.WriteB, p.WriteR2 = linearFit(xs, ws)
	var cells []string
	for _, s := range sizes {
		cell := fmt.Sprintf("N=%d: %s", s.N, secs(s.Seconds))
		if s.TimedOut {
			cell = fmt.Sprintf("N=%d: %d of %d in %s (stopped: %s)", s.N, s.Converged, s.N, secs(s.Seconds), s.Stopped)
		}
		cells = append(cells, cell)
	}
	largest := sizes[len(sizes)-1]
	// Linear: the per-install cost at the largest size is within 1.5x of
	// that at the smallest (a quadratic step would grow it ~N-fold).
	first := sizes[0]
	perFirst, perLargest := first.Seconds/float64(first.N), largest.Seconds/float64(largest.N)
	linear := !largest.TimedOut && perLargest <= 1.5*perFirst
	p.Linear = linear
	within := !largest.TimedOut && largest.N >= 1000 && largest.Seconds <= 60
	if b.opts.Smoke {
		within = !largest.TimedOut
	}
	b.report.setRow(Row{
		ID: "P4", Measure: fmt.Sprintf("Converge N installs (%d CRDs each) created at once", b.sz.p4CRDs),
		Goal: "1,000 in ≤ 60 s", Hookwright: joinCells(cells), Anchor: "—",
		Met: metText(within),
	})
	b.report.setRow(Row{
		ID: "P4 fit", Measure: "Growth per install (least squares over N)",
		Goal: "linear",
		Hookwright: fmt.Sprintf("%s + %.1f ms/install (R² %.3f); %.1f writes/install + %.0f (R² %.3f)",
			secs(p.TimeA), p.TimeB*1000, p.TimeR2, p.WriteB, p.WriteA, p.WriteR2),
		Anchor: "—",
		Met:    metText(linear && !math.IsNaN(p.TimeB)),
	})
	perInstall := float64(largest.Writes) / float64(largest.N)
	b.report.setRow(Row{
		ID: "P4 writes", Measure: fmt.Sprintf("API writes per install to converge, N=%d (Events among them)", largest.N),
		Goal:       fmt.Sprintf("≤ %d", writesPerInstallGoal),
		Hookwright: fmt.Sprintf("%.1f (Events %.1f)", perInstall, float64(largest.EventWrites)/float64(largest.N)),
		Anchor:     "—",
		Met:        metText(!largest.TimedOut && perInstall <= writesPerInstallGoal),
	})
	if row, ok := b.report.P4Floor.row(first); ok {
		b.report.setRow(row)
	}
}

// writesPerInstallGoal is the API writes an install may take to converge.
const writesPerInstallGoal = 10

func joinCells(cells []string) string {
	out := ""
	for i, c := range cells {
		if i > 0 {
			out += "; "
		}
		out += c
	}
	return out
}

// reconcilerName is the WebhookInstall controller's name in the metrics.
const reconcilerName = "webhookinstall"

// workqueueDelta: the reconciles between two scrapes of the operator's
// metrics, their mean duration and the mean time items waited queued.
func workqueueDelta(m0, m1 promText) (reconciles, reconcileMean, queueWaitMean float64) {
	delta := func(name, label string) float64 {
		return m1.sum(name, label, reconcilerName) - m0.sum(name, label, reconcilerName)
	}
	reconciles = delta("controller_runtime_reconcile_total", "controller")
	reconcileMean = delta("controller_runtime_reconcile_time_seconds_sum", "controller") / delta("controller_runtime_reconcile_time_seconds_count", "controller")
	queueWaitMean = delta("workqueue_queue_duration_seconds_sum", "name") / delta("workqueue_queue_duration_seconds_count", "name")
	return reconciles, reconcileMean, queueWaitMean
}

// clusterGrowth tells the growth of the whole cluster apart from the
// growth in N: the batches run one after another in one cluster, so the
// largest N also meets the largest API server.
func (p *p4Result) clusterGrowth() string {
	if len(p.Sizes) < 2 {
		return ""
	}
	var cells []string
	for _, s := range p.Sizes {
		rss := "RSS unreadable"
		if s.Cluster.APIServerRSS > 0 {
			rss = "RSS " + mib(s.Cluster.APIServerRSS)
		}
		cells = append(cells, fmt.Sprintf("N=%d: %d installs, %d CRDs, kube-apiserver %s", s.N, s.Cluster.Installs, s.Cluster.CRDs, rss))
	}
	first, last := p.Sizes[0], p.Sizes[len(p.Sizes)-1]
	growth := fmt.Sprintf("From N=%d to N=%d, N grew %.0f×; the time per install %.2f×",
		first.N, last.N, float64(last.N)/float64(first.N), (last.Seconds/float64(last.N))/(first.Seconds/float64(first.N)))
	if first.ReconcileMean > 0 {
		growth += fmt.Sprintf(" and the mean reconcile %.2f×", last.ReconcileMean/first.ReconcileMean)
	}
	if first.Cluster.CRDs > 0 {
		growth += fmt.Sprintf(", while the cluster's CRDs grew %.1f×", float64(last.Cluster.CRDs)/float64(first.Cluster.CRDs))
	}
	if first.Cluster.APIServerRSS > 0 && last.Cluster.APIServerRSS > 0 {
		growth += fmt.Sprintf(" and kube-apiserver's RSS %.1f×", float64(last.Cluster.APIServerRSS)/float64(first.Cluster.APIServerRSS))
	}
	return fmt.Sprintf("The cluster each batch ran in, sampled just before its creates (its own CRDs included; earlier batches and measures stay installed): %s. %s.",
		strings.Join(cells, "; "), growth)
}

// prepareInstalls gives each namespace crds established CRDs and a ready
// pod stand-in for its webhook.
func (b *bench) prepareInstalls(ctx context.Context, nss []string, crds int) error {
	return parallel(len(nss), 8, func(i int) error {
		ns := nss[i]
		if err := b.namespace(ctx, ns); err != nil {
			return err
		}
		b.cluster.Kubelet.Serve(ns, webhookDeployment, converterHost{})
		for _, kind := range crdKinds[:crds] {
			if err := b.createCRD(ctx, convertedCRD(ns, kind, nil)); err != nil {
				return err
			}
		}
		return nil
	})
}
