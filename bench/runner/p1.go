package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// p1Hookwright applies installs one at a time (each in its own namespace,
// its CRD already there) and times, per install, from the moment its
// webhook Deployment is available to ConversionVerified=True.
func (b *bench) p1Hookwright(ctx context.Context) error {
	n := b.sz.p1
	// One warm-up install first (not counted): the first conversion
	// through any new webhook pays the test ground's cold paths.
	nss := append([]string{"p1-hw-warmup"}, names("p1-hw-%03d", n)...)
	b.logf("P1: preparing %d namespaces with one CRD each", n+1)
	if err := parallel(n+1, 8, func(i int) error {
		if err := b.namespace(ctx, nss[i]); err != nil {
			return err
		}
		b.cluster.Kubelet.Serve(nss[i], webhookDeployment, converterHost{})
		return b.createCRD(ctx, convertedCRD(nss[i], crdKinds[0], nil))
	}); err != nil {
		return err
	}
	b.logf("P1: applying %d WebhookInstalls one at a time", n)
	mark, err := b.audit.mark()
	if err != nil {
		return err
	}
	var fromAvailable, fromApply []time.Duration
	var warmup time.Duration
	failures := 0
	windows := map[string][2]time.Time{}
	for i, ns := range nss {
		applied := time.Now()
		if err := b.c.Create(ctx, webhookInstall(ns, crdNames(ns, 1), v1alpha1.CertificatePolicy{})); err != nil {
			return err
		}
		key := types.NamespacedName{Namespace: ns, Name: installName}
		depKey := types.NamespacedName{Namespace: ns, Name: webhookDeployment}
		deadline := time.Now().Add(b.sz.installTimeout)
		if _, err := b.observer.waitAll(ctx, b.observer.available, []types.NamespacedName{depKey}, deadline); err != nil {
			return fmt.Errorf("install %s: its Deployment was never seen available (phase %s): %w", key, b.observer.phase(key), err)
		}
		// From the earliest moment Hookwright may point the CRD at the
		// webhook, every conversion must work: probe until verified.
		probe := b.startProber(ctx, ns, crdKinds[0], nil)
		_, err := b.observer.waitAll(ctx, b.observer.verified, []types.NamespacedName{key}, deadline)
		failed := probe.stop()
		if err != nil {
			return fmt.Errorf("install %s: ConversionVerified not True (phase %s): %w", key, b.observer.phase(key), err)
		}
		verified, _ := b.observer.get(b.observer.verified, key)
		available, _ := b.observer.get(b.observer.available, depKey)
		if i > 0 {
			failures += failed
		}
		if i == 0 {
			warmup = verified.Sub(available)
			windows[ns] = [2]time.Time{available, verified}
			continue
		}
		fromAvailable = append(fromAvailable, verified.Sub(available))
		fromApply = append(fromApply, verified.Sub(applied))
		windows[ns] = [2]time.Time{available, verified}
	}
	p50, p99 := percentile(durations(fromAvailable), 50), percentile(durations(fromAvailable), 99)
	r := b.report
	r.P1 = &p1Result{N: n, HW: fromAvailable, HWApply: fromApply, HWWarmup: warmup, HWFailures: failures}
	if err := b.p1Evidence(mark, nss[0], windows); err != nil {
		return err
	}
	if retries, ok := b.sliceRetries(); ok {
		r.P1.Tail.Read = true
		r.P1.Tail.Over, r.P1.Tail.OverRetried = overAndRetried(windows, p1P99Goal, retries)
	}
	r.setRow(Row{
		ID: "P1", Measure: fmt.Sprintf("Deployment available → conversion working, p50 / p99 over %d installs", n),
		Goal: "p50 ≤ 100 ms, p99 ≤ 500 ms", Hookwright: ms(p50) + " / " + ms(p99),
		Met: metText(p50 <= 0.1 && p99 <= p1P99Goal.Seconds()),
	})
	b.logf("P1 Hookwright: p50 %s p99 %s", ms(p50), ms(p99))
	return nil
}

