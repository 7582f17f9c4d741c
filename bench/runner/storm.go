package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// stormGoal is how long the rotation storm may take, and how long the
// bench waits: that says whether the goal is met, and how many rotations
// completed and reached their midpoint (stormResult.Promoted) by then say
// by how much it is not. Waiting longer would cost every run minutes to
// tell only how much later the last rotation ends.
const stormGoal = 120 * time.Second

// stormResult is the rotation storm's outcome.
type stormResult struct {
	Installs, Rotated int
	Seconds           float64 // first request → last CA rotation seen Succeeded
	First, P50, Max   float64 // request → rotation Succeeded per install
	Sampled           int
	Reads, Failed     int64
	FirstFailure      string
	Writes            int
	Breakdown         string
	Stopped           string
	// Reconciles, ReconcileMean and QueueWaitMean are the workqueue's side
	// of the storm (operator metrics); APIServer the server's CPU profile.
	Reconciles, ReconcileMean, QueueWaitMean float64
	APIServer                                *apiServerProfile
	// Promoted installs reached the rotation's midpoint (serving
	// certificate moved to the new CA), PromotedP50 after how long.
	Promoted    int
	PromotedP50 float64
	// Probes: the trust probes the rotations ran, and spared (operator
	// metrics), each probe two writes of a probe CRD and their loads.
	Probes *probeCounts
	// Held: the operator's requests over the storm by kind, and how long
	// they were in flight (audit log); ProbeLoads the probes' waits.
	Held       []heldKind
	HeldTotal  time.Duration
	ProbeLoads probeLoadStats
}

