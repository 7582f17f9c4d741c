package controllers

import (
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// skipStatusOnlyUpdates keeps an install's status write from waking the
// install. A pass writes status last, once, after every step has asked
// for what it needs next (a watch on the object it waits for, or
// retryWithin), so the pass that write woke found nothing to do and
// read the CRDs and the ServiceAccount live for nothing (`make bench`
// P1's audit log showed one such pass after every status write of an
// install converging alone).
//
// Everything else still wakes the install: a new spec (generation),
// labels, annotations (a rotation or migration request), finalizers,
// deletion, and the informer's periodic resync (the same object twice).
// A status written by someone else is set right by the next pass that
// anything else brings.
func skipStatusOnlyUpdates() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld == nil || e.ObjectNew == nil || !onlyStatusChanged(e.ObjectOld, e.ObjectNew)
	}}
}

// onlyStatusChanged: the object was written (a new resourceVersion) and
// its metadata is the same but for what every write changes. The status
// subresource cannot change the spec without a new generation, which is
// metadata.
func onlyStatusChanged(old, updated metav1.Object) bool {
	if old.GetResourceVersion() == updated.GetResourceVersion() {
		return false // a resync replays the object: not a write
	}
	return equality.Semantic.DeepEqual(comparableMeta(old), comparableMeta(updated))
}

// comparableMeta is an object's metadata without the fields a write of
// anything (status included) changes.
func comparableMeta(o metav1.Object) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: o.GetName(), Namespace: o.GetNamespace(), UID: o.GetUID(),
		Generation: o.GetGeneration(), Labels: o.GetLabels(), Annotations: o.GetAnnotations(),
		Finalizers: o.GetFinalizers(), OwnerReferences: o.GetOwnerReferences(),
		DeletionTimestamp: o.GetDeletionTimestamp(),
	}
}
