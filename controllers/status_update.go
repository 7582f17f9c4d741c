package controllers

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// statusFor computes an install's next status from a copy of it, and says
// whether to write it.
type statusFor func(install *v1alpha1.WebhookInstall) (next v1alpha1.WebhookInstallStatus, write bool)

// updateStatus writes the status next computes from install, when next
// says to, with optimistic concurrency. It returns the copy the written
// status was computed from and the install as written (nil when nothing
// was written).
//
// A conflict means the pass started from a stale copy, usually one from
// before its own previous status write reached the cache: the install is
// read live and next computes again on it. A third conflict is returned,
// so the pass is requeued with backoff: dropped, the write would wait for
// whatever wakes the install next, and its own status writes wake nothing
// (skipStatusOnlyUpdates).
func (r *WebhookInstallReconciler) updateStatus(ctx context.Context, install *v1alpha1.WebhookInstall, next statusFor) (from, written *v1alpha1.WebhookInstall, err error) {
	for attempt := 0; ; attempt++ {
		status, write := next(install)
		if !write {
			return install, nil, nil
		}
		updated := install.DeepCopy()
		updated.Status = status
		err := r.Client.Status().Update(ctx, updated)
		if err == nil {
			r.wroteInstall(updated)
			return install, updated, nil
		}
		if !apierrors.IsConflict(err) || attempt == 2 {
			return install, nil, err
		}
		fresh := &v1alpha1.WebhookInstall{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(install), fresh); err != nil {
			return install, nil, client.IgnoreNotFound(err)
		}
		install = fresh
	}
}