// storm rotates the CA of every install of P4's largest batch at once and
// reads a sample of them continuously meanwhile. The CAs are made due in
// the same second with the manual rotation annotation ("ca: <reason>"):
// certificates issued minutes apart cannot come due together, and a manual
// CA rotation runs the same ordered rotation as an expiring one (new CA
// added to every caBundle, proven trusted, promoted, old CA pruned).
func (b *bench) storm(ctx context.Context) error {
	sizes := b.report.P4.Sizes
	if len(sizes) == 0 {
		return errors.New("no P4 batch to rotate")
	}
	if b.operatorDown { // a partial run (--phases) without P3, which starts the binary again after P4's profile
		var installs v1alpha1.WebhookInstallList
		if err := b.c.List(ctx, &installs); err != nil {
			return err
		}
		if _, err := b.resyncWindow(ctx, len(installs.Items), true); err != nil {
			return fmt.Errorf("starting the operator: %w", err)
		}
	}
	last := sizes[len(sizes)-1]
	n := last.N
	nss := names(fmt.Sprintf("p4-%d-%%04d", n), n)
	sample := nss[:min(b.sz.stormSample, n)]
	b.logf("Rotation storm: %d installs, %d read continuously", n, len(sample))
	for _, ns := range sample {
		obj := probeObject(ns, crdKinds[0])
		obj.SetGenerateName("")
		obj.SetName("storm-read")
		if err := b.c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating the object read during the storm in %s: %w", ns, err)
		}
	}
	res := &stormResult{Installs: n, Sampled: len(sample)}
	b.report.Storm = res
	readCtx, stopReads := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var reads, failed atomic.Int64
	var firstFailure sync.Once
	for _, ns := range sample {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for readCtx.Err() == nil {
				u := &unstructured.Unstructured{}
				u.SetAPIVersion(groupOf(ns) + "/v2")
				u.SetKind(crdKinds[0])
				err := b.c.Get(readCtx, client.ObjectKey{Namespace: ns, Name: "storm-read"}, u)
				if readCtx.Err() != nil {
					return
				}
				reads.Add(1)
				if err != nil {
					failed.Add(1)
					firstFailure.Do(func() { res.FirstFailure = fmt.Sprintf("%s: %v", ns, err) })
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	time.Sleep(2 * time.Second) // the readers run before the storm starts
	mark := fmt.Sprintf("bench storm %d", time.Now().UnixNano())
	b.observer.watchRotations(mark)
	auditMark, err := b.audit.mark()
	if err != nil {
		stopReads()
		return err
	}
	m0, metricsErr := b.operator.metrics()
	stopProfile := make(chan struct{})
	profiled := profileAPIServer(ctx, b.cluster.Config, b.apiServerProfilePath("storm"), stopProfile)
	keys := make([]types.NamespacedName, n)
	requested := make([]time.Time, n)
	started := time.Now()
	err = parallel(n, 16, func(i int) error {
		keys[i] = types.NamespacedName{Namespace: nss[i], Name: installName}
		whi := &v1alpha1.WebhookInstall{}
		whi.Namespace, whi.Name = nss[i], installName
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"ca: %s"}}}`, v1alpha1.AnnotationRotate, mark))
		requested[i] = time.Now()
		return b.c.Patch(ctx, whi, patch)
	})
	if err == nil {
		done, waitErr := b.observer.waitAll(ctx, b.observer.rotated, keys, started.Add(stormGoal))
		res.Rotated = done
		if waitErr != nil {
			res.Stopped = waitErr.Error()
		}
	}
	ended := time.Now()
	res.Seconds = ended.Sub(started).Seconds()
	stopReads()
	wg.Wait()
	close(stopProfile)
	if out := <-profiled; out.err != nil {
		b.record("Rotation storm kube-apiserver profile", out.err)
	} else {
		res.APIServer = out.profile
	}
	if err != nil {
		return err
	}
	if m1, err := b.operator.metrics(); err == nil && metricsErr == nil {
		res.Reconciles, res.ReconcileMean, res.QueueWaitMean = workqueueDelta(m0, m1)
		probes := probeDelta(m0, m1)
		res.Probes = &probes
	}
	res.Reads, res.Failed = reads.Load(), failed.Load()
	var perInstall []float64
	var lastSeen time.Time
	for i, k := range keys {
		if at, ok := b.observer.get(b.observer.rotated, k); ok && !at.After(ended) {
			perInstall = append(perInstall, at.Sub(requested[i]).Seconds())
			if at.After(lastSeen) {
				lastSeen = at
			}
		}
	}
	if !lastSeen.IsZero() && res.Stopped == "" {
		res.Seconds = lastSeen.Sub(started).Seconds()
	}
	res.First, res.P50, res.Max = percentile(perInstall, 0), percentile(perInstall, 50), percentile(perInstall, 100)
	var toPromoted []float64
	for i, k := range keys {
		if at, ok := b.observer.get(b.observer.promoted, k); ok && !at.After(ended) {
			toPromoted = append(toPromoted, at.Sub(requested[i]).Seconds())
		}
	}
	res.Promoted, res.PromotedP50 = len(toPromoted), percentile(toPromoted, 50)
	// Every figure covers the storm's window: a storm that ended in time
	// is followed until the operator goes quiet (its last writes complete
	// the rotations); rotations still under way when the wait stopped go
	// on, and their later writes are left out.
	quietFor, quietLimit := 2*time.Second, 30*time.Second
	if res.Stopped != "" {
		quietLimit = quietFor // long enough for the audit log to hold the window's requests
	}
	events, err := b.audit.waitQuiet(auditMark, operatorUser, quietFor, quietLimit)
	if err != nil {
		return err
	}
	if res.Stopped != "" {
		events = receivedBy(events, ended)
	}
	writes := writesOf(events)
	res.Writes, res.Breakdown = len(writes), breakdown(writes)
	res.Held, res.HeldTotal = heldByKind(events)
	res.ProbeLoads = probeLoads(events)
	b.report.setRow(Row{
		ID: "Storm", Measure: fmt.Sprintf("Rotation storm: the CAs of %d installs due in the same second, ordered rotation to the end; failed reads on %d of them read continuously", n, len(sample)),
		Goal:       fmt.Sprintf("all in ≤ %s; 0 failed", secs(stormGoal.Seconds())),
		Hookwright: fmt.Sprintf("%d of %d in %s (per install p50 %s, max %s); %d of %d reads failed", res.Rotated, n, secs(res.Seconds), secs(res.P50), secs(res.Max), res.Failed, res.Reads),
		Anchor:     "—",
		Met:        metText(res.Rotated == n && res.Seconds <= stormGoal.Seconds() && res.Failed == 0),
	})
	if row, ok := b.report.StormFloor.row(res); ok {
		b.report.setRow(row)
	}
	b.logf("Rotation storm: %d/%d in %s, %d of %d reads failed, %d writes", res.Rotated, n, secs(res.Seconds), res.Failed, res.Reads, res.Writes)
	return nil
}

// timeNote says where the storm's time went: the workqueue's side, and
// the API server's CPU.
func (r *stormResult) timeNote() string {
	completed := "none completed its rotation"
	if r.Rotated > 0 {
		completed = fmt.Sprintf("%d completed their rotation, the first %s after its request, half by %s, the last after %s", r.Rotated, secs(r.First), secs(r.P50), secs(r.Max))
	}
	note := fmt.Sprintf("**Rotation storm.** Of %d installs, %d had reached the rotation's midpoint (serving certificate moved to the new CA) when the wait ended, after %s at p50, and %s. %d reconciles over the storm (%.1f per install) took %s each on average, and queued items waited %s on average in the workqueue; the operator's %d writes came at %.0f per second.",
		r.Installs, r.Promoted, secs(r.PromotedP50), completed, int(r.Reconciles), r.Reconciles/float64(max(r.Installs, 1)), ms(r.ReconcileMean), ms(r.QueueWaitMean), r.Writes, float64(r.Writes)/max(r.Seconds, 1))
	if held := heldNote(r.Held, r.HeldTotal, r.Reconciles*r.ReconcileMean, 6); held != "" {
		note += " " + held + "."
	}
	loads := r.ProbeLoads.describe()
	if r.Probes != nil {
		note += " The rotations' gates ran " + r.Probes.describe()
		if loads == "" { // else the waits' own sentence says what a probe holds its CRD for
			note += " (a probe holds one of the operator's probe CRDs while the API server loads two writes to it)"
		}
		note += "."
	}
	if loads != "" {
		note += " " + loads
	}
	if r.APIServer != nil {
		note += "\n\n" + apiServerNote(r.APIServer, "Rotation storm", fmt.Sprintf("the storm of %d installs", r.Installs))
	}
	return note
}

func (r *stormResult) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Rotation storm.** Last in the run (after P5, on its loaded cluster, so that rotations still under way when the wait ends count in no other measure), the manual rotation annotation (`operators.hookwright.dev/rotate: \"ca: ...\"`) is written on all %d installs of P4's largest batch at once (16 concurrent patches), so that every CA is due in the same second (their trustOverlap is 0s, so a rotation ends when the old CA leaves, right after the new one serves and converts); the time runs from the first patch to the last install seen with that CA rotation Succeeded in status.rotations (new CA in every caBundle, proven trusted, promoted, old CA pruned). Meanwhile %d of the installs each have one object read at v2 (conversion through the webhook) every 50 ms: %d reads, %d failed", r.Installs, r.Sampled, r.Reads, r.Failed)
	if r.FirstFailure != "" {
		fmt.Fprintf(&b, " (first: %s)", r.FirstFailure)
	}
	fmt.Fprintf(&b, ". %d of %d rotated in %s; per install, request → Succeeded p50 %s, max %s. The operator's writes over the storm (received by the wait's end, or until the operator went quiet if every rotation completed): %d (%.1f per install): %s.", r.Rotated, r.Installs, secs(r.Seconds), secs(r.P50), secs(r.Max), r.Writes, float64(r.Writes)/float64(max(r.Installs, 1)), r.Breakdown)
	if r.Stopped != "" {
		fmt.Fprintf(&b, " The wait stopped: %s.", r.Stopped)
	}
	return b.String()
}
