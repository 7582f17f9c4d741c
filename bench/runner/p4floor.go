package runner

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// p4FloorResult is P4's physical floor at its first size: the same N
// webhooks installed at once by the bench itself, with nothing an
// operator does beyond what makes conversion work.
type p4FloorResult struct {
	N, Converged int
	Workers      int     // installs worked on at a time: the operator's reconcile workers
	Seconds      float64 // first write → last install's conversions through its webhook
	Writes       int     // the bench's own, counted as it makes them
	FailedProbes int     // dry runs that failed between a CRD patch and its first conversion
}

// floorInstall is one namespace of the floor: its certificates, made
// before the clock, and its CRDs as prepared.
type floorInstall struct {
	ns      string
	secret  *corev1.Secret
	caCert  []byte
	crds    []*apiextensionsv1.CustomResourceDefinition
	written bool // its first step is done (floorRun)
	queued  bool // its second step is queued (floorRun)
}

// p4Floor measures what no operator can beat in P4 on this test ground,
// at P4's first size and before it, so that Hookwright's batch of that
// size meets the cluster the floor met plus the floor's idle namespaces.
// As many workers as the operator has reconcile workers take, in turn,
// each install's first step (its Secret, Service and Deployment, three
// writes) and, as soon as the bench's watch sees that Deployment
// available, its second (each CRD pointed at the Service, caBundle
// included, in one patch, then server-side dry runs at v2 every 5 ms until
// one converts through the webhook); second steps go first, as
// Hookwright's in-flight installs overtake queued ones. Nothing else is
// written: no ServiceAccount, CA Secret, status, Event or finalizer, and
// no check that an operator owes its users.
func (b *bench) p4Floor(ctx context.Context) error {
	n := b.sz.p4[0]
	workers, err := b.operatorWorkers(ctx)
	if err != nil {
		return err
	}
	nss := names("p4-floor-%04d", n)
	b.logf("P4 floor N=%d: preparing %d namespaces with two CRDs each, and their certificates", n, n)
	served := newServedReviews()
	installs := make([]*floorInstall, n)
	if err := parallel(n, 8, func(i int) error {
		in, err := b.prepareFloorInstall(ctx, nss[i], served)
		installs[i] = in
		return err
	}); err != nil {
		return err
	}

	res := &p4FloorResult{N: n, Workers: workers}
	var writes atomic.Int64
	run := floorRun{
		workers: workers,
		first:   func(ctx context.Context, in *floorInstall) error { return b.floorWrite(ctx, in, &writes) },
		ready: func(in *floorInstall) bool {
			_, ok := b.observer.get(b.observer.available, types.NamespacedName{Namespace: in.ns, Name: webhookDeployment})
			return ok
		},
		second: func(ctx context.Context, in *floorInstall) (time.Time, int, error) {
			return b.floorConvert(ctx, in, served, &writes)
		},
	}
	b.logf("P4 floor N=%d: installing with %d workers", n, workers)
	t0, converged, failed, firstErr := run.run(ctx, installs, time.Now().Add(b.sz.p4MaxPerSize))
	res.Converged, res.Seconds = len(converged), untilLast(t0, converged).Seconds()
	res.Writes, res.FailedProbes = int(writes.Load()), failed
	b.report.P4Floor = res
	if firstErr == nil && res.Converged < n {
		firstErr = fmt.Errorf("%d of %d floor installs converted within %s", res.Converged, n, b.sz.p4MaxPerSize)
	}
	if firstErr != nil {
		return fmt.Errorf("P4 floor: %w", firstErr)
	}
	b.logf("P4 floor N=%d: %d/%d converted in %s, %d writes (%.1f per install), %d failed dry runs", n, res.Converged, n, secs(res.Seconds), res.Writes, float64(res.Writes)/float64(n), res.FailedProbes)
	return nil
}

// prepareFloorInstall makes the namespace, its two CRDs (conversion None)
// and the pod stand-in, and the install's certificates, before the clock.
func (b *bench) prepareFloorInstall(ctx context.Context, ns string, served *servedReviews) (*floorInstall, error) {
	if err := b.namespace(ctx, ns); err != nil {
		return nil, err
	}
	b.cluster.Kubelet.Serve(ns, webhookDeployment, converterHost{served: served})
	in := &floorInstall{ns: ns}
	for i, kind := range crdKinds {
		if err := b.createCRD(ctx, convertedCRD(ns, kind, nil)); err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := b.c.Get(ctx, client.ObjectKey{Name: crdNames(ns, len(crdKinds))[i]}, crd); err != nil {
			return nil, err
		}
		in.crds = append(in.crds, crd)
	}
	var err error
	in.secret, in.caCert, err = floorCertificates(ns)
	return in, err
}

