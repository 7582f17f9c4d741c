package controllers

import (
	"context"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

// indexConversionCRD indexes WebhookInstalls by the CRDs they convert, so a
// CRD event wakes exactly the installs that name it.
const indexConversionCRD = "spec.webhookdefinitions.conversionCRDs"

// indexCRDOwner indexes the metadata-only CRD cache by the owner
// annotation, so an install finds the CRDs it claims without copying the
// metadata of every CRD in the cluster (make bench P4 measured that copy as
// most of a reconcile's CPU).
const indexCRDOwner = "metadata.annotations.owner"

// crdMetadata is the metadata-only CRD type of the cache and the index.
func crdMetadata() *metav1.PartialObjectMetadata {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	return crd
}

// CacheOptions keeps the manager's memory flat in big clusters: only
// Hookwright's own Deployments, Services, Secrets and admission
// configurations are cached (by label), and CRDs are watched as metadata
// only (SetupWithManager).
//
// Cached objects keep no managedFields. Nothing reads them from the cache
// but the admission configurations' drift checks (step_admission.go,
// admission_state.go), which keep theirs; the CRDs' ownership and drift
// are read from live objects (preflight). No write sends them back: every
// write is a server-side apply, a merge patch of the fields it changes, or
// an update of the status subresource, which keeps the live managedFields
// whatever the request carries. In `make bench`'s P5 census they were two
// fifths of the JSON of the objects this cache holds, and four fifths of
// the CRDs' metadata.
func CacheOptions() cache.Options {
	ours := labels.SelectorFromSet(labels.Set{desired.LabelManagedBy: desired.ManagedByValue})
	return cache.Options{DefaultTransform: cache.TransformStripManagedFields(), ByObject: map[client.Object]cache.ByObject{
		&appsv1.Deployment{}: {Label: ours},
		&corev1.Service{}:    {Label: ours},
		&corev1.Secret{}:     {Label: ours},
		// The slices of Hookwright's Services: the EndpointSlice controller
		// copies a Service's labels to its slices.
		&discoveryv1.EndpointSlice{}: {Label: ours},
		// The installs' admission configurations; anyone else's are read
		// live, by name, only when an install needs that name.
		&admissionregistrationv1.ValidatingWebhookConfiguration{}: {Label: ours, Transform: keepManagedFields},
		&admissionregistrationv1.MutatingWebhookConfiguration{}:   {Label: ours, Transform: keepManagedFields},
	}}
}

// keepManagedFields is the cache's transform of the objects whose
// managedFields Hookwright reads from the cache: it changes nothing.
func keepManagedFields(obj any) (any, error) { return obj, nil }

// SetupWithManager registers the reconciler, its index and its watches.
func (r *WebhookInstallReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.WebhookInstall{}, indexConversionCRD,
		func(obj client.Object) []string { return conversionCRDNames(obj.(*v1alpha1.WebhookInstall)) }); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), crdMetadata(), indexCRDOwner,
		func(obj client.Object) []string {
			if owner := obj.GetAnnotations()[v1alpha1.AnnotationOwner]; owner != "" {
				return []string{owner}
			}
			return nil
		}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.WebhookInstall{}, indexReplaces,
		func(obj client.Object) []string {
			if replaces := obj.(*v1alpha1.WebhookInstall).Spec.Replaces; replaces != "" {
				return []string{replaces}
			}
			return nil
		}); err != nil {
		return err
	}
	if r.Resources == nil {
		resources, err := resourcesFor(mgr)
		if err != nil {
			return err
		}
		r.Resources = resources
	}
	concurrency := r.Concurrency
	if concurrency < 1 {
		concurrency = DefaultConcurrency
	}
	r.dueWakes.limit = 2 * concurrency
	r.unanswered.limit = unansweredLanes(concurrency)
	return ctrl.NewControllerManagedBy(mgr).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		For(&v1alpha1.WebhookInstall{}, builder.WithPredicates(skipStatusOnlyUpdates())).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		// A CA rotation's first step drops its own writes' echoes (own_echo.go).
		Owns(&corev1.Secret{}, builder.WithPredicates(r.echoes.skip(echoSecret))).
		WatchesMetadata(&apiextensionsv1.CustomResourceDefinition{}, handler.EnqueueRequestsFromMapFunc(r.installsForCRD), builder.WithPredicates(r.echoes.skip(echoCRD))).
		// A replacement's progress (or deletion) wakes the install it replaces.
		Watches(&v1alpha1.WebhookInstall{}, handler.EnqueueRequestsFromMapFunc(replacedInstall)).
		// Admission configurations are cluster-scoped: no owner reference,
		// the owner annotation names the install (drift wakes it).
		Watches(&admissionregistrationv1.ValidatingWebhookConfiguration{}, handler.EnqueueRequestsFromMapFunc(ownerInstall)).
		Watches(&admissionregistrationv1.MutatingWebhookConfiguration{}, handler.EnqueueRequestsFromMapFunc(ownerInstall)).
		// A webhook Service's slice turning ready lets its CRDs be pointed
		// at it (endpoints.go); the slice carries the install's label.
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(labelledInstall)).
		// A rotation falling due is queued at the in-flight priority.
		WatchesRawSource(r.dueWakes.source()).
		// Wakes the installs of an update held back as a possible echo
		// that was someone else's (own_echo.go).
		WatchesRawSource(r.echoes.source()).
		Complete(r)
}

// installsForCRD maps a CRD event to the installs naming it and its owner
// (which may keep serving a CRD it no longer names: keepalive.go).
func (r *WebhookInstallReconciler) installsForCRD(ctx context.Context, crd client.Object) []reconcile.Request {
	var installs v1alpha1.WebhookInstallList
	if err := r.Client.List(ctx, &installs, client.MatchingFields{indexConversionCRD: crd.GetName()}); err != nil {
		return nil
	}
	requests := make([]reconcile.Request, 0, len(installs.Items)+1)
	for i := range installs.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&installs.Items[i])})
	}
	if ns, name, ok := strings.Cut(crd.GetAnnotations()[v1alpha1.AnnotationOwner], "/"); ok {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}})
	}
	return requests
}

// ownerInstall maps a cluster-scoped object to the install its owner
// annotation names.
func ownerInstall(_ context.Context, obj client.Object) []reconcile.Request {
	ns, name, ok := strings.Cut(obj.GetAnnotations()[v1alpha1.AnnotationOwner], "/")
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}}
}

// labelledInstall maps an object to the install its label names, in its
// namespace.
func labelledInstall(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[desired.LabelInstall]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}

// replacedInstall maps an install to the one its spec.replaces names.
func replacedInstall(_ context.Context, obj client.Object) []reconcile.Request {
	replaces := obj.(*v1alpha1.WebhookInstall).Spec.Replaces
	if replaces == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: replaces}}}
}