// p1Evidence reads, from the audit log, what the operator asked of the API
// server between each install's Deployment becoming available and its
// ConversionVerified=True: how many requests, how long the server spent on
// them, where the time goes (splitP1), and the full timelines of the
// median and the slowest install.
func (b *bench) p1Evidence(mark int, warmup string, windows map[string][2]time.Time) error {
	events, err := b.audit.since(mark, operatorUser)
	if err != nil {
		return err
	}
	crdOf, nsOfGroup := map[string]string{}, map[string]string{}
	for ns := range windows {
		for _, name := range crdNames(ns, 1) {
			crdOf[name] = ns
		}
		nsOfGroup[groupOf(ns)] = ns
	}
	byNS := map[string][]auditEvent{}
	for _, e := range events {
		ns := e.ObjectRef.Namespace
		switch {
		case e.ObjectRef.Resource == "customresourcedefinitions":
			ns = crdOf[e.ObjectRef.Name]
		case nsOfGroup[e.ObjectRef.APIGroup] != "":
			ns = nsOfGroup[e.ObjectRef.APIGroup] // the verification's list or dry run
		}
		if w, ok := windows[ns]; ok && e.Verb != "watch" && !e.Received.Before(w[0]) && !e.Received.After(w[1]) {
			byNS[ns] = append(byNS[ns], e)
		}
	}
	p := b.report.P1
	for _, e := range byNS[warmup] {
		if d := e.Completed.Sub(e.Received); d > p.WarmupSlowestTime {
			p.WarmupSlowestTime = d
			p.WarmupSlowest = e.Verb + " " + e.resource()
		}
	}
	delete(windows, warmup)
	var counts, busy []float64
	byTime := make([]string, 0, len(windows))
	for ns := range windows {
		counts = append(counts, float64(len(byNS[ns])))
		busy = append(busy, busyTime(byNS[ns]).Seconds())
		byTime = append(byTime, ns)
	}
	p.RequestsP50, p.BusyP50 = percentile(counts, 50), percentile(busy, 50)
	p.Split = splitP1(windows, byNS)
	if len(byTime) == 0 {
		return nil
	}
	took := func(ns string) time.Duration { return windows[ns][1].Sub(windows[ns][0]) }
	sort.Slice(byTime, func(i, j int) bool { return took(byTime[i]) < took(byTime[j]) })
	// The median install shows where the goal's p50 goes; the slowest, the tail.
	timeline := func(ns string) (string, []string) {
		w := windows[ns]
		requests := slices.Clone(byNS[ns]) // the audit log has them as they completed
		sort.SliceStable(requests, func(i, j int) bool { return requests[i].Received.Before(requests[j].Received) })
		var lines []string
		for _, e := range requests {
			lines = append(lines, requestLine(e, w[0]))
		}
		lines = append(lines, fmt.Sprintf("+%s ConversionVerified=True seen", ms(took(ns).Seconds())))
		return fmt.Sprintf("%s (%s)", ns, ms(took(ns).Seconds())), lines
	}
	p.Median, p.MedianTimeline = timeline(byTime[(len(byTime)-1)/2])
	p.Slowest, p.SlowestTimeline = timeline(byTime[len(byTime)-1])
	return nil
}

// p1Split is where an install's time from its Deployment available to
// ConversionVerified=True seen goes, each part the median over installs
// (medians of parts need not add up to the median of the whole).
type p1Split struct {
	Installs int           // installs with every mark in their window
	Reaction time.Duration // available → the operator's CRD patch received
	Verified time.Duration // that patch received → the last dry run answered: the floor's own path
	ToStatus time.Duration // → the status write received
	Status   time.Duration // the status write, at the API server
	Seen     time.Duration // → the driver's watch saw it
}

