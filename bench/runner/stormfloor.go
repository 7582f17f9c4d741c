package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// stormFloorRollout marks the pod template of a floor install's rotated
// serving certificate, as Hookwright's serving-certificate annotation
// rolls its webhooks' pods.
const stormFloorRollout = "bench.hookwright.dev/rotated"

// stormFloorResult is the rotation storm's physical floor: the CA
// rotations of the P4 floor's installs, made by the bench itself.
type stormFloorResult struct {
	N, Rotated, Workers int
	Seconds             float64 // first write → last install's conversion through its pruned caBundle
	Writes              int
	FailedProbes        int // dry runs that failed after the prune, before one converted
}

// stormFloor measures what no operator can beat in the rotation storm on
// this test ground: the P4 floor's installs (converged, idle) rotate their
// CA at once, in the order Hookwright's rotation keeps, with nothing in
// between. As many workers as the operator's reconcile workers take, in
// turn, each install's first step (each CRD's caBundle set to the old and
// the new CA, one patch each; the serving Secret patched to a certificate
// of the new CA; its Deployment's pod template annotated, so that its pods
// roll) and, as soon as the bench's watch sees every replica run that
// template, its second (each CRD's caBundle set to the new CA alone, then
// server-side dry runs at v2 every 5 ms until one converts through the
// webhook); second steps go first. The new certificates are made before
// the clock. It proves nothing Hookwright proves before each step (that
// the API server loaded the caBundle, that it trusts the pods through the
// new CA alone), and writes no CA Secret, status or Event: a lower bound
// for a rotation that rolls its pods, not a rotation to ship.
func (b *bench) stormFloor(ctx context.Context) error {
	p4 := b.report.P4Floor
	if p4 == nil || p4.Converged < p4.N {
		return errors.New("no converged P4 floor to rotate (it runs with P4)")
	}
	n := p4.N
	workers, err := b.operatorWorkers(ctx)
	if err != nil {
		return err
	}
	nss := names("p4-floor-%04d", n)
	b.logf("Rotation storm floor N=%d: reading the P4 floor's CRDs and making new certificates", n)
	installs := make([]*floorInstall, n)
	if err := parallel(n, 8, func(i int) error {
		in := &floorInstall{ns: nss[i]}
		for _, name := range crdNames(in.ns, len(crdKinds)) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := b.c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return err
			}
			if crd.Spec.Conversion == nil || crd.Spec.Conversion.Webhook == nil || crd.Spec.Conversion.Webhook.ClientConfig == nil {
				return fmt.Errorf("CRD %s does not convert through a webhook", name)
			}
			in.crds = append(in.crds, crd)
		}
		var err error
		in.secret, in.caCert, err = floorCertificates(in.ns)
		installs[i] = in
		return err
	}); err != nil {
		return err
	}

	res := &stormFloorResult{N: n, Workers: workers}
	var writes atomic.Int64
	run := floorRun{
		workers: workers,
		first:   func(ctx context.Context, in *floorInstall) error { return b.stormFloorMove(ctx, in, &writes) },
		ready: func(in *floorInstall) bool {
			return b.observer.rolledOut(types.NamespacedName{Namespace: in.ns, Name: webhookDeployment}, stormFloorRollout, stormFloorMark(in))
		},
		second: func(ctx context.Context, in *floorInstall) (time.Time, int, error) {
			return b.stormFloorPrune(ctx, in, &writes)
		},
	}
	b.logf("Rotation storm floor N=%d: rotating with %d workers", n, workers)
	t0, rotated, failed, runErr := run.run(ctx, installs, time.Now().Add(stormGoal))
	res.Rotated, res.Seconds = len(rotated), untilLast(t0, rotated).Seconds()
	if res.Rotated < n {
		res.Seconds = stormGoal.Seconds() // the run's deadline cut it short
	}
	res.Writes, res.FailedProbes = int(writes.Load()), failed
	b.report.StormFloor = res
	if runErr != nil {
		return fmt.Errorf("rotation storm floor: %w", runErr)
	}
	b.logf("Rotation storm floor N=%d: %d/%d rotated in %s, %d writes (%.1f per install), %d failed dry runs", n, res.Rotated, n, secs(res.Seconds), res.Writes, float64(res.Writes)/float64(n), res.FailedProbes)
	return nil
}

// stormFloorMark is the pod template annotation's value for in's new
// serving certificate.
func stormFloorMark(in *floorInstall) string { return in.ns + "-rotated" }

// stormFloorMove is a floor rotation's first step: the new CA next to the
// old in each caBundle, then the serving certificate of the new CA, and
// the pods rolled to it.
func (b *bench) stormFloorMove(ctx context.Context, in *floorInstall, writes *atomic.Int64) error {
	for _, crd := range in.crds {
		both := append(append([]byte(nil), crd.Spec.Conversion.Webhook.ClientConfig.CABundle...), in.caCert...)
		if err := b.patchCABundle(ctx, crd.Name, both, writes); err != nil {
			return err
		}
	}
	secret, err := json.Marshal(map[string]any{"data": in.secret.Data})
	if err != nil {
		return err
	}
	if err := b.c.Patch(ctx, in.secret.DeepCopy(), client.RawPatch(types.MergePatchType, secret)); err != nil {
		return fmt.Errorf("storm floor %s: patching the serving Secret: %w", in.ns, err)
	}
	writes.Add(1)
	dep, _ := anchorWorkload(in.ns)
	roll := fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, stormFloorRollout, stormFloorMark(in))
	if err := b.c.Patch(ctx, dep, client.RawPatch(types.MergePatchType, roll)); err != nil {
		return fmt.Errorf("storm floor %s: rolling the Deployment: %w", in.ns, err)
	}
	writes.Add(1)
	return nil
}

