package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

// apply writes obj with server-side apply under Hookwright's field manager.
// Callers apply only what differs, so a resync with nothing to do writes
// nothing.
func (r *WebhookInstallReconciler) apply(ctx context.Context, obj client.Object) error {
	//nolint:staticcheck // typed objects built by pure builders; Apply configurations would duplicate them.
	if err := r.Client.Patch(ctx, obj, client.Apply, client.FieldOwner(desired.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %T %s: %w", obj, klog.KObj(obj), err)
	}
	return nil
}

// refuseForeign is called when the label-selected cache has no object of
// that name: it checks live that no object Hookwright does not manage has
// the name, so a user's object is never taken over or overwritten.
func (r *WebhookInstallReconciler) refuseForeign(ctx context.Context, obj client.Object, namespace, name string) error {
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking %s/%s: %w", namespace, name, err)
	}
	if obj.GetLabels()[desired.LabelManagedBy] == desired.ManagedByValue {
		return nil // ours, the cache has not caught up yet
	}
	return fmt.Errorf("%T %s/%s exists and is not managed by Hookwright: rename or delete it", obj, namespace, name)
}

// checkBelongs stops the install when an object it needs by name belongs
// to another WebhookInstall of the namespace. Two installs never share a
// Deployment, Service or Secret, except that an install adopts the objects
// of the install it replaces (an upgrade usually keeps the deployment
// name): its next write relabels them and moves their owner reference.
func checkBelongs(s *installState, kind string, obj client.Object) error {
	owner := obj.GetLabels()[desired.LabelInstall]
	if owner == "" || owner == s.install.Name || owner == s.install.Spec.Replaces {
		return nil
	}
	err := fmt.Errorf("%s %s/%s belongs to WebhookInstall %s/%s; two installs cannot share it: rename the deployment in this install, or set spec.replaces: %s if this install upgrades that one",
		kind, obj.GetNamespace(), obj.GetName(), obj.GetNamespace(), owner, owner)
	s.stop(v1alpha1.PhaseFailed, v1alpha1.ReasonNameTaken, err.Error())
	return err
}

// adopted reports that obj belongs to the install this one replaces.
func adopted(s *installState, obj client.Object) bool {
	owner := obj.GetLabels()[desired.LabelInstall]
	return s.install.Spec.Replaces != "" && owner == s.install.Spec.Replaces
}