// splitP1 reads the split from each install's requests: its last CRD
// patch (the conversion), its last dry run (the verification) and its
// last status write.
func splitP1(windows map[string][2]time.Time, byNS map[string][]auditEvent) p1Split {
	var reaction, verified, toStatus, status, seen []float64
	for ns, w := range windows {
		var patch, dryRun, write *auditEvent
		for i := range byNS[ns] {
			e := &byNS[ns][i]
			switch {
			case e.Verb == "patch" && e.ObjectRef.Resource == "customresourcedefinitions":
				patch = e
			case e.Verb == "create" && e.dryRun():
				dryRun = e
			case e.Verb == "update" && e.resource() == "webhookinstalls/status":
				write = e
			}
		}
		if patch == nil || dryRun == nil || write == nil || write.Received.Before(dryRun.Completed) {
			continue
		}
		reaction = append(reaction, patch.Received.Sub(w[0]).Seconds())
		verified = append(verified, dryRun.Completed.Sub(patch.Received).Seconds())
		toStatus = append(toStatus, write.Received.Sub(dryRun.Completed).Seconds())
		status = append(status, write.Completed.Sub(write.Received).Seconds())
		seen = append(seen, w[1].Sub(write.Completed).Seconds())
	}
	med := func(v []float64) time.Duration { return time.Duration(percentile(v, 50) * float64(time.Second)) }
	return p1Split{Installs: len(reaction), Reaction: med(reaction), Verified: med(verified), ToStatus: med(toStatus), Status: med(status), Seen: med(seen)}
}

// p1Anchor measures cert-controller from its own start: an operator that
// embeds it ships its CRD pointing at the webhook's Service (no caBundle)
// and an empty Secret, and starts. Per webhook, one at a time: the CRD is
// created pointing at the Service, and conversions are probed every 5 ms
// from that moment; cert-controller starts (one process, one rotator, as
// each operator embeds its own); once it filled the Secret, the webhook's
// Deployment and Service are created (its pod waits for its certificate,
// as a pod mounting the Secret does). The time runs from cert-controller's
// start to the first conversion the API server completes through the
// webhook; every failed probe before it is counted.
func (b *bench) p1Anchor(ctx context.Context) error {
	n := b.sz.p1Anchor
	nss := append([]string{"p1-cc-warmup"}, names("p1-cc-%03d", n)...)
	if b.report.P1 == nil {
		b.report.P1 = &p1Result{N: b.sz.p1}
	}
	b.logf("P1 anchor: %d webhooks, each with its own cert-controller started after its CRD points at the Service", n+1)
	var fromStart []time.Duration
	failures := 0
	for i, ns := range nss {
		took, failed, err := b.anchorFromStart(ctx, ns)
		if err != nil {
			return fmt.Errorf("anchor %s: %w", ns, err)
		}
		if i == 0 {
			b.report.P1.CCWarmup = took
			continue
		}
		fromStart = append(fromStart, took)
		failures += failed
	}
	p50, p99 := percentile(durations(fromStart), 50), percentile(durations(fromStart), 99)
	b.report.P1.CC, b.report.P1.CCFailures = fromStart, failures
	b.report.amendRow("P1", func(r *Row) {
		r.Anchor = fmt.Sprintf("start → conversion working %s / %s; %d failed over %d webhooks", ms(p50), ms(p99), failures, n)
	})
	b.logf("P1 cert-controller: start → working p50 %s p99 %s, %d failed conversions", ms(p50), ms(p99), failures)
	return nil
}

