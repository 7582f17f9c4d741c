package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// An install's status write does not wake it; every other change to it
// does, and so does the informer's resync.
func TestSkipStatusOnlyUpdates(t *testing.T) {
	written := func(change func(*v1alpha1.WebhookInstall)) *v1alpha1.WebhookInstall {
		i := &v1alpha1.WebhookInstall{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "widgets", UID: "u1", ResourceVersion: "8", Generation: 2,
			Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"},
			Finalizers: []string{Finalizer},
		}}
		if change != nil {
			i.ResourceVersion = "9"
			change(i)
		}
		return i
	}
	tests := []struct {
		name   string
		change func(*v1alpha1.WebhookInstall) // nil: the same object replayed (a resync)
		wakes  bool
	}{
		{"its status written", func(i *v1alpha1.WebhookInstall) { i.Status.Phase = v1alpha1.PhaseSucceeded }, false},
		{"its status written, managed fields moved", func(i *v1alpha1.WebhookInstall) {
			i.Status.Phase = v1alpha1.PhaseSucceeded
			i.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "hookwright", Subresource: "status"}}
		}, false},
		{"the informer's resync", nil, true},
		{"a new spec", func(i *v1alpha1.WebhookInstall) { i.Generation = 3 }, true},
		{"a rotation requested", func(i *v1alpha1.WebhookInstall) { i.Annotations[v1alpha1.AnnotationRotate] = "ca: now" }, true},
		{"a label changed", func(i *v1alpha1.WebhookInstall) { i.Labels["team"] = "b" }, true},
		{"its finalizer removed", func(i *v1alpha1.WebhookInstall) { i.Finalizers = nil }, true},
		{"deleted", func(i *v1alpha1.WebhookInstall) { i.DeletionTimestamp = &metav1.Time{} }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := event.UpdateEvent{ObjectOld: written(nil), ObjectNew: written(tt.change)}
			if got := skipStatusOnlyUpdates().Update(e); got != tt.wakes {
				t.Errorf("wakes the install = %v, want %v", got, tt.wakes)
			}
		})
	}
}
