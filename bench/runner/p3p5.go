package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

// p3 counts the API writes of idle resyncs, both kinds: a restart (the
// operator's fresh caches deliver every install to the reconciler once)
// and controller-runtime's periodic resync (SyncPeriod, short here). The
// operator is restarted with --sync-period, the restart wave is counted,
// then the first periodic resync; then it is restarted without the flag
// so that P5 measures the shipped configuration.
func (b *bench) p3(ctx context.Context) error {
	settleStart := time.Now()
	n, succeeded, err := b.settleInstalls(ctx, b.sz.settleInstalls)
	if err != nil {
		return err
	}
	settled := time.Since(settleStart)
	b.logf("P3: restarting the operator over %d installs (%d Succeeded, after %s), --sync-period=%s", n, succeeded, settled.Round(time.Second), b.sz.syncPeriod)
	b.notePeak(ctx, "before P3 restarts it")
	b.operator.stop()
	restart, err := b.resyncWindow(ctx, n, true, "--sync-period="+b.sz.syncPeriod.String())
	if err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	b.logf("P3: restart: %d writes, %d reads, %s; waiting for the periodic resync", len(restart.Writes), restart.Reads, restart.Took.Round(time.Millisecond))
	periodic, err := b.resyncWindow(ctx, n, false)
	if err != nil {
		return fmt.Errorf("periodic resync: %w", err)
	}
	b.logf("P3: periodic resync: %d writes, %d reads, %s (it came %s after the restart wave)", len(periodic.Writes), periodic.Reads, periodic.Took.Round(time.Millisecond), periodic.Waited.Round(time.Second))

	// Back to the shipped configuration for P5; its idle clock starts here.
	b.notePeak(ctx, "P3's resyncs of every install")
	b.operator.stop()
	if _, err := b.resyncWindow(ctx, n, true); err != nil {
		return fmt.Errorf("restart without --sync-period: %w", err)
	}
	b.resyncDone = time.Now()

	b.report.P3 = &p3Result{Installs: n, Succeeded: succeeded, SyncPeriod: b.sz.syncPeriod, Settled: settled, Restart: restart, Periodic: periodic}
	b.report.setRow(Row{
		ID: "P3", Measure: fmt.Sprintf("API writes per idle resync of %d Succeeded installs: after a restart / periodic (SyncPeriod %s)", succeeded, b.sz.syncPeriod),
		Goal: "0", Hookwright: fmt.Sprintf("%d / %d", len(restart.Writes), len(periodic.Writes)), Anchor: "—",
		Met: metText(len(restart.Writes) == 0 && len(periodic.Writes) == 0 && succeeded == n),
	})
	return nil
}

