package controllers

import (
	"context"
	"slices"
	"sync"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Every write of Hookwright's to an object it watches comes back as a
// watch event that wakes the install, queued behind every other install's
// events. Mostly that is the point: the pass that points a CRD at the
// webhook leaves its verification to the pass the echo wakes. But the
// first step of a CA rotation, publishing the new CA (the CA Secret with
// it as next, each CRD's caBundle with it added), knows when its next
// step may run: once every caBundle has trusted the new CA for
// rotation.SettleTime. It schedules that pass itself (configureConversion),
// and the passes its echoes woke before only read the CRDs live, converted
// through each of them and wrote the status, to find they had to wait: two
// passes per rotation between publishing and promoting, in the rotation
// test's audit log.
//
// ownEchoes holds such a write from just before it is sent until its echo
// arrives, and the watches' predicate drops that echo: the update event
// carrying the resourceVersion the write returned. Under load the echo
// can arrive before the write's response, so an update of the object that
// arrives while the write is in flight is held back too; once the
// response tells the write's version, a held event of any other version
// (a write by someone else, delivered late) wakes the installs it was
// for, and so does any held event of a write that failed. Nothing else is
// dropped: a later write by anyone has another version, and the
// informer's periodic resync carries the same version old and new. In
// memory only: after a restart there is nothing to drop.
type ownEchoes struct {
	mu      sync.Mutex
	entries map[echoKey]*echoEntry
	wake    func(reconcile.Request) // the controller's queue (source)
}

type echoKey struct{ kind, namespace, name string }

type echoEntry struct {
	version string   // the write's resourceVersion; "" while it is in flight
	held    []string // versions of the updates dropped while it was in flight
	wakes   []reconcile.Request
}

// The kinds whose echoes may be dropped.
const (
	echoSecret = "Secret"
	echoCRD    = "CustomResourceDefinition"
)

func keyOf(kind string, obj client.Object) echoKey {
	return echoKey{kind: kind, namespace: obj.GetNamespace(), name: obj.GetName()}
}

// writing records that obj is about to be written and its echo is to wake
// nothing; wakes are the installs its watch would wake. Call the returned
// function with the write's outcome once it returns, obj holding the API
// server's answer.
func (e *ownEchoes) writing(kind string, obj client.Object, wakes ...reconcile.Request) (written func(error)) {
	key := keyOf(kind, obj)
	e.mu.Lock()
	if e.entries == nil {
		e.entries = map[echoKey]*echoEntry{}
	}
	entry := &echoEntry{wakes: wakes}
	e.entries[key] = entry
	e.mu.Unlock()
	return func(err error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.entries[key] != entry {
			return // a later write of the same object took over
		}
		version := obj.GetResourceVersion()
		foreign := slices.ContainsFunc(entry.held, func(v string) bool { return v != version })
		if err != nil || version == "" {
			delete(e.entries, key)
			foreign = len(entry.held) > 0
		} else if slices.Contains(entry.held, version) {
			delete(e.entries, key) // the echo came first
		} else {
			entry.version = version
		}
		if foreign && e.wake != nil {
			for _, req := range entry.wakes {
				e.wake(req)
			}
		}
	}
}

// isEcho: the update from old to updated is a recorded write's echo, or
// arrived while such a write was in flight (held).
func (e *ownEchoes) isEcho(kind string, old, updated client.Object) bool {
	if old == nil || updated == nil || old.GetResourceVersion() == updated.GetResourceVersion() {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	key := keyOf(kind, updated)
	entry, ok := e.entries[key]
	switch {
	case !ok:
		return false
	case entry.version == "":
		entry.held = append(entry.held, updated.GetResourceVersion())
		return true
	case entry.version == updated.GetResourceVersion():
		delete(e.entries, key)
		return true
	}
	return false
}

func (e *ownEchoes) forget(kind string, obj client.Object) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.entries, keyOf(kind, obj))
}

// skip is the predicate of a watch of kind: it drops the recorded echoes.
func (e *ownEchoes) skip(kind string) predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(ev event.UpdateEvent) bool { return !e.isEcho(kind, ev.ObjectOld, ev.ObjectNew) },
		DeleteFunc: func(ev event.DeleteEvent) bool {
			if ev.Object != nil {
				e.forget(kind, ev.Object)
			}
			return true
		},
	}
}

// source hands the controller's queue to ownEchoes, to wake the installs
// of a held event that was not the echo.
func (e *ownEchoes) source() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.wake = q.Add
		return nil
	})
}