// stormFloorPrune is a floor rotation's second step, once every pod runs
// the new certificate: the old CA out of each caBundle, then dry runs
// until one converts through each CRD.
func (b *bench) stormFloorPrune(ctx context.Context, in *floorInstall, writes *atomic.Int64) (time.Time, int, error) {
	for _, crd := range in.crds {
		if err := b.patchCABundle(ctx, crd.Name, in.caCert, writes); err != nil {
			return time.Time{}, 0, err
		}
	}
	var last time.Time
	failed := 0
	for _, kind := range crdKinds {
		p := b.startProber(ctx, in.ns, kind, nil)
		deadline := time.Now().Add(time.Minute)
		if end, ok := ctx.Deadline(); ok && end.Before(deadline) {
			deadline = end // the run's
		}
		converted, n, err := p.firstSuccess(deadline)
		failed += n
		if err != nil {
			return time.Time{}, failed, fmt.Errorf("storm floor %s %s: %w", in.ns, kind, err)
		}
		last = converted
	}
	return last, failed, nil
}

// patchCABundle sets the caBundle of CRD name's conversion webhook.
func (b *bench) patchCABundle(ctx context.Context, name string, bundle []byte, writes *atomic.Int64) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"conversion": map[string]any{"webhook": map[string]any{"clientConfig": map[string]any{"caBundle": bundle}}}}})
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = name
	if err := b.c.Patch(ctx, crd, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("storm floor: patching the caBundle of CRD %s: %w", name, err)
	}
	writes.Add(1)
	return nil
}

// row compares the storm with its floor; false when there is no floor.
// A floor that did not rotate every install within the storm's goal says
// how many it did: the goal is then below the floor at that size.
func (f *stormFloorResult) row(storm *stormResult) (Row, bool) {
	if f == nil || f.Seconds <= 0 {
		return Row{}, false
	}
	perInstall := f.Seconds / float64(f.N)
	hookwright := fmt.Sprintf("floor %s (%s per install, %.1f writes per install); at the floor's time per install, %d rotations take %s",
		secs(f.Seconds), ms(perInstall), float64(f.Writes)/float64(f.N), storm.Installs, secs(float64(storm.Installs)*perInstall))
	if f.Rotated < f.N {
		hookwright = fmt.Sprintf("floor: %d of %d rotated in %s, the storm's goal (%d writes)", f.Rotated, f.N, secs(stormGoal.Seconds()), f.Writes)
	}
	if storm.Rotated > 0 {
		hookwright += fmt.Sprintf(" (Hookwright: %d of %d in %s)", storm.Rotated, storm.Installs, secs(storm.Seconds))
	}
	return Row{
		ID: "Storm floor",
		Measure: fmt.Sprintf("The storm's physical floor at N=%d (P4 floor's installs): the bench rotates their CAs itself, %d at a time, in Hookwright's order (new CA added to each caBundle, serving certificate moved and rolled out, old CA pruned), with no check between steps",
			f.N, f.Workers),
		Goal:       "— (the yardstick)",
		Hookwright: hookwright,
		Anchor:     "—", Met: "n/a",
	}, true
}

// describe is the floor's paragraph in "How each figure is measured".
func (f *stormFloorResult) describe() string {
	return fmt.Sprintf("**Rotation storm floor.** Just before the storm, on the same cluster, the P4 floor's %d installs (idle, converted through their webhooks, no WebhookInstall) rotate their CA at once, made by the bench itself with each install's new CA and serving certificate made before the clock: %d workers, as many as the operator's reconcile workers, take each install's first step (patch each CRD's caBundle to the old and the new CA, patch the serving Secret to a certificate of the new CA, annotate the Deployment's pod template so that its pods roll) and, the moment the bench's watch sees every replica run that template, its second (patch each CRD's caBundle to the new CA alone, then a server-side dry run at v2 every 5 ms until one converts through the webhook); second steps go first. The time runs from the first write to the last install's conversion, or to the storm's goal (%s) if that comes first: %s, %d of %d rotated, %d writes (%.1f per install), %d dry runs failed after a prune before one converted. The floor proves nothing Hookwright proves before each step (that the API server loaded the caBundle before the pods move to the new CA, that it trusts them through the new CA alone before the old leaves), and writes no CA Secret, status or Event: no rotation that rolls the pods onto the new certificate, as Hookwright's does to know that every pod serves it, can go below it on this test ground.",
		f.N, f.Workers, secs(stormGoal.Seconds()), secs(f.Seconds), f.Rotated, f.N, f.Writes, float64(f.Writes)/float64(f.N), f.FailedProbes)
}