// settleInstalls waits, up to limit, until every install says Succeeded,
// and returns how many there are and how many do. P3 counts the writes of
// idle resyncs: an install P4's largest batch left converging would make
// the restart's writes its own.
func (b *bench) settleInstalls(ctx context.Context, limit time.Duration) (n, succeeded int, err error) {
	deadline := time.Now().Add(limit)
	for {
		var installs v1alpha1.WebhookInstallList
		if err := b.c.List(ctx, &installs); err != nil {
			return 0, 0, err
		}
		n, succeeded = len(installs.Items), 0
		for _, whi := range installs.Items {
			if whi.Status.Phase == v1alpha1.PhaseSucceeded {
				succeeded++
			}
		}
		if succeeded == n || time.Now().After(deadline) {
			return n, succeeded, nil
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// resyncWindow starts the operator with args (restart) or waits for the
// running one's periodic resync (restart false), waits until the
// reconciler has handled at least n more installs, then reads the audit
// log until 3 s pass without an operator request.
func (b *bench) resyncWindow(ctx context.Context, n int, restart bool, args ...string) (*resyncResult, error) {
	var before float64 // a restarted operator counts from zero
	if !restart {
		m, err := b.operator.metrics()
		if err != nil {
			return nil, err
		}
		before = m.sum("controller_runtime_reconcile_total", "controller", "webhookinstall")
	}
	mark, err := b.audit.mark()
	if err != nil {
		return nil, err
	}
	started := time.Now()
	if restart {
		if err := b.startOperator(args...); err != nil {
			return nil, err
		}
	}
	// client-go resyncs an event handler added after its informer started
	// (as controller-runtime adds its controllers') only at the informer's
	// second resync check: the first periodic resync comes about two
	// SyncPeriods after the operator's start.
	deadline := time.Now().Add(5*time.Minute + 3*b.sz.syncPeriod)
	var reconciled float64
	var first time.Time // the resync's first reconcile, as polled
	for {
		m, err := b.operator.metrics()
		if err == nil {
			reconciled = m.sum("controller_runtime_reconcile_total", "controller", "webhookinstall") - before
			if reconciled > 0 && first.IsZero() {
				first = time.Now()
			}
			if reconciled >= float64(n) {
				break
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("only %.0f of %d installs reconciled within %s", reconciled, n, time.Since(started).Round(time.Second))
		}
		time.Sleep(200 * time.Millisecond)
	}
	took, waited := time.Since(started), time.Duration(0)
	if !restart {
		took, waited = time.Since(first), first.Sub(started)
	}
	events, err := b.audit.waitQuiet(mark, operatorUser, 3*time.Second, 30*time.Second)
	if err != nil {
		return nil, err
	}
	res := &resyncResult{Writes: writesOf(events), DryRuns: dryRunsOf(events), Took: took, Waited: waited, Reconciles: reconciled}
	for _, e := range events {
		if e.Verb == "get" || e.Verb == "list" {
			res.Reads++
		}
	}
	res.Breakdown = breakdown(res.Writes)
	res.Traces = traceWriters(events, res.Writes, started)
	return res, nil
}

// writesTraced is how many writing installs an idle resync's report traces.
const writesTraced = 3

// traceWriters gives, for each of the first writesTraced namespaces with
// a write, every request about its install in the window.
func traceWriters(events, writes []auditEvent, from time.Time) []installTrace {
	var traces []installTrace
	seen := map[string]bool{}
	for _, w := range writes {
		ns := w.ObjectRef.Namespace
		if ns == "" && w.ObjectRef.Resource == "customresourcedefinitions" {
			ns = namespaceOfCRD(w.ObjectRef.Name)
		}
		if ns == "" || seen[ns] || len(traces) == writesTraced {
			continue
		}
		seen[ns] = true
		traces = append(traces, installTrace{Namespace: ns, Lines: namespaceTimeline(events, ns, from)})
	}
	return traces
}

func (r *resyncResult) describe(start string) string {
	writes := "none"
	if len(r.Writes) > 0 {
		writes = r.Breakdown
	}
	return fmt.Sprintf("%d writes (%s), %d reads (get/list), %d dry runs, %.0f reconciles, %s from the %s to the last install reconciled",
		len(r.Writes), writes, r.Reads, r.DryRuns, r.Reconciles, r.Took.Round(100*time.Millisecond), start)
}

// p5 samples the operator's RSS idle, then with many foreign Secrets and
// large foreign CRDs, next to cert-controller (one rotator, one webhook)
// in the same cluster at the same moments.
func (b *bench) p5(ctx context.Context) error {
	var unsettled []string
	var unsettledMu sync.Mutex
	sample := func(name string, p *process) (memory, error) {
		m, settled, err := settledMemory(p.pid(), b.sz.memoryWait)
		if err == nil && !settled {
			unsettledMu.Lock()
			unsettled = append(unsettled, name)
			unsettledMu.Unlock()
		}
		return m, err
	}
	// Both operators are sampled over the same seconds: the same moments
	// of the cluster, in the time of one sample.
	sampleBoth := func(state string, cc *process) (hw, anchor memory, err error) {
		var hwErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			hw, hwErr = sample("Hookwright "+state, b.operator)
		}()
		anchor, err = sample("cert-controller "+state, cc)
		<-done
		return hw, anchor, errors.Join(hwErr, err)
	}
	const ns = "p5-cc"
	if err := b.namespace(ctx, ns); err != nil {
		return err
	}
	if err := b.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: anchorSecret}}); err != nil {
		return err
	}
	if err := b.createCRD(ctx, convertedCRD(ns, crdKinds[0], serviceConversion(ns))); err != nil {
		return err
	}
	webhooks := []anchorWebhook{{Namespace: ns, Secret: anchorSecret, Service: webhookService, CertDir: filepath.Join(b.work, "cc-certs", ns), CRDs: crdNames(ns, 1)}}
	cc, err := b.startAnchor("p5", webhooks)
	if err != nil {
		return err
	}
	defer cc.stop()
	if err := b.waitAnchorInjected(ctx, webhooks); err != nil {
		return err
	}
	// Idle means after the Go runtime's forced GC (every 2 minutes) has
	// collected the startup and resync garbage of both processes: without
	// allocation nothing else triggers a GC, and the heap would still
	// count it.
	idleFrom := time.Now().Add(b.sz.idleAfter)
	if after := b.resyncDone.Add(b.sz.idleAfter); after.After(idleFrom) {
		idleFrom = after
	}
	b.logf("P5: idle RSS from %s", idleFrom.Format("15:04:05"))
	time.Sleep(time.Until(idleFrom))
	hwIdle, ccIdle, err := sampleBoth("idle", cc)
	if err != nil {
		return err
	}
	hwIdleHeap, ccIdleHeap := heapInuse(b.operator), heapInuse(cc)
	b.memLimit.IdleHeap, b.memLimit.IdleInstalls = hwIdleHeap, b.countInstalls(ctx)

	b.logf("P5: creating %d foreign Secrets and %d foreign CRDs with ~%d KB schemas", b.sz.p5Secrets, b.sz.p5CRDs, b.sz.p5SchemaKB)
	started := time.Now()
	for i := 0; i < b.sz.foreignNamespace; i++ {
		if err := b.namespace(ctx, fmt.Sprintf("foreign-%d", i)); err != nil {
			return err
		}
	}
	if err := parallel(b.sz.p5Secrets, 16, func(i int) error {
		return b.c.Create(ctx, foreignSecret(fmt.Sprintf("foreign-%d", i%b.sz.foreignNamespace), i))
	}); err != nil {
		return err
	}
	b.logf("P5: %d Secrets created in %s", b.sz.p5Secrets, time.Since(started).Round(time.Second))
	if err := parallel(b.sz.p5CRDs, 4, func(i int) error { return b.createCRD(ctx, largeCRD(i, b.sz.p5SchemaKB)) }); err != nil {
		return err
	}
	created := time.Since(started)
	b.logf("P5: created in %s; settling %s", created.Round(time.Second), b.sz.settle)
	time.Sleep(b.sz.settle)
	hwLoaded, ccLoaded, err := sampleBoth("loaded", cc)
	if err != nil {
		return err
	}
	hwHeap, ccHeap := heapInuse(b.operator), heapInuse(cc)
	b.report.P5 = &p5Result{HWIdle: hwIdle, HWLoaded: hwLoaded, CCIdle: ccIdle, CCLoaded: ccLoaded, HWHeap: hwHeap, CCHeap: ccHeap, HWIdleHeap: hwIdleHeap, CCIdleHeap: ccIdleHeap,
		Secrets: b.sz.p5Secrets, CRDs: b.sz.p5CRDs, SchemaKB: b.sz.p5SchemaKB, Created: created, Census: b.census(ctx), Unsettled: unsettled}
	growth := float64(hwLoaded.RSS) / float64(hwIdle.RSS)
	vsAnchor := float64(hwLoaded.RSS) / float64(ccLoaded.RSS)
	b.report.setRow(Row{
		ID: "P5 idle", Measure: "Operator RSS idle (VmRSS; VmHWM)", Goal: "—",
		Hookwright: fmt.Sprintf("%s (HWM %s; Go heap in use %s)", mib(hwIdle.RSS), mib(hwIdle.HWM), mib(hwIdleHeap)),
		Anchor:     fmt.Sprintf("%s (HWM %s; heap %s)", mib(ccIdle.RSS), mib(ccIdle.HWM), mib(ccIdleHeap)), Met: "n/a",
	})
	b.report.setRow(Row{
		ID: "P5 loaded", Measure: fmt.Sprintf("RSS with %d foreign Secrets and %d foreign CRDs (~%d KB schemas)", b.sz.p5Secrets, b.sz.p5CRDs, b.sz.p5SchemaKB),
		Goal:       "≤ 1.3× idle",
		Hookwright: fmt.Sprintf("%s (HWM %s; heap %s) = %.2f× idle (heap %.2f×)", mib(hwLoaded.RSS), mib(hwLoaded.HWM), mib(hwHeap), growth, float64(hwHeap)/float64(hwIdleHeap)),
		Anchor: fmt.Sprintf("%s (HWM %s; heap %s) = %.2f× idle (heap %.2f×)", mib(ccLoaded.RSS), mib(ccLoaded.HWM), mib(ccHeap),
			float64(ccLoaded.RSS)/float64(ccIdle.RSS), float64(ccHeap)/float64(ccIdleHeap)),
		Met: metText(growth <= 1.3),
	})
	b.report.setRow(Row{
		ID: "P5 vs anchor", Measure: "Loaded RSS, Hookwright ÷ cert-controller", Goal: "≤ 0.5×",
		Hookwright: fmt.Sprintf("%.2f×", vsAnchor), Anchor: "1×", Met: metText(vsAnchor <= 0.5),
	})
	b.logf("P5: Hookwright %s → %s; cert-controller %s → %s", mib(hwIdle.RSS), mib(hwLoaded.RSS), mib(ccIdle.RSS), mib(ccLoaded.RSS))
	return nil
}

