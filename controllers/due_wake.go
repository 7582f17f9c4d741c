package controllers

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// dueWakes queue an install, at the in-flight priority (priority.go), at
// the instant one of its certificate rotations falls due (a serving
// renewal, a CA rotation), so that the pass starting it is not queued
// behind rotations already under way.
//
// Only while fewer than limit installs have a rotation under way: when
// many fall due at once (CAs all issued the same day), the ones under way
// still finish first, one install after another, rather than every
// install starting before any continues (priority.go). limit is twice the
// reconcile workers, so that a worker pool's worth of rotations falling
// due together all start at once.
//
// A pass's RequeueAfter cannot carry that priority: the queue keeps an
// item's priority from the moment it is added, so a requeue at the
// in-flight priority for a renewal weeks away would serve every event of
// the install in between before idle installs, and a storm of manual
// rotations (events, not timers) would no longer finish the ones under way
// first. The RequeueAfter stays, at the idle priority: it covers a wake
// that was lost (no priority queue, a timer not set after a restart until
// the install's first pass).
type dueWakes struct {
	mu     sync.Mutex
	queue  priorityqueue.PriorityQueue[reconcile.Request] // set when the controller starts
	timers map[types.NamespacedName]dueTimer
	// underWay: the installs whose last pass left a rotation under way,
	// and those a wake has just queued to start one.
	underWay map[types.NamespacedName]bool
	limit    int
}

type dueTimer struct {
	at    time.Time
	timer *time.Timer
}

// source hands the controller's queue to the wakes; it watches nothing.
// With a queue that has no priorities, the wakes do nothing.
func (d *dueWakes) source() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
		if ok {
			d.mu.Lock()
			d.queue = pq
			d.mu.Unlock()
		}
		return nil
	})
}

// schedule sets key's wake at at, the earliest time a rotation of the
// install falls due, replacing the one set before; a time not after now
// sets none (the pass that saw it due has acted on it or asked for a pass
// soon). The same time again changes nothing, so an idle resync costs no
// timer.
func (d *dueWakes) schedule(key types.NamespacedName, at, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	prev, set := d.timers[key]
	if set && prev.at.Equal(at) {
		return
	}
	if set {
		prev.timer.Stop()
		delete(d.timers, key)
	}
	if at.IsZero() || !at.After(now) {
		return
	}
	if d.timers == nil {
		d.timers = map[types.NamespacedName]dueTimer{}
	}
	d.timers[key] = dueTimer{at: at, timer: time.AfterFunc(at.Sub(now), func() { d.fire(key, at) })}
}

// forget drops key's wake: the install is gone.
func (d *dueWakes) forget(key types.NamespacedName) {
	d.schedule(key, time.Time{}, time.Time{})
	d.note(key, false)
}

// note records whether the install's pass left a rotation under way.
func (d *dueWakes) note(key types.NamespacedName, underWay bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !underWay {
		delete(d.underWay, key)
		return
	}
	if d.underWay == nil {
		d.underWay = map[types.NamespacedName]bool{}
	}
	d.underWay[key] = true
}

func (d *dueWakes) fire(key types.NamespacedName, at time.Time) {
	d.mu.Lock()
	if t, ok := d.timers[key]; ok && t.at.Equal(at) {
		delete(d.timers, key)
	}
	q := d.queue
	boost := q != nil && len(d.underWay) < d.limit
	if boost {
		if d.underWay == nil {
			d.underWay = map[types.NamespacedName]bool{}
		}
		d.underWay[key] = true // until its pass says otherwise
	}
	d.mu.Unlock()
	if boost {
		q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(priorityInFlight)}, reconcile.Request{NamespacedName: key})
	}
}

// wakeWhenDue records whether the pass left a rotation under way, and sets
// the install's wake for its next rotation when this pass's certificate
// step found one ahead (a pass that stopped earlier leaves the wake it
// had).
func (r *WebhookInstallReconciler) wakeWhenDue(s *installState) {
	key := types.NamespacedName{Namespace: s.install.Namespace, Name: s.install.Name}
	r.dueWakes.note(key, rotationInFlight(s))
	if at := earliestRotation(s); !at.IsZero() {
		r.dueWakes.schedule(key, at, r.Clock.Now())
	}
}

// earliestRotation is when the first rotation of the install's Services
// falls due, as this pass's certificate step found them (zero when the
// pass did not reach it).
func earliestRotation(s *installState) time.Time {
	var at time.Time
	for _, svc := range s.services {
		if !svc.rotateAt.IsZero() && (at.IsZero() || svc.rotateAt.Before(at)) {
			at = svc.rotateAt
		}
	}
	return at
}
