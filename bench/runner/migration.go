package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// migrationResult is what the migration measure saw.
type migrationResult struct {
	Objects  int
	Elapsed  time.Duration
	Requests int            // the operator's requests on the migrated resource
	ByVerb   map[string]int // of those
	Method   string
}

// migration times a storage migration by the operator binary as shipped
// (its flags at their defaults): sz.migrationObjects Widgets stored as v1
// in one namespace, the CRD's storage version moved to v2; the time runs
// from that move to the install's migration record saying Succeeded (and
// storedVersions [v2]). The operator's requests on the resource come from
// the audit log.
func (b *bench) migration(ctx context.Context) error {
	const ns = "migration"
	n := b.sz.migrationObjects
	crd := convertedCRD(ns, crdKinds[0], nil)
	if err := b.namespace(ctx, ns); err != nil {
		return err
	}
	b.cluster.Kubelet.Serve(ns, webhookDeployment, converterHost{})
	if err := b.createCRD(ctx, crd); err != nil {
		return err
	}
	if err := b.c.Create(ctx, webhookInstall(ns, []string{crd.Name}, v1alpha1.CertificatePolicy{})); err != nil {
		return err
	}
	key := types.NamespacedName{Namespace: ns, Name: installName}
	if _, err := b.observer.waitAll(ctx, b.observer.verified, []types.NamespacedName{key}, time.Now().Add(b.sz.installTimeout)); err != nil {
		return fmt.Errorf("install %s: ConversionVerified not True (phase %s): %w", key, b.observer.phase(key), err)
	}

	b.logf("Migration: storing %d %ss as v1", n, crd.Spec.Names.Kind)
	cfg := rest.CopyConfig(b.cluster.Config)
	cfg.QPS = -1
	fast, err := client.New(cfg, client.Options{Scheme: b.cluster.Scheme})
	if err != nil {
		return err
	}
	if err := parallel(n, 16, func(i int) error {
		obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"value": fmt.Sprint(i)}}}
		obj.SetAPIVersion(crd.Spec.Group + "/v1")
		obj.SetKind(crd.Spec.Names.Kind)
		obj.SetNamespace(ns)
		obj.SetName(fmt.Sprintf("w-%05d", i))
		return fast.Create(ctx, obj)
	}); err != nil {
		return err
	}

	mark, err := b.audit.mark()
	if err != nil {
		return err
	}
	b.logf("Migration: moving the storage version to v2")
	started := time.Now()
	live := &apiextensionsv1.CustomResourceDefinition{}
	if err := b.c.Get(ctx, client.ObjectKey{Name: crd.Name}, live); err != nil {
		return err
	}
	for i := range live.Spec.Versions {
		live.Spec.Versions[i].Storage = live.Spec.Versions[i].Name == "v2"
	}
	if err := b.c.Update(ctx, live); err != nil {
		return err
	}
	deadline := started.Add(15 * time.Minute)
	var record v1alpha1.StorageMigrationStatus
	for {
		whi := &v1alpha1.WebhookInstall{}
		if err := b.c.Get(ctx, key, whi); err != nil {
			return err
		}
		for _, m := range whi.Status.StorageMigrations {
			if m.Name == crd.Name {
				record = m
			}
		}
		if record.State == v1alpha1.MigrationSucceeded {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the migration did not succeed within 15 minutes: %+v", record)
		}
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := time.Since(started)
	if err := b.c.Get(ctx, client.ObjectKey{Name: crd.Name}, live); err != nil {
		return err
	}
	if len(live.Status.StoredVersions) != 1 || live.Status.StoredVersions[0] != "v2" {
		return fmt.Errorf("migration Succeeded but storedVersions is %v", live.Status.StoredVersions)
	}
	events, err := b.audit.since(mark, operatorUser)
	if err != nil {
		return err
	}
	res := &migrationResult{Objects: n, Elapsed: elapsed, ByVerb: map[string]int{}, Method: record.Method}
	for _, e := range events {
		if e.ObjectRef.Resource == crd.Spec.Names.Plural {
			res.Requests++
			res.ByVerb[e.Verb]++
		}
	}
	b.report.Migration = res
	rate := float64(n) / elapsed.Seconds()
	b.report.setRow(Row{
		ID: "Migration", Measure: fmt.Sprintf("storage migration of %d objects, v1 → v2 (%s's migrator, shipped flags: --migration-qps 200)", n, res.Method),
		Goal:       "report objects/s and API requests per object",
		Hookwright: fmt.Sprintf("%.0f objects/s (%s); %.2f requests/object", rate, elapsed.Round(100*time.Millisecond), float64(res.Requests)/float64(n)),
		Anchor:     "—", Met: "—",
	})
	b.logf("Migration: %d objects in %s (%.0f/s), %d requests on %s (%s)", n, elapsed.Round(time.Millisecond), rate, res.Requests, crd.Spec.Names.Plural, verbs(res.ByVerb))
	return nil
}

func verbs(by map[string]int) string {
	var parts []string
	for _, v := range []string{"list", "patch", "get", "update"} {
		if by[v] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", by[v], v))
		}
	}
	return strings.Join(parts, ", ")
}
