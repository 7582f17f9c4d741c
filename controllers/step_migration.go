package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// migrationFailedRetry is how soon a failed migration is tried again,
// from where it stopped: fixing an object or the webhook wakes no watch.
const migrationFailedRetry = time.Minute

// migrateStorage rewrites the stored objects of each conversion CRD whose
// status.storedVersions lags its storage version, one page per pass, and
// then removes the migrated versions from storedVersions (the reference
// procedure: https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definition-versioning/#upgrade-existing-objects-to-a-new-stored-version).
// Progress is the status' resume point, so a restart goes on from the
// last page written; a resync with nothing stale reads nothing and writes
// nothing.
func (r *WebhookInstallReconciler) migrateStorage(ctx context.Context, s *installState) error {
	if err := r.freshProgress(ctx, s); err != nil {
		return err
	}
	for _, c := range s.crds {
		prev := previousMigration(s.install, c.name)
		if c.crd == nil || c.kept {
			continue
		}
		m, err := r.migrateCRD(ctx, s, c, prev)
		if m != nil && (prev == nil || !equality.Semantic.DeepEqual(*m, *prev)) {
			s.migrations = append(s.migrations, *m)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// freshProgress reads the install live while a migration is due or was
// under way by the cached status: a pass
// follows the previous one within a millisecond, before the cache has
// seen the status that pass wrote, and resuming from the cached resume
// point would list and rewrite the last page again. The live status is
// newer than the cached one and only that; the spec this pass acted on
// stays the cached one (s.generation).
func (r *WebhookInstallReconciler) freshProgress(ctx context.Context, s *installState) error {
	due := false
	for _, c := range s.crds {
		due = due || (c.crd != nil && !c.kept && len(staleVersions(c.crd)) > 0)
	}
	// Just finished: the pass that pruned storedVersions may not be in the
	// cache yet, and its record must not be overwritten by the one before.
	for _, m := range s.install.Status.StorageMigrations {
		due = due || m.State == v1alpha1.MigrationRunning || m.State == v1alpha1.MigrationFailed
	}
	if !due {
		return nil
	}
	live := &v1alpha1.WebhookInstall{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(s.install), live); err != nil {
		return fmt.Errorf("reading the install's migration progress: %w", err)
	}
	if live.ResourceVersion != s.install.ResourceVersion && live.UID == s.install.UID {
		s.install.Status, s.install.ResourceVersion = live.Status, live.ResourceVersion
	}
	return nil
}

// migrateCRD decides and runs this pass's share of one CRD's migration.
// It returns the CRD's migration record (nil: no migration ever needed).
func (r *WebhookInstallReconciler) migrateCRD(ctx context.Context, s *installState, c *crdState, prev *v1alpha1.StorageMigrationStatus) (*v1alpha1.StorageMigrationStatus, error) {
	storage := storageVersion(c.crd)
	stale := staleVersions(c.crd)
	if len(stale) == 0 {
		if prev == nil || prev.State == v1alpha1.MigrationSucceeded {
			return prev, nil
		}
		// Someone else pruned storedVersions (or a crash came between the
		// prune and the status write): nothing is left to migrate.
		done := *prev
		done.State, done.Reason, done.Continue = v1alpha1.MigrationSucceeded, "", ""
		done.Message = fmt.Sprintf("status.storedVersions lists only the storage version %s", storage)
		if done.CompletedAt == nil {
			done.CompletedAt = &metav1.Time{Time: s.now.Truncate(time.Second)}
		}
		// The pass that pruned may have ended before it deleted its
		// StorageVersionMigration.
		return &done, r.deleteStorageVersionMigration(ctx, &done, r.servedMigrationAPI())
	}

	var m v1alpha1.StorageMigrationStatus
	switch {
	case prev != nil && prev.To == storage && resumable(prev):
		m = *prev // resume where it stopped
	default:
		waiting := notStarted(s, c, prev, stale, storage)
		if waiting != nil {
			return waiting, nil
		}
		m = v1alpha1.StorageMigrationStatus{
			Name: c.name, State: v1alpha1.MigrationRunning, From: stale, To: storage,
			StartedAt: &metav1.Time{Time: s.now.Truncate(time.Second)},
			Method:    v1alpha1.MethodHookwright,
		}
		if s.install.Spec.StorageMigration.PolicyFor(c.name) == v1alpha1.MigrationOnRequest {
			m.Request = s.install.Annotations[v1alpha1.AnnotationMigrateStorage]
		}
		if _, served := r.inTreeMigrationVersion(); served {
			m.Method = v1alpha1.MethodStorageVersionMigration
		}
	}
	if !migratable(c) {
		// Listing at the storage version goes through the webhook: unless
		// the API server reaches and trusts it, that would only fail. The
		// record waits as it is.
		m.Message = fmt.Sprintf("paused after %d objects: waits for the conversion to be verified (%s)", m.Migrated, c.message)
		return &m, nil
	}
	if m.State != v1alpha1.MigrationRunning && m.FailedAt != nil && s.install.Status.ObservedGeneration == s.install.Generation {
		// Stopped by a failure or by RBAC: try again later, or at once
		// when the install changed. Waiting writes nothing.
		if wait := m.FailedAt.Add(retryAfterStop(&m)).Sub(s.now); wait > 0 {
			s.retryWithin(wait)
			return &m, nil
		}
	}
	m.State, m.Reason, m.FailedAt = v1alpha1.MigrationRunning, "", nil

	var done bool
	var err error
	// RBAC is looked at before Hookwright's first request of a migration.
	checkRBAC := prev == nil || prev.State != v1alpha1.MigrationRunning
	if m.Method == v1alpha1.MethodStorageVersionMigration {
		done, err = r.migrateInTree(ctx, s, c, &m)
		// When no controller took the migration up, or the API went away,
		// Hookwright's own migrator takes over in this pass: its first
		// request, too, must be one RBAC allows.
		checkRBAC = true
	}
	switch {
	case err != nil || m.Method != v1alpha1.MethodHookwright:
		// The cluster's controller migrates, or driving it failed.
	case checkRBAC && !r.mayRewrite(ctx, s, c, &m):
		// RBAC forbids it: the record says what to grant, and no request
		// is made that the API server would refuse.
	default:
		done, err = r.migratePage(ctx, s, c, &m)
	}
	if err != nil || m.State != v1alpha1.MigrationRunning {
		return &m, err
	}
	if !done {
		s.retryWithin(time.Millisecond) // the next page, at once
		return &m, nil
	}
	if err := r.finishMigration(ctx, s, c, &m); err != nil || m.State != v1alpha1.MigrationSucceeded {
		return &m, err
	}
	// The in-tree object has served its purpose; the status keeps the record.
	return &m, r.deleteStorageVersionMigration(ctx, &m, r.servedMigrationAPI())
}

// migrateInTree drives the cluster's StorageVersionMigration, or hands the
// migration to Hookwright's own migrator (m.Method) when the API is no
// longer served or allowed.
func (r *WebhookInstallReconciler) migrateInTree(ctx context.Context, s *installState, c *crdState, m *v1alpha1.StorageMigrationStatus) (bool, error) {
	gv, served := r.inTreeMigrationVersion()
	if served {
		return r.driveStorageVersionMigration(ctx, s, c, m, gv)
	}
	// The API went away (or Hookwright may no longer use it) since this
	// migration started: remove the object it may have created.
	if err := r.deleteStorageVersionMigration(ctx, m, r.servedMigrationAPI()); err != nil {
		return false, err
	}
	m.Method, m.MigrationName = v1alpha1.MethodHookwright, ""
	m.Message = "the storagemigration.k8s.io API is no longer served or allowed: Hookwright migrates itself"
	return false, nil
}

// migratable: the API server converts through the CRD's webhook. A
// webhook that refuses some object counts: the migration then stops at
// that object and names it, instead of waiting for it unexplained.
func migratable(c *crdState) bool {
	return c.state == v1alpha1.ConversionVerified || c.verifyReason == v1alpha1.ReasonConversionRefused
}

// notStarted is the record of a due migration that may not start yet, or
// nil when it may.
func notStarted(s *installState, c *crdState, prev *v1alpha1.StorageMigrationStatus, stale []string, storage string) *v1alpha1.StorageMigrationStatus {
	m := &v1alpha1.StorageMigrationStatus{Name: c.name, From: stale, To: storage}
	policy := s.install.Spec.StorageMigration.PolicyFor(c.name)
	request := s.install.Annotations[v1alpha1.AnnotationMigrateStorage]
	switch {
	case policy == v1alpha1.MigrationDisabled:
		m.State, m.Reason = v1alpha1.MigrationNotRequested, v1alpha1.ReasonMigrationNotRequested
		m.Message = fmt.Sprintf("objects are stored in %s besides the storage version %s, and this CRD's migration policy is Disabled: "+
			"set spec.storageMigration to Automatic or OnRequest for Hookwright to migrate them", strings.Join(stale, ", "), storage)
	case policy == v1alpha1.MigrationOnRequest && (request == "" || prev != nil && prev.Request == request):
		m.State, m.Reason = v1alpha1.MigrationNotRequested, v1alpha1.ReasonMigrationNotRequested
		m.Message = fmt.Sprintf("objects are stored in %s besides the storage version %s; this CRD migrates on request: "+
			"kubectl annotate whi %s %s=\"<reason>\" --overwrite (a value not used before)", strings.Join(stale, ", "), storage, s.install.Name, v1alpha1.AnnotationMigrateStorage)
	case !migratable(c):
		m.State, m.Reason = v1alpha1.MigrationWaiting, v1alpha1.ReasonMigrationWaiting
		m.Message = fmt.Sprintf("objects are stored in %s besides the storage version %s; the migration starts once the conversion is verified", strings.Join(stale, ", "), storage)
	default:
		return nil
	}
	if prev != nil && prev.State == v1alpha1.MigrationSucceeded {
		// Keep the last completed migration's audit fields visible.
		m.StartedAt, m.CompletedAt, m.Migrated, m.Method = prev.StartedAt, prev.CompletedAt, prev.Migrated, prev.Method
	}
	return m
}

// finishMigration removes the migrated versions from the CRD's
// status.storedVersions: every object that existed when the listing began
// has been rewritten in the storage version, and objects created since are
// written in it already. It writes with the CRD's resourceVersion as
// precondition, and only when the storage version is still the one
// migrated to.
func (r *WebhookInstallReconciler) finishMigration(ctx context.Context, s *installState, c *crdState, m *v1alpha1.StorageMigrationStatus) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: c.name}, crd); err != nil {
		return fmt.Errorf("reading CRD %s to prune its stored versions: %w", c.name, err)
	}
	if storageVersion(crd) != m.To {
		// The storage version moved on: start over towards the new one.
		m.State, m.Reason, m.Continue = v1alpha1.MigrationFailed, v1alpha1.ReasonMigrationFailed, ""
		m.Message = fmt.Sprintf("the storage version changed from %s to %s during the migration; a new migration starts", m.To, storageVersion(crd))
		s.retryWithin(time.Millisecond)
		return nil
	}
	kept := slices.DeleteFunc(slices.Clone(crd.Status.StoredVersions), func(v string) bool { return v != m.To && slices.Contains(m.From, v) })
	if !slices.Contains(kept, m.To) {
		kept = append(kept, m.To)
	}
	if !slices.Equal(kept, crd.Status.StoredVersions) {
		crd.Status.StoredVersions = kept
		if err := r.Client.Status().Update(ctx, crd, client.FieldOwner(migratorFieldManager)); err != nil {
			if apierrors.IsForbidden(err) {
				forbiddenMigration(s, m, fmt.Sprintf("update customresourcedefinitions/status of %s", c.name), err)
				return nil
			}
			return fmt.Errorf("pruning the stored versions of CRD %s: %w", c.name, err)
		}
	}
	c.crd = crd
	m.State, m.Reason, m.Continue = v1alpha1.MigrationSucceeded, "", ""
	m.CompletedAt = &metav1.Time{Time: s.now.Truncate(time.Second)}
	if m.Total < m.Migrated {
		m.Total = m.Migrated
	}
	m.Message = fmt.Sprintf("%d objects rewritten in %s; %s removed from status.storedVersions", m.Migrated, m.To, strings.Join(m.From, ", "))
	return nil
}

