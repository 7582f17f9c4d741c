package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// migratorFieldManager is the field manager of the no-op rewrites. It
// owns no field: an apply of nothing but identity and preconditions.
const migratorFieldManager = "hookwright-storage-migrator"

// rewriteTimeout bounds one rewrite: the API server's own conversion
// webhook timeout is 30 s.
const rewriteTimeout = 45 * time.Second

// MigrationOptions bound Hookwright's own migrator.
type MigrationOptions struct {
	// PageSize is how many objects one pass lists and rewrites (default
	// 500): a page is the unit of progress a restart resumes from.
	PageSize int64
	// Workers rewrite a page's objects in parallel (default 4).
	Workers int
	// QPS bounds the rewrites per second of all migrations together
	// (default 200), so that a migration never crowds the API server.
	QPS float64
	// InTree: use the cluster's StorageVersionMigration API when it is
	// served (default true); false always uses Hookwright's own migrator.
	InTree *bool
}

// migrator is the defaulted options and the rate limiter all migrations
// share.
type migrator struct {
	MigrationOptions
	limiter *rate.Limiter
}

func (r *WebhookInstallReconciler) migrator() *migrator {
	r.migratorOnce.Do(func() {
		o := r.Migration
		if o.PageSize <= 0 {
			o.PageSize = 500
		}
		if o.Workers <= 0 {
			o.Workers = 4
		}
		if o.QPS <= 0 {
			o.QPS = 200
		}
		r.migratorState = &migrator{MigrationOptions: o, limiter: rate.NewLimiter(rate.Limit(o.QPS), o.Workers)}
	})
	return r.migratorState
}

