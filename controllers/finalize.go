package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

// finalize runs while the install is deleted: retire deletes its admission
// configurations, releases its CRD claims, keeps serving those whose conversion None would make unreadable
// (keepalive.go) until they are migrated or taken over, and only then
// removes what the install made and lets the WebhookInstall go. A newer
// install that replaces this one takes over the CRDs it lists first. Any
// error retries with backoff (the finalizer stays), unlike OLM's one-shot
// delete handler.
func (r *WebhookInstallReconciler) finalize(ctx context.Context, s *installState) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(s.install, Finalizer) {
		return ctrl.Result{}, nil
	}
	newer, err := r.replacement(ctx, s.install)
	if err != nil {
		return ctrl.Result{}, err
	}
	return r.retire(ctx, s, newer)
}

// releaseOrKeep gives up the install's claim on a CRD it stops serving;
// why completes "WebhookInstall <ns>/<name> ..." in the Events. crd is a
// live read.
//
// A CRD's conversion is switched to None only when that is harmless: every
// object is stored in one version and every served version has the same
// schema. Otherwise None would serve objects under the wrong schema, so the
// CRD stays claimed and keeps converting through the install's webhook,
// which the install keeps serving: the returned crdState (keepalive.go).
// Only when the install no longer declares that webhook's Deployment, or
// is deleted with its namespace (the namespace controller deletes the
// webhook's workloads and no new one can be created there: waiting would
// only hang the namespace's deletion), is the conversion left in place
// unserved, with a Warning on the CRD, and the CRD marked released so a new
// install takes it over without a handover. Left in place, reads in other
// versions fail with the API server's error; None would answer them with
// the stored version's fields under the wrong schema.
func (r *WebhookInstallReconciler) releaseOrKeep(ctx context.Context, s *installState, crd *apiextensionsv1.CustomResourceDefinition, why string) (*crdState, error) {
	name := crd.Name
	if crd.Annotations[v1alpha1.AnnotationOwner] != installRef(s.install) {
		return nil, nil // never ours, or already handed over
	}
	leftInPlace := false
	if pointsAtInstall(crd, s.install) {
		if unsafe := noneIsUnsafe(crd); unsafe != "" {
			if !s.namespaceTerminating {
				kept, err := r.keepState(ctx, s, crd, unsafe)
				if err != nil || kept != nil {
					return kept, err
				}
			}
			leftInPlace = true
			service := crd.Spec.Conversion.Webhook.ClientConfig.Service.Name
			nothingKeeps := fmt.Sprintf("the install no longer declares the deployment of service %s, so nothing keeps it serving", service)
			if s.namespaceTerminating {
				nothingKeeps = fmt.Sprintf("namespace %s is being deleted with service %s, so nothing can keep it serving", s.install.Namespace, service)
			}
			r.Recorder.Eventf(crd, s.install, corev1.EventTypeWarning, "ConversionLeftInPlace", "Release",
				"WebhookInstall %s %s but CRD %s keeps its webhook conversion: %s; %s. "+
					"Re-install a WebhookInstall for it, or migrate storage to one version before setting strategy None",
				installRef(s.install), why, name, unsafe, nothingKeeps)
		} else {
			applied := conversionApplyObject(name, nil)
			if err := r.apply(ctx, applied); err != nil {
				return nil, err
			}
			// The apply changed the resourceVersion: the claim is released
			// on the CRD the apply returned, not on the stale read.
			crd = &apiextensionsv1.CustomResourceDefinition{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(applied.Object, crd); err != nil {
				return nil, fmt.Errorf("reading CRD %s as applied: %w", name, err)
			}
			r.Recorder.Eventf(crd, s.install, corev1.EventTypeNormal, "ConversionSetToNone", "Release",
				"WebhookInstall %s %s; CRD %s stores one version with one schema, so conversion is now None", installRef(s.install), why, name)
			if crd.Annotations[v1alpha1.AnnotationOwner] != installRef(s.install) {
				return nil, nil
			}
		}
	}
	patch := client.MergeFromWithOptions(crd.DeepCopy(), client.MergeFromWithOptimisticLock{})
	delete(crd.Annotations, v1alpha1.AnnotationOwner)
	delete(crd.Annotations, v1alpha1.AnnotationOwnerUID)
	if leftInPlace {
		crd.Annotations[v1alpha1.AnnotationReleasedBy] = installRef(s.install)
	}
	if err := r.Client.Patch(ctx, crd, patch, client.FieldOwner(desired.FieldManager)); err != nil {
		return nil, fmt.Errorf("releasing CRD %s: %w", name, err)
	}
	return nil, nil
}

// noneIsUnsafe says why strategy None could mangle objects, or "".
func noneIsUnsafe(crd *apiextensionsv1.CustomResourceDefinition) string {
	if len(crd.Status.StoredVersions) > 1 {
		return fmt.Sprintf("objects are stored in versions %v", crd.Status.StoredVersions)
	}
	var first *apiextensionsv1.CustomResourceValidation
	seen := false
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		if seen && !equality.Semantic.DeepEqual(first, v.Schema) {
			return "its served versions have different schemas"
		}
		first, seen = v.Schema, true
	}
	return ""
}