// floorWrite is an install's first step: its Secret, Service and
// Deployment.
func (b *bench) floorWrite(ctx context.Context, in *floorInstall, writes *atomic.Int64) error {
	dep, svc := anchorWorkload(in.ns)
	for _, obj := range []client.Object{in.secret, svc, dep} {
		if err := b.c.Create(ctx, obj); err != nil {
			return fmt.Errorf("floor %s: creating %T: %w", in.ns, obj, err)
		}
		writes.Add(1)
	}
	return nil
}

// floorConvert is an install's second step: each CRD pointed at the
// Service, then dry runs until one converts through the webhook; it
// returns when the last CRD converted and the dry runs that failed.
func (b *bench) floorConvert(ctx context.Context, in *floorInstall, served *servedReviews, writes *atomic.Int64) (time.Time, int, error) {
	for _, crd := range in.crds {
		patch := client.MergeFrom(crd.DeepCopy())
		crd.Spec.Conversion = serviceConversion(in.ns)
		crd.Spec.Conversion.Webhook.ClientConfig.CABundle = in.caCert
		if err := b.c.Patch(ctx, crd, patch); err != nil {
			return time.Time{}, 0, fmt.Errorf("floor %s: pointing CRD %s at its webhook: %w", in.ns, crd.Name, err)
		}
		writes.Add(1)
	}
	var last time.Time
	failed := 0
	for _, kind := range crdKinds {
		p := b.startProber(ctx, in.ns, kind, served)
		converted, n, err := p.firstSuccess(time.Now().Add(time.Minute))
		failed += n
		if err != nil {
			return time.Time{}, failed, fmt.Errorf("floor %s %s: %w", in.ns, kind, err)
		}
		last = converted
	}
	return last, failed, nil
}

// operatorWorkersWait bounds the wait for the operator's controller to
// start: a partial run (--phases "P4") reaches the floor seconds after
// the operator started, before it won its lease and started its workers,
// and the gauge appears only then.
const operatorWorkersWait = time.Minute

// operatorWorkers is the operator's reconcile workers, from its metrics.
func (b *bench) operatorWorkers(ctx context.Context) (int, error) {
	deadline := time.Now().Add(operatorWorkersWait)
	for {
		m, err := b.operator.metrics()
		if err != nil {
			return 0, err
		}
		if workers := int(m.sum("controller_runtime_max_concurrent_reconciles", "controller", reconcilerName)); workers > 0 {
			return workers, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the operator's metrics named no reconcile workers (controller_runtime_max_concurrent_reconciles) within %s of the floor's start", operatorWorkersWait)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// row compares Hookwright's batch of the floor's size with the floor;
// false when there is no floor or that batch did not converge.
func (f *p4FloorResult) row(hw p4Size) (Row, bool) {
	if f == nil || f.Converged < f.N || hw.N != f.N || hw.TimedOut || f.Seconds <= 0 {
		return Row{}, false
	}
	perInstall := f.Seconds / float64(f.N)
	return Row{
		ID: "P4 floor",
		Measure: fmt.Sprintf("P4's physical floor at N=%d: the bench installs the same webhooks itself, %d at a time (Secret, Service, Deployment; each CRD pointed at the Service the instant the Deployment is available), until each converts through its webhook",
			f.N, f.Workers),
		Goal: "— (the yardstick)",
		Hookwright: fmt.Sprintf("floor %s (%s per install, %.1f writes per install); Hookwright %s, %.1f× it; at the floor's time per install, 1,000 installs take %s",
			secs(f.Seconds), ms(perInstall), float64(f.Writes)/float64(f.N), secs(hw.Seconds), hw.Seconds/f.Seconds, secs(1000*perInstall)),
		Anchor: "—", Met: "n/a",
	}, true
}

// describe is the floor's paragraph in "How each figure is measured".
func (f *p4FloorResult) describe() string {
	return fmt.Sprintf("**P4 floor.** Before P4's first batch, in %d namespaces of its own prepared the same way (two established CRDs, conversion None, a ready pod stand-in) and with each install's certificates made before the clock, the bench installs N=%d webhooks at once by itself, as an operator with nothing in between would: %d workers, as many as the operator's reconcile workers, take each install's first step (create its Secret, Service and Deployment) and, the moment the bench's watch sees that Deployment available, its second (patch each CRD to the Service, caBundle included, then a server-side dry run at v2 every 5 ms until one converts through the webhook, counted by the stand-in webhook); second steps go first. The time runs from the first write to the last install's conversion: %s, %d of %d converted, %d writes (%.1f per install: Secret, Service, Deployment and a patch per CRD), %d dry runs failed between a patch and its first conversion (pointing a CRD before its endpoints are ready). Nothing else is written: no ServiceAccount, CA Secret, status, Event or finalizer, and no check an operator owes its users, so no operator can go below it on this test ground.",
		f.N, f.N, f.Workers, secs(f.Seconds), f.Converged, f.N, f.Writes, float64(f.Writes)/float64(f.N), f.FailedProbes)
}
