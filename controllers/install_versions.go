package controllers

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// installVersions remembers, per install, the resourceVersion of the
// newest copy this manager has seen of it: the one its own last write
// returned, or its last live read.
//
// A pass must not start from a copy older than the manager's own last
// write. The cache can hold one: a pass that follows its predecessor at
// once (an event queued while the predecessor ran) may start before the
// watch has delivered the predecessor's status write. Such a pass decides
// from the old status, and when what it computes equals that old status
// it writes nothing, leaving the predecessor's now wrong status in place;
// and the predecessor's write wakes no pass to set it right
// (skipStatusOnlyUpdates). When it does write, its write conflicts and is
// retried on the live object (updateStatus); that conflict, once dropped,
// left a replaced install "keeps serving CRDs []" after its replacement
// had succeeded.
//
// In memory only: after a restart the cache is all there is, and it is
// fresh (filled before the first pass).
type installVersions struct {
	mu       sync.Mutex
	versions map[types.NamespacedName]string
}

// saw records rv as the newest copy of the install named key.
func (v *installVersions) saw(key types.NamespacedName, rv string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.versions == nil {
		v.versions = map[types.NamespacedName]string{}
	}
	v.versions[key] = rv
}

// forget drops the install named key (deleted).
func (v *installVersions) forget(key types.NamespacedName) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.versions, key)
}

// newest returns the resourceVersion recorded for key, "" for none.
func (v *installVersions) newest(key types.NamespacedName) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.versions[key]
}

// currentInstall reads the install named key from the cache, or live
// when the cached copy is not the newest this manager has seen: then it
// may be older than a write of this manager's (or newer, from someone
// else's write: the live read settles which, once). live says which.
func (r *WebhookInstallReconciler) currentInstall(ctx context.Context, key types.NamespacedName) (install *v1alpha1.WebhookInstall, live bool, err error) {
	install = &v1alpha1.WebhookInstall{}
	if err := r.Client.Get(ctx, key, install); err != nil {
		return nil, false, err
	}
	newest := r.installVersions.newest(key)
	if newest == "" || newest == install.ResourceVersion {
		return install, false, nil
	}
	fresh := &v1alpha1.WebhookInstall{}
	if err := r.APIReader.Get(ctx, key, fresh); err != nil {
		return nil, false, err
	}
	r.installVersions.saw(key, fresh.ResourceVersion)
	return fresh, true, nil
}

// wroteInstall records the copy a write of the install returned.
func (r *WebhookInstallReconciler) wroteInstall(install *v1alpha1.WebhookInstall) {
	r.installVersions.saw(client.ObjectKeyFromObject(install), install.ResourceVersion)
}