// pointsAtService: the CRD converts through service in namespace.
func pointsAtService(crd *apiextensionsv1.CustomResourceDefinition, namespace, service string) bool {
	c := crd.Spec.Conversion
	return c != nil && c.Strategy == apiextensionsv1.WebhookConverter && c.Webhook != nil && c.Webhook.ClientConfig != nil &&
		c.Webhook.ClientConfig.Service != nil && c.Webhook.ClientConfig.Service.Namespace == namespace && c.Webhook.ClientConfig.Service.Name == service
}

func pointsAtInstall(crd *apiextensionsv1.CustomResourceDefinition, install *v1alpha1.WebhookInstall) bool {
	c := crd.Spec.Conversion
	return c != nil && c.Strategy == apiextensionsv1.WebhookConverter && c.Webhook != nil && c.Webhook.ClientConfig != nil &&
		c.Webhook.ClientConfig.Service != nil && c.Webhook.ClientConfig.Service.Namespace == install.Namespace
}

// deleteOwned deletes the Deployments, Services and Secrets made for the
// install. Callers first make sure its admission configurations, which
// call those Services, are gone (confirmAdmissionGone): with
// failurePolicy Fail, a configuration calling a deleted Service would
// refuse every request it matches. Owner references would let the garbage collector do it too;
// deleting explicitly makes cleanup complete before the finalizer goes.
// The list is live and each delete has the listed resourceVersion as a
// precondition: an object a replacing install has just adopted (relabeled)
// is never deleted on a stale view.
func (r *WebhookInstallReconciler) deleteOwned(ctx context.Context, install *v1alpha1.WebhookInstall) error {
	selector := client.MatchingLabels{desired.LabelInstall: install.Name, desired.LabelManagedBy: desired.ManagedByValue}
	var errs []error
	for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &corev1.ServiceList{}, &corev1.SecretList{}} {
		if err := r.APIReader.List(ctx, list, client.InNamespace(install.Namespace), selector); err != nil {
			return err
		}
		items, err := metaItems(list)
		if err != nil {
			return err
		}
		for _, obj := range items {
			rv, uid := obj.GetResourceVersion(), obj.GetUID()
			err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	if err := r.deleteServiceAccounts(ctx, install); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// deleteServiceAccounts deletes the ServiceAccounts Hookwright created for
// the install's Deployments (ensureServiceAccount labels them), unless
// another install of the namespace runs pods as them too. A ServiceAccount
// that existed before (without Hookwright's label) is never deleted. The
// delete has the read UID and resourceVersion as preconditions.
func (r *WebhookInstallReconciler) deleteServiceAccounts(ctx context.Context, install *v1alpha1.WebhookInstall) error {
	var installs v1alpha1.WebhookInstallList
	if err := r.Client.List(ctx, &installs, client.InNamespace(install.Namespace)); err != nil {
		return fmt.Errorf("listing the installs of namespace %s: %w", install.Namespace, err)
	}
	var errs []error
	for _, name := range serviceAccountsOf(install) {
		if slices.ContainsFunc(installs.Items, func(other v1alpha1.WebhookInstall) bool {
			return other.UID != install.UID && slices.Contains(serviceAccountsOf(&other), name)
		}) {
			continue
		}
		sa := &corev1.ServiceAccount{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: install.Namespace, Name: name}, sa); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		if sa.Labels[desired.LabelManagedBy] != desired.ManagedByValue {
			continue // not Hookwright's: it existed before the install
		}
		rv, uid := sa.ResourceVersion, sa.UID
		if err := r.Client.Delete(ctx, sa, client.Preconditions{UID: &uid, ResourceVersion: &rv}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting service account %s/%s: %w", install.Namespace, name, err))
		}
	}
	return errors.Join(errs...)
}

// serviceAccountsOf names the ServiceAccounts the install's Deployments
// run as, as ensureServiceAccount would create them.
func serviceAccountsOf(install *v1alpha1.WebhookInstall) []string {
	var names []string
	for _, d := range install.Spec.Install.Spec.Deployments {
		name := d.Spec.Template.Spec.ServiceAccountName
		if name != "" && name != "default" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

func metaItems(list client.ObjectList) ([]client.Object, error) {
	var out []client.Object
	switch l := list.(type) {
	case *appsv1.DeploymentList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.ServiceList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.SecretList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		return nil, fmt.Errorf("unexpected list %T", list)
	}
	return out, nil
}

func conversionCRDNames(install *v1alpha1.WebhookInstall) []string {
	var names []string
	for _, def := range install.Spec.WebhookDefinitions {
		names = append(names, def.ConversionCRDs...)
	}
	return names
}
