package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// storageMigrationVersions are the storagemigration.k8s.io versions
// Hookwright speaks, newest first: v1 (Kubernetes 1.37+, GA, served by
// default) and v1beta1 (1.35 and 1.36, behind the StorageVersionMigrator
// feature gate and off by default). Their StorageVersionMigration types
// are the same.
var storageMigrationVersions = []string{"v1", "v1beta1"}

// inTreeMigrationVersion is the newest storagemigration.k8s.io version the
// API server serves, if Hookwright is allowed to use the in-tree API.
func (r *WebhookInstallReconciler) inTreeMigrationVersion() (schema.GroupVersion, bool) {
	if r.Migration.InTree != nil && !*r.Migration.InTree {
		return schema.GroupVersion{}, false
	}
	return servedStorageMigrationVersion(r.Client.RESTMapper())
}

// servedMigrationAPI is the storagemigration.k8s.io version served, or an
// empty one: cleaning up a StorageVersionMigration Hookwright created does
// not depend on whether it may start new ones.
func (r *WebhookInstallReconciler) servedMigrationAPI() schema.GroupVersion {
	gv, _ := servedStorageMigrationVersion(r.Client.RESTMapper())
	return gv
}

// servedStorageMigrationVersion: the first of storageMigrationVersions the
// mapper knows StorageVersionMigration in.
func servedStorageMigrationVersion(mapper meta.RESTMapper) (schema.GroupVersion, bool) {
	kind := schema.GroupKind{Group: svmv1.GroupName, Kind: "StorageVersionMigration"}
	for _, version := range storageMigrationVersions {
		if _, err := mapper.RESTMapping(kind, version); err == nil {
			return schema.GroupVersion{Group: svmv1.GroupName, Version: version}, true
		}
	}
	return schema.GroupVersion{}, false
}

// storageVersionMigration is an empty StorageVersionMigration in version
// gv, to read or write whichever version the cluster serves.
func storageVersionMigration(gv schema.GroupVersion, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gv.WithKind("StorageVersionMigration"))
	u.SetName(name)
	return u
}

// driveStorageVersionMigration has kube-controller-manager rewrite the
// CRD's objects through a StorageVersionMigration, and reports its
// progress. done: it succeeded, and storedVersions may be pruned (the
// in-tree controller does not prune them).
func (r *WebhookInstallReconciler) driveStorageVersionMigration(ctx context.Context, s *installState, c *crdState, m *v1alpha1.StorageMigrationStatus, gv schema.GroupVersion) (bool, error) {
	if m.MigrationName == "" {
		m.MigrationName = storageVersionMigrationName(c.name, m.To, m.StartedAt)
	}
	live := storageVersionMigration(gv, m.MigrationName)
	err := r.APIReader.Get(ctx, client.ObjectKey{Name: m.MigrationName}, live)
	if apierrors.IsNotFound(err) {
		if err := r.createStorageVersionMigration(ctx, s, c, m, gv); err != nil {
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
	svm := &svmv1.StorageVersionMigration{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, svm); err != nil {
		return false, fmt.Errorf("reading StorageVersionMigration %s: %w", m.MigrationName, err)
	}
	switch {
	case meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1.MigrationSucceeded)):
		return true, nil
	case meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1.MigrationFailed)):
		failed := meta.FindStatusCondition(svm.Status.Conditions, string(svmv1.MigrationFailed))
		failMigration(s, m, fmt.Sprintf("StorageVersionMigration %s failed: %s. status.storedVersions is untouched; a new one is created in a minute", m.MigrationName, failed.Message))
		// Failed is final for the in-tree controller: the retry needs a new object.
		return false, r.deleteStorageVersionMigration(ctx, m, gv)
	case svm.Status.ResourceVersion == "" && s.now.Sub(svm.CreationTimestamp.Time) > inTreeStartTimeout:
		if err := r.deleteStorageVersionMigration(ctx, m, gv); err != nil {
			return false, err
		}
		m.Method = v1alpha1.MethodHookwright
		m.Message = fmt.Sprintf("the storagemigration.k8s.io API is served but no controller took up a StorageVersionMigration within %s: Hookwright migrates itself", inTreeStartTimeout)
		return false, nil
	}
	m.Message = fmt.Sprintf("kube-controller-manager is rewriting every object in %s (StorageVersionMigration %s)", m.To, m.MigrationName)
	s.retryWithin(inTreeRecheck)
	return false, nil
}

// createStorageVersionMigration asks kube-controller-manager to rewrite
// every object of the CRD's resource in its storage version.
func (r *WebhookInstallReconciler) createStorageVersionMigration(ctx context.Context, s *installState, c *crdState, m *v1alpha1.StorageMigrationStatus, gv schema.GroupVersion) error {
	svm := &svmv1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{
			Name:        m.MigrationName,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "hookwright"},
			Annotations: map[string]string{v1alpha1.AnnotationOwner: installRef(s.install)},
		},
		Spec: svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: c.crd.Spec.Group, Resource: c.crd.Spec.Names.Plural}},
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(svm)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gv.WithKind("StorageVersionMigration"))
	if err := r.Client.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// deleteStorageVersionMigration removes the migration's object, if any.
// Without the in-tree API served (gv empty) there is none to remove.
func (r *WebhookInstallReconciler) deleteStorageVersionMigration(ctx context.Context, m *v1alpha1.StorageMigrationStatus, gv schema.GroupVersion) error {
	if m.MigrationName == "" || gv.Empty() {
		return nil
	}
	if err := r.Client.Delete(ctx, storageVersionMigration(gv, m.MigrationName)); err != nil && !apierrors.IsNotFound(err) {
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