// census lists what each operator's caches hold, by the objects' JSON size
// as the API server serves them: Hookwright caches every WebhookInstall,
// its own labelled Secrets, Deployments and Services, and CRDs as metadata
// only; cert-controller's rotator caches its namespace's Secrets and every
// CRD in full.
func (b *bench) census(ctx context.Context) []string {
	managed := client.MatchingLabels{desired.LabelManagedBy: desired.ManagedByValue}
	crdMeta := &metav1.PartialObjectMetadataList{}
	crdMeta.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	lists := []struct {
		what string
		list client.ObjectList
		opts []client.ListOption
	}{
		{"WebhookInstalls", &v1alpha1.WebhookInstallList{}, nil},
		{"Secrets labelled managed-by=hookwright", &corev1.SecretList{}, []client.ListOption{managed}},
		{"Deployments labelled managed-by=hookwright", &appsv1.DeploymentList{}, []client.ListOption{managed}},
		{"Services labelled managed-by=hookwright", &corev1.ServiceList{}, []client.ListOption{managed}},
		{"CRDs, metadata only (Hookwright's watch)", crdMeta, nil},
		{"CRDs in full (cert-controller's cache)", &apiextensionsv1.CustomResourceDefinitionList{}, nil},
		{"Secrets, all namespaces (neither operator caches them all)", &corev1.SecretList{}, nil},
	}
	var out []string
	for _, l := range lists {
		if err := b.c.List(ctx, l.list, l.opts...); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", l.what, err))
			continue
		}
		out = append(out, censusLine(l.what, l.list))
	}
	return out
}

// censusLine sizes list as served, and the share of it that is
// managedFields, which Hookwright's cache drops (controllers.CacheOptions)
// and cert-controller's keeps. It strips them from list's items.
func censusLine(what string, list client.ObjectList) string {
	served, _ := json.Marshal(list)
	_ = meta.EachListItem(list, func(obj runtime.Object) error {
		if o, err := meta.Accessor(obj); err == nil {
			o.SetManagedFields(nil)
		}
		return nil
	})
	stripped, _ := json.Marshal(list)
	return fmt.Sprintf("%s: %d objects, %s of JSON, %s of it managedFields", what, meta.LenList(list), mib(int64(len(served))), mib(int64(len(served)-len(stripped))))
}

// heapInuse reads go_memstats_heap_inuse_bytes from the process's metrics.
func heapInuse(p *process) int64 {
	m, err := p.metrics()
	if err != nil {
		return 0
	}
	return int64(m.sum("go_memstats_heap_inuse_bytes"))
}