// migratePage lists the next page of the CRD's objects at the storage
// version and rewrites each as it is, through a server-side apply of its
// identity only, with its uid and resourceVersion as preconditions (as
// kube-controller-manager's storage version migrator does,
// pkg/controller/storageversionmigrator): the API server decodes the
// stored object, converting it through the webhook, and stores it again in
// the storage version. A conflict means someone wrote (or deleted) the
// object since the list, in the storage version already. The list's
// continue token pins every page to the snapshot of the first, so every
// object that existed when the listing began is seen once.
func (r *WebhookInstallReconciler) migratePage(ctx context.Context, s *installState, c *crdState, m *v1alpha1.StorageMigrationStatus) (done bool, err error) {
	opts := r.migrator()
	gv := c.crd.Spec.Group + "/" + m.To
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(gv)
	list.SetKind(c.crd.Spec.Names.ListKind)
	resource := c.crd.Spec.Names.Plural + "." + c.crd.Spec.Group
	first := m.Continue == ""
	if err := r.APIReader.List(ctx, list, client.Limit(opts.PageSize), client.Continue(m.Continue)); err != nil {
		switch {
		case (apierrors.IsResourceExpired(err) || apierrors.IsGone(err)) && inconsistentContinue(err) != "":
			// The snapshot was compacted away (the API server compacts
			// etcd every 5 minutes by default), and the API server offers
			// to go on past the last object listed at its newest snapshot.
			// Nothing is skipped: an object that existed when the
			// migration began and still exists is either before that key
			// (rewritten already) or after it (listed now); one created or
			// written since is in the storage version already. Starting
			// over instead would redo every object done, and a listing
			// longer than the compaction interval would never end.
			m.Continue = inconsistentContinue(err)
			m.Message = fmt.Sprintf("the listing's snapshot expired after %d objects; going on from the last object listed, at the newest snapshot", m.Migrated)
			return false, nil
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			// The snapshot was compacted away and no way on was offered:
			// list again from a new one. Objects rewritten already are
			// rewritten again (a no-op); none is skipped.
			m.Continue = ""
			m.Restarts++
			m.Message = fmt.Sprintf("the listing's snapshot expired after %d objects; listing again from the start", m.Migrated)
			return false, nil
		case apierrors.IsForbidden(err):
			forbiddenMigration(s, m, "list "+resource, err)
			return false, nil
		}
		if reason, _ := classifyConversionError(err.Error()); reason != "" {
			failMigration(s, m, fmt.Sprintf("listing %s at %s after %d objects failed, because the API server could not convert a stored object through the webhook "+
				"(its error names the object when the webhook does): %v. status.storedVersions is untouched; fix or delete the object, or fix the webhook, and the migration lists again", resource, m.To, m.Migrated, err))
			// The listing's snapshot would hold the object as it was even
			// once it is fixed or deleted: the retry lists a fresh one
			// (objects rewritten already cost a no-op request each).
			m.Continue = ""
			m.Restarts++
			return false, nil
		}
		return false, fmt.Errorf("listing %s for the storage migration: %w", resource, err)
	}
	if first {
		m.Total = m.Migrated + int64(len(list.Items))
		if remaining := list.GetRemainingItemCount(); remaining != nil {
			m.Total += *remaining
		}
	}

	var failed atomic.Pointer[string]
	var forbidden atomic.Pointer[error]
	group, gctx := errgroup.WithContext(ctx)
	group.SetLimit(opts.Workers)
	for i := range list.Items {
		obj := &list.Items[i]
		group.Go(func() error {
			if err := opts.limiter.Wait(gctx); err != nil {
				return err
			}
			// A request that hangs must not stall the migration: it fails,
			// and the page is tried again (its rewrites are idempotent).
			rctx, cancel := context.WithTimeout(gctx, rewriteTimeout)
			err := rewrite(rctx, r.Client, obj)
			cancel()
			switch {
			case err == nil, apierrors.IsConflict(err), apierrors.IsNotFound(err):
				return nil
			case apierrors.IsForbidden(err):
				forbidden.CompareAndSwap(nil, &err)
				return nil
			}
			if reason, _ := classifyConversionError(err.Error()); reason != "" {
				msg := fmt.Sprintf("rewriting %s %s in %s failed, because the API server could not convert it through the webhook: %v. "+
					"status.storedVersions is untouched; fix the object or the webhook and the migration resumes at its page", resource, client.ObjectKeyFromObject(obj), m.To, err)
				failed.CompareAndSwap(nil, &msg)
				return nil
			}
			return fmt.Errorf("rewriting %s %s: %w", resource, client.ObjectKeyFromObject(obj), err)
		})
	}
	if err := group.Wait(); err != nil {
		return false, err
	}
	switch {
	case forbidden.Load() != nil:
		forbiddenMigration(s, m, "patch "+resource, *forbidden.Load())
		return false, nil
	case failed.Load() != nil:
		failMigration(s, m, *failed.Load())
		return false, nil
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Storage migration page rewritten", "crd", c.name, "objects", len(list.Items), "migrated", m.Migrated+int64(len(list.Items)), "total", m.Total)
	m.Migrated += int64(len(list.Items))
	migratedObjects.WithLabelValues(m.Method).Add(float64(len(list.Items)))
	m.Continue = list.GetContinue()
	m.Message = fmt.Sprintf("%d of about %d objects rewritten in %s", m.Migrated, max(m.Total, m.Migrated), m.To)
	return m.Continue == "", nil
}

// inconsistentContinue is the continue token a 410 answer to a paginated
// list carries when the API server can go on past the expired snapshot
// (k8s.io/apiserver's etcd3 store: "use the continue token in this
// response to retrieve the remainder of the results"), or "".
func inconsistentContinue(err error) string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return ""
	}
	return status.Status().ListMeta.Continue
}

// rewrite stores obj again, unchanged, in the storage version.
func rewrite(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	identity := map[string]any{
		"apiVersion": obj.GetAPIVersion(),
		"kind":       obj.GetKind(),
		"metadata": map[string]any{
			"name":            obj.GetName(),
			"namespace":       obj.GetNamespace(),
			"uid":             string(obj.GetUID()),
			"resourceVersion": obj.GetResourceVersion(),
		},
	}
	body, err := json.Marshal(identity)
	if err != nil {
		return err
	}
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(obj.GroupVersionKind())
	target.SetNamespace(obj.GetNamespace())
	target.SetName(obj.GetName())
	return c.Patch(ctx, target, client.RawPatch(types.ApplyPatchType, body), client.FieldOwner(migratorFieldManager))
}

// failMigration stops the migration with msg; it is tried again later.
func failMigration(s *installState, m *v1alpha1.StorageMigrationStatus, msg string) {
	m.State, m.Reason, m.Message = v1alpha1.MigrationFailed, v1alpha1.ReasonMigrationFailed, msg
	stopped(s, m)
	s.retryWithin(migrationFailedRetry)
}
