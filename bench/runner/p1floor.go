package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hookwright/hookwright/certs"
)

// floorRatioGoal is how much slower than the physical floor Hookwright's
// available → verified p50 may be.
const floorRatioGoal = 1.3

// p1Floor measures the physical floor of P1: what no operator can beat on
// this test ground. The bench does an operator's job with nothing in
// between: the certificates and Secret exist before the Deployment, and
// the instant its watch sees the Deployment available, it points the CRD
// at the Service (one patch, caBundle included) and times until the first
// conversion the API server completes through the webhook. Conversions
// that fail in between (the patch outran the endpoints) are counted: they
// are what pointing a CRD without waiting costs.
func (b *bench) p1Floor(ctx context.Context) error {
	n := b.sz.p1
	nss := append([]string{"p1-floor-warmup"}, names("p1-floor-%03d", n)...)
	b.logf("P1 floor: preparing %d namespaces (CRD, certificates, Secret)", n+1)
	// The CRD says None until the bench's patch, and a dry-run at v2 also
	// succeeds through None while the API server has not applied the
	// patch yet: only one the webhook answered counts.
	served := newServedReviews()
	bundles := make([][]byte, n+1)
	crds := make([]*apiextensionsv1.CustomResourceDefinition, n+1)
	if err := parallel(n+1, 8, func(i int) error {
		ns := nss[i]
		if err := b.namespace(ctx, ns); err != nil {
			return err
		}
		secret, bundle, err := floorCertificates(ns)
		if err != nil {
			return err
		}
		bundles[i] = bundle
		if err := b.c.Create(ctx, secret); err != nil {
			return err
		}
		b.cluster.Kubelet.Serve(ns, webhookDeployment, converterHost{served: served})
		if err := b.createCRD(ctx, convertedCRD(ns, crdKinds[0], nil)); err != nil {
			return err
		}
		crds[i] = &apiextensionsv1.CustomResourceDefinition{}
		return b.c.Get(ctx, client.ObjectKey{Name: crdNames(ns, 1)[0]}, crds[i])
	}); err != nil {
		return err
	}
	b.logf("P1 floor: applying %d webhook Deployments one at a time, pointing each CRD the instant it is available", n+1)
	var floor []time.Duration
	windows := map[string][2]time.Time{}
	failures, throughNone := 0, 0
	for i, ns := range nss {
		dep, svc := anchorWorkload(ns)
		if err := b.c.Create(ctx, svc); err != nil {
			return err
		}
		if err := b.c.Create(ctx, dep); err != nil {
			return err
		}
		depKey := types.NamespacedName{Namespace: ns, Name: webhookDeployment}
		if _, err := b.observer.waitAll(ctx, b.observer.available, []types.NamespacedName{depKey}, time.Now().Add(b.sz.installTimeout)); err != nil {
			return fmt.Errorf("floor deployment %s: %w", depKey, err)
		}
		available, _ := b.observer.get(b.observer.available, depKey)
		patch := client.MergeFrom(crds[i].DeepCopy())
		crds[i].Spec.Conversion = serviceConversion(ns)
		crds[i].Spec.Conversion.Webhook.ClientConfig.CABundle = bundles[i]
		if err := b.c.Patch(ctx, crds[i], patch); err != nil {
			return fmt.Errorf("pointing CRD %s at its webhook: %w", crds[i].Name, err)
		}
		p := b.startProber(ctx, ns, crdKinds[0], served)
		converted, failed, err := p.firstSuccess(time.Now().Add(30 * time.Second))
		if err != nil {
			return fmt.Errorf("floor %s: %w", ns, err)
		}
		if i == 0 {
			continue // warm-up: the first conversion through a new webhook pays the test ground's cold paths
		}
		floor = append(floor, converted.Sub(available))
		windows[ns] = [2]time.Time{available, converted}
		failures += failed
		throughNone += p.succeededThroughNone()
	}
	p1 := b.report.P1
	if p1 == nil {
		p1 = &p1Result{N: n}
		b.report.P1 = p1
	}
	p1.Floor, p1.FloorFailures, p1.FloorThroughNone = floor, failures, throughNone
	if retries, ok := b.sliceRetries(); ok {
		p1.Tail.Read = true
		p1.Tail.FloorOver, p1.Tail.FloorOverRetried = overAndRetried(windows, p1P99Goal, retries)
	}
	floorP50 := percentile(durations(floor), 50)
	b.report.amendRow("P1", func(r *Row) {
		hwP50 := percentile(durations(p1.HW), 50)
		ratio := hwP50 / floorP50
		r.Measure += "; the physical floor (the bench points the CRD itself the instant the Deployment is available); failed conversions during the installs"
		r.Goal += fmt.Sprintf("; p50 ≤ %.1f× the floor; 0 failed", floorRatioGoal)
		r.Hookwright += fmt.Sprintf("; floor %s / %s, Hookwright %.1f× it; %d failed (floor: %d)", ms(floorP50), ms(percentile(durations(floor), 99)), ratio, p1.HWFailures, failures)
		if ratio > floorRatioGoal || p1.HWFailures > 0 {
			r.Met = metText(false)
		}
	})
	b.logf("P1 floor: p50 %s, %d failed conversions", ms(floorP50), failures)
	return nil
}