// anchorFromStart runs one webhook with its own cert-controller and
// returns the time from the process start to the first conversion, and
// the conversions that failed since the CRD pointed at the Service.
func (b *bench) anchorFromStart(ctx context.Context, ns string) (time.Duration, int, error) {
	if err := b.namespace(ctx, ns); err != nil {
		return 0, 0, err
	}
	if err := b.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: anchorSecret}}); err != nil {
		return 0, 0, err
	}
	b.cluster.Kubelet.Serve(ns, webhookDeployment, converterHost{})
	if err := b.createCRD(ctx, convertedCRD(ns, crdKinds[0], serviceConversion(ns))); err != nil {
		return 0, 0, err
	}
	probe := b.startProber(ctx, ns, crdKinds[0], nil)
	started := time.Now()
	webhook := anchorWebhook{Namespace: ns, Secret: anchorSecret, Service: webhookService, CertDir: filepath.Join(b.work, "cc-certs", ns), CRDs: crdNames(ns, 1)}
	cc, err := b.startAnchor(ns, []anchorWebhook{webhook})
	if err != nil {
		probe.stop()
		return 0, 0, err
	}
	defer cc.stop()
	dep, svc := anchorWorkload(ns)
	if err := b.c.Create(ctx, svc); err != nil {
		probe.stop()
		return 0, 0, err
	}
	if err := b.c.Create(ctx, dep); err != nil {
		probe.stop()
		return 0, 0, err
	}
	converted, failed, err := probe.firstSuccess(time.Now().Add(time.Minute))
	if err != nil {
		return 0, failed, err
	}
	b.logf("P1 anchor %s: first conversion %s after cert-controller's start, %d failed before (last: %v), slowest request %s", ns, ms(converted.Sub(started).Seconds()), failed, probe.last, ms(probe.slowest.Seconds()))
	b.report.P1.CCSlowest = max(b.report.P1.CCSlowest, probe.slowest)
	return converted.Sub(started), failed, cc.alive()
}

// anchorWebhook is bench/certcontroller's configuration of one rotator.
type anchorWebhook struct {
	Namespace string   `json:"namespace"`
	Secret    string   `json:"secret"`
	Service   string   `json:"service"`
	CertDir   string   `json:"certDir"`
	CRDs      []string `json:"crds"`
}

// startAnchor starts bench/certcontroller for webhooks and waits until
// every rotator filled its Secret; it then publishes each Secret's
// certificate in the rotator's CertDir, which cert-controller checks for
// (in a real operator the Secret is mounted there).
func (b *bench) startAnchor(name string, webhooks []anchorWebhook) (*process, error) {
	raw, err := json.Marshal(webhooks)
	if err != nil {
		return nil, err
	}
	config := filepath.Join(b.work, "cc-"+name+".json")
	if err := os.WriteFile(config, raw, 0o600); err != nil {
		return nil, err
	}
	cc, err := startProcess("cert-controller", b.ccBin, b.ccKube, filepath.Join(b.work, "cc-"+name+".log"), nil, "--config="+config)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	deadline := time.Now().Add(5 * time.Minute)
	for _, w := range webhooks {
		for {
			secret := &corev1.Secret{}
			err := b.c.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: w.Secret}, secret)
			if err == nil && len(secret.Data["tls.crt"]) > 0 {
				if err := os.MkdirAll(w.CertDir, 0o700); err != nil {
					cc.stop()
					return nil, err
				}
				for _, f := range []string{"tls.crt", "tls.key"} {
					if err := os.WriteFile(filepath.Join(w.CertDir, f), secret.Data[f], 0o600); err != nil {
						cc.stop()
						return nil, err
					}
				}
				break
			}
			if err := cc.alive(); err != nil {
				return nil, err
			}
			if time.Now().After(deadline) {
				cc.stop()
				return nil, fmt.Errorf("cert-controller did not fill Secret %s/%s within 5 minutes", w.Namespace, w.Secret)
			}
			time.Sleep(20 * time.Millisecond) // part of P1's cert-controller time: poll finely
		}
	}
	return cc, nil
}

// waitAnchorInjected waits until cert-controller injected a caBundle into
// every CRD of webhooks.
func (b *bench) waitAnchorInjected(ctx context.Context, webhooks []anchorWebhook) error {
	deadline := time.Now().Add(3 * time.Minute)
	for _, w := range webhooks {
		for _, name := range w.CRDs {
			for {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := b.c.Get(ctx, client.ObjectKey{Name: name}, crd); err == nil {
					if conv := crd.Spec.Conversion; conv != nil && conv.Webhook != nil && conv.Webhook.ClientConfig != nil && len(conv.Webhook.ClientConfig.CABundle) > 0 {
						break
					}
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("cert-controller did not inject a caBundle into CRD %s within 3 minutes", name)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	return nil
}

func names(format string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return out
}

func metText(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}
