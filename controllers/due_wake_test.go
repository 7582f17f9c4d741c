package controllers

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// An install whose rotation falls due is queued, at that instant, ahead
// of installs queued earlier with nothing under way, as a rotation under
// way is (TestInFlightInstallOvertakesQueuedOnes).
func TestDueWakeQueuesAtTheInFlightPriority(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("due-wake-test")
	defer q.ShutDown()
	d := dueWakes{limit: 16}
	if err := d.source().Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	req := func(name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: name}}
	}
	q.AddWithOpts(priorityqueue.AddOpts{}, req("idle-1"), req("idle-2"))
	now := time.Now()
	d.schedule(req("renewing").NamespacedName, now.Add(20*time.Millisecond), now)
	for q.Len() < 3 { // the wake has fired; no bound on when: the test's timeout is the bound
		time.Sleep(5 * time.Millisecond)
	}
	var order []string
	for range 3 {
		item, priority, _ := q.GetWithPriority()
		order = append(order, item.Name)
		if item.Name == "renewing" && priority != priorityInFlight {
			t.Errorf("the wake queued its install at priority %d, want %d", priority, priorityInFlight)
		}
		q.Done(item)
	}
	if want := []string{"renewing", "idle-1", "idle-2"}; !slices.Equal(order, want) {
		t.Errorf("served %v, want %v", order, want)
	}
	if len(d.timers) != 0 {
		t.Errorf("%d wakes left after firing, want none", len(d.timers))
	}
}

// An install has at most one wake: a pass that finds the same due time
// leaves it, a new one replaces it, a time already past sets none, and a
// deleted install's is dropped.
func TestDueWakeIsOnePerInstall(t *testing.T) {
	var d dueWakes
	key := types.NamespacedName{Namespace: "team-a", Name: "widgets"}
	now := time.Now()
	first, later := now.Add(time.Hour), now.Add(2*time.Hour)

	d.schedule(key, first, now)
	timer := d.timers[key].timer
	d.schedule(key, first, now.Add(time.Minute)) // an idle resync
	if d.timers[key].timer != timer {
		t.Errorf("the same due time replaced the wake; want it left as it was")
	}
	d.schedule(key, later, now)
	if len(d.timers) != 1 || !d.timers[key].at.Equal(later) || timer.Stop() {
		t.Errorf("a new due time: %d wakes, at %s, the old one still set: %v; want one, at %s, the old one stopped",
			len(d.timers), d.timers[key].at, timer.Stop(), later)
	}
	d.schedule(key, now.Add(-time.Second), now)
	if len(d.timers) != 0 {
		t.Errorf("a due time already past left %d wakes, want none", len(d.timers))
	}
	d.schedule(key, later, now)
	d.forget(key)
	if len(d.timers) != 0 {
		t.Errorf("a forgotten install left %d wakes, want none", len(d.timers))
	}
}

// When many rotations are under way (a mass expiry), a rotation falling
// due waits its turn behind them, at the idle priority of the pass its
// install asked for: the ones under way finish first. Below the limit it
// starts at once, and counts as under way until its pass says otherwise.
func TestDueWakeYieldsToManyRotationsUnderWay(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("due-wake-limit-test")
	defer q.ShutDown()
	d := dueWakes{limit: 2}
	if err := d.source().Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "team-a", Name: name} }
	d.note(key("rotating-1"), true)
	d.note(key("rotating-2"), true)

	d.fire(key("due"), time.Time{})
	if n := q.Len(); n != 0 {
		t.Fatalf("with %d rotations under way (the limit), the wake queued %d installs; want none", len(d.underWay), n)
	}
	d.note(key("rotating-2"), false) // its rotation ended
	d.fire(key("due"), time.Time{})
	if n := q.Len(); n != 1 || !d.underWay[key("due")] {
		t.Errorf("below the limit: %d installs queued, counted under way %v; want 1, true", n, d.underWay[key("due")])
	}
	d.forget(key("due"))
	if d.underWay[key("due")] {
		t.Errorf("a deleted install still counts as under way")
	}
}