// mayRewrite: Hookwright's ServiceAccount may list and patch the CRD's
// objects everywhere (the author's grant), checked with SubjectAccessReviews
// when a migration starts or resumes, so that missing RBAC shows as
// MigrationForbidden rather than as refused requests.
func (r *WebhookInstallReconciler) mayRewrite(ctx context.Context, s *installState, c *crdState, m *v1alpha1.StorageMigrationStatus) bool {
	resource := c.crd.Spec.Names.Plural + "." + c.crd.Spec.Group
	for _, verb := range []string{"list", "patch"} {
		allowed, denied := r.mayDo(ctx, authorizationv1.ResourceAttributes{Verb: verb, Group: c.crd.Spec.Group, Version: m.To, Resource: c.crd.Spec.Names.Plural}, resource+" at the cluster scope")
		if !allowed {
			forbiddenMigration(s, m, verb+" "+resource, errors.New(denied))
			return false
		}
	}
	return true
}

// stopped stamps a failed or RBAC-stopped migration with when it stopped;
// stopping again the same way keeps the first stamp, so a migration that
// keeps failing is retried (on the requeue) without a status write each time.
func stopped(s *installState, m *v1alpha1.StorageMigrationStatus) {
	if prev := previousMigration(s.install, m.Name); prev != nil && prev.FailedAt != nil && prev.State == m.State && prev.Reason == m.Reason && prev.Message == m.Message {
		m.FailedAt = prev.FailedAt
		return
	}
	m.FailedAt = &metav1.Time{Time: s.now.Truncate(time.Second)}
}