// prober sends a server-side dry-run create at v2 every 5 ms (the API
// server must convert it to the storage version through the webhook)
// and counts what fails, until the first success or until stopped. With
// served, a success counts only if the namespace's webhook answered a
// review while the dry-run was under way; one that converted through
// None (the CRD's configuration before the webhook's) counts as neither.
type prober struct {
	done     chan struct{}
	stopOnce sync.Once
	mu       sync.Mutex
	failed   int
	success  time.Time
	// throughNone counts the dry-runs that succeeded without the webhook.
	throughNone int
	last        error
	slowest     time.Duration // the longest request: the API server retries a webhook it cannot reach, holding the request
	finished    chan struct{}
}

func (b *bench) startProber(ctx context.Context, ns, kind string, served *servedReviews) *prober {
	p := &prober{done: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		defer close(p.finished)
		for {
			sent := time.Now()
			before := 0
			if served != nil {
				before = served.count(ns)
			}
			err := b.c.Create(ctx, probeObject(ns, kind), client.DryRunAll)
			throughWebhook := served == nil || served.count(ns) > before
			p.mu.Lock()
			p.slowest = max(p.slowest, time.Since(sent))
			if err == nil && throughWebhook && p.success.IsZero() {
				p.success = time.Now()
			} else if err == nil && !throughWebhook {
				p.throughNone++
			} else if err != nil {
				p.failed++
				p.last = err
			}
			p.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-p.done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return p
}

func (p *prober) succeededThroughNone() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.throughNone
}

// stop ends the probing and returns the failures counted.
func (p *prober) stop() int {
	p.stopOnce.Do(func() { close(p.done) })
	<-p.finished
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

// firstSuccess waits for the first conversion, then stops the probing.
func (p *prober) firstSuccess(deadline time.Time) (time.Time, int, error) {
	for time.Now().Before(deadline) {
		p.mu.Lock()
		success := p.success
		p.mu.Unlock()
		if !success.IsZero() {
			return success, p.stop(), nil
		}
		time.Sleep(time.Millisecond)
	}
	failed := p.stop()
	return time.Time{}, failed, fmt.Errorf("no conversion through the webhook within 30 s (%d failed; last: %v)", failed, p.last)
}

// floorCertificates are a floor install's certificates, made before its
// clock starts: the serving Secret the webhook Deployment mounts, and the
// caBundle that trusts it.
func floorCertificates(ns string) (*corev1.Secret, []byte, error) {
	ca, err := certs.NewCA("floor-ca", certs.ECDSAP256, 24*time.Hour, time.Now())
	if err != nil {
		return nil, nil, err
	}
	serving, err := ca.IssueServing(certs.ServiceDNSNames(webhookService, ns), certs.ECDSAP256, 24*time.Hour, time.Now())
	if err != nil {
		return nil, nil, err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: anchorSecret},
		Data: map[string][]byte{"tls.crt": serving.CertPEM, "tls.key": serving.KeyPEM}}
	return secret, certs.Bundle(ca.Cert), nil
}
