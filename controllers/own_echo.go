package controllers

import (
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
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
// ownEchoes records such a write's resourceVersion, and the watches'
// predicate drops the update event that carries exactly that version.
// Nothing else is dropped: a write by anyone else since has another
// version and wakes the install as ever, and so does the informer's
// periodic resync (the same version old and new). An echo that arrives
// before the write is recorded wakes a pass, as it did before. In memory
// only: after a restart there is nothing to drop.
type ownEchoes struct {
	mu       sync.Mutex
	versions map[echoKey]string
}

type echoKey struct{ kind, namespace, name string }

// The kinds whose echoes may be dropped.
const (
	echoSecret = "Secret"
	echoCRD    = "CustomResourceDefinition"
)

func keyOf(kind string, obj client.Object) echoKey {
	return echoKey{kind: kind, namespace: obj.GetNamespace(), name: obj.GetName()}
}

// expect records obj, as Hookwright's write just returned it, as a write
// whose watch event is to wake nothing.
func (e *ownEchoes) expect(kind string, obj client.Object) {
	if obj.GetResourceVersion() == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.versions == nil {
		e.versions = map[echoKey]string{}
	}
	e.versions[keyOf(kind, obj)] = obj.GetResourceVersion()
}

// isEcho: the update from old to updated is the write expect recorded.
func (e *ownEchoes) isEcho(kind string, old, updated client.Object) bool {
	if old == nil || updated == nil || old.GetResourceVersion() == updated.GetResourceVersion() {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	key := keyOf(kind, updated)
	if v, ok := e.versions[key]; !ok || v != updated.GetResourceVersion() {
		return false
	}
	delete(e.versions, key)
	return true
}

func (e *ownEchoes) forget(kind string, obj client.Object) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.versions, keyOf(kind, obj))
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
