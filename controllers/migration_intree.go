package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	svmv1beta1 "k8s.io/api/storagemigration/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// inTreeStartTimeout is how long a StorageVersionMigration may wait for
// kube-controller-manager to take it up (its resourceVersion controller
// sets status.resourceVersion at once) before Hookwright concludes that
// the API is served but its controller does not run, and migrates itself.
const inTreeStartTimeout = 30 * time.Second

// inTreeRecheck is how often a running StorageVersionMigration is read:
// its progress wakes no watch of Hookwright's.
const inTreeRecheck = 2 * time.Second

// inTreeMigrationServed: the API server serves storagemigration.k8s.io/v1beta1
// (Kubernetes 1.35+, feature gate StorageVersionMigrator and the API
// enabled) and Hookwright is allowed to use it.
func (r *WebhookInstallReconciler) inTreeMigrationServed() bool {
	if r.Migration.InTree != nil && !*r.Migration.InTree {
		return false
	}
	_, err := r.Client.RESTMapper().RESTMapping(svmv1beta1.SchemeGroupVersion.WithKind("StorageVersionMigration").GroupKind(), svmv1beta1.SchemeGroupVersion.Version)
	return err == nil
}

// driveStorageVersionMigration has kube-controller-manager rewrite the
// CRD's objects through a StorageVersionMigration, and reports its
// progress. done: it succeeded, and storedVersions may be pruned (the
// in-tree controller does not prune them).
func (r *WebhookInstallReconciler) driveStorageVersionMigration(ctx context.Context, s *installState, c *crdState, m *v1alpha1.StorageMigrationStatus) (bool, error) {
	if m.MigrationName == "" {
		m.MigrationName = storageVersionMigrationName(c.name, m.To, m.StartedAt)
	}
	svm := &svmv1beta1.StorageVersionMigration{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Name: m.MigrationName}, svm)
	if apierrors.IsNotFound(err) {
		svm = &svmv1beta1.StorageVersionMigration{
			ObjectMeta: metav1.ObjectMeta{
				Name:        m.MigrationName,
				Labels:      map[string]string{"app.kubernetes.io/managed-by": "hookwright"},
				Annotations: map[string]string{v1alpha1.AnnotationOwner: installRef(s.install)},
			},
			Spec: svmv1beta1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: c.crd.Spec.Group, Resource: c.crd.Spec.Names.Plural}},
		}
		if err := r.Client.Create(ctx, svm); err != nil && !apierrors.IsAlreadyExists(err) {
			if apierrors.IsForbidden(err) {
				forbiddenMigration(s, m, "create storageversionmigrations", err)
				return false, nil
			}
			return false, fmt.Errorf("creating StorageVersionMigration %s: %w", m.MigrationName, err)
		}
		m.Message = fmt.Sprintf("StorageVersionMigration %s created: kube-controller-manager rewrites every object in %s", m.MigrationName, m.To)
		s.retryWithin(inTreeRecheck)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading StorageVersionMigration %s: %w", m.MigrationName, err)
	}
	switch {
	case meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1beta1.MigrationSucceeded)):
		return true, nil
	case meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1beta1.MigrationFailed)):
		failed := meta.FindStatusCondition(svm.Status.Conditions, string(svmv1beta1.MigrationFailed))
		failMigration(s, m, fmt.Sprintf("StorageVersionMigration %s failed: %s. status.storedVersions is untouched; a new one is created in a minute", m.MigrationName, failed.Message))
		// Failed is final for the in-tree controller: the retry needs a new object.
		return false, r.deleteStorageVersionMigration(ctx, m)
	case svm.Status.ResourceVersion == "" && s.now.Sub(svm.CreationTimestamp.Time) > inTreeStartTimeout:
		if err := r.deleteStorageVersionMigration(ctx, m); err != nil {
			return false, err
		}
		m.Method = v1alpha1.MethodHookwright
		m.Message = fmt.Sprintf("the storagemigration.k8s.io API is served but no controller took up a StorageVersionMigration within %s: Hookwright migrates itself", inTreeStartTimeout)
		s.retryWithin(time.Millisecond)
		return false, nil
	}
	m.Message = fmt.Sprintf("kube-controller-manager is rewriting every object in %s (StorageVersionMigration %s)", m.To, m.MigrationName)
	s.retryWithin(inTreeRecheck)
	return false, nil
}

// deleteStorageVersionMigration removes the migration's object, if any.
func (r *WebhookInstallReconciler) deleteStorageVersionMigration(ctx context.Context, m *v1alpha1.StorageMigrationStatus) error {
	if m.MigrationName == "" {
		return nil
	}
	svm := &svmv1beta1.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: m.MigrationName}}
	if err := r.Client.Delete(ctx, svm); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting StorageVersionMigration %s: %w", m.MigrationName, err)
	}
	m.MigrationName = ""
	return nil
}

// storageVersionMigrationName is stable for one migration (CRD, target
// version, start), so a restarted operator finds the object it created.
func storageVersionMigrationName(crd, to string, started *metav1.Time) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", crd, to)
	if started != nil {
		fmt.Fprint(h, started.UTC().Unix())
	}
	return "hookwright-" + hex.EncodeToString(h.Sum(nil))[:16]
}