// resumable: the record is a migration under way, stopped, or held up
// by RBAC; it goes on from its resume point.
func resumable(m *v1alpha1.StorageMigrationStatus) bool {
	return m.State == v1alpha1.MigrationRunning || m.State == v1alpha1.MigrationFailed ||
		(m.State == v1alpha1.MigrationWaiting && m.Reason == v1alpha1.ReasonMigrationForbidden)
}

// retryAfterStop is how long a stopped migration waits before it tries
// again: RBAC is looked at as often as verification does.
func retryAfterStop(m *v1alpha1.StorageMigrationStatus) time.Duration {
	if m.Reason == v1alpha1.ReasonMigrationForbidden {
		return verifyForbiddenRetry
	}
	return migrationFailedRetry
}

// forbiddenMigration records that RBAC stops the migration, and what to grant.
func forbiddenMigration(s *installState, m *v1alpha1.StorageMigrationStatus, what string, err error) {
	s.retryWithin(verifyForbiddenRetry)
	m.State, m.Reason = v1alpha1.MigrationWaiting, v1alpha1.ReasonMigrationForbidden
	m.Message = fmt.Sprintf("Hookwright may not %s (%v). Grant its ServiceAccount list and patch on the converted resource, and update on customresourcedefinitions/status, "+
		"with a ClusterRole and ClusterRoleBinding (the admin guide has one); the migration then resumes after %d objects", what, err, m.Migrated)
	stopped(s, m)
}

// storageVersion is the CRD's storage version.
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// staleVersions are the stored versions other than the storage version.
func staleVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	storage := storageVersion(crd)
	var stale []string
	for _, v := range crd.Status.StoredVersions {
		if v != storage {
			stale = append(stale, v)
		}
	}
	return stale
}

// removableVersions are the CRD's versions that store no object: neither
// the storage version nor in status.storedVersions.
func removableVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var removable []string
	for _, v := range crd.Spec.Versions {
		if !v.Storage && !slices.Contains(crd.Status.StoredVersions, v.Name) {
			removable = append(removable, v.Name)
		}
	}
	return removable
}

func previousMigration(install *v1alpha1.WebhookInstall, crd string) *v1alpha1.StorageMigrationStatus {
	for i := range install.Status.StorageMigrations {
		if install.Status.StorageMigrations[i].Name == crd {
			m := install.Status.StorageMigrations[i]
			return &m
		}
	}
	return nil
}
