package controllers

import (
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/rotation"
)

func TestPassPriority(t *testing.T) {
	inProgress := v1alpha1.RotationRecord{Service: "svc", Kind: v1alpha1.RotationCA, Outcome: v1alpha1.RotationInProgress}
	done := v1alpha1.RotationRecord{Service: "svc", Kind: v1alpha1.RotationCA, Outcome: v1alpha1.RotationSucceeded}
	for _, tc := range []struct {
		name    string
		status  v1alpha1.WebhookInstallStatus
		started []v1alpha1.RotationRecord
		want    int
	}{
		{"a served install with nothing under way", v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseSucceeded, Rotations: []v1alpha1.RotationRecord{done}}, nil, priorityIdle},
		{"a failed install", v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseFailed}, nil, priorityIdle},
		{"an install converging, its first certificates in flight", v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling,
			Rotations: []v1alpha1.RotationRecord{{Service: "svc", Kind: v1alpha1.RotationCA, Reason: rotation.ReasonInitial, Outcome: v1alpha1.RotationInProgress}}}, nil, priorityIdle},
		{"a rotation the status says is under way", v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseSucceeded, Rotations: []v1alpha1.RotationRecord{done, inProgress}}, nil, priorityInFlight},
		{"a rotation this pass started", v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseSucceeded}, []v1alpha1.RotationRecord{inProgress}, priorityInFlight},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &installState{install: &v1alpha1.WebhookInstall{Status: tc.status}, rotations: tc.started}
			if got := passPriority(s); got == nil || *got != tc.want {
				t.Errorf("passPriority = %v, want %d", got, tc.want)
			}
		})
	}
}

// What passPriority relies on in controller-runtime's priority queue: the
// event an install's own write causes (priority 0, as every watch handler
// adds) keeps the priority its last pass asked for, so an install under
// way is served before installs queued earlier with nothing under way.
func TestInFlightInstallOvertakesQueuedOnes(t *testing.T) {
	q := priorityqueue.New[string]("priority-test")
	defer q.ShutDown()
	q.AddWithOpts(priorityqueue.AddOpts{}, "queued-1", "queued-2") // woken earlier, nothing under way
	underWay := &installState{install: &v1alpha1.WebhookInstall{Status: v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseSucceeded}},
		rotations: []v1alpha1.RotationRecord{{Service: "svc", Kind: v1alpha1.RotationCA, Outcome: v1alpha1.RotationInProgress}}}
	// The controller re-adds a reconciled request with its result.
	q.AddWithOpts(priorityqueue.AddOpts{After: time.Hour, Priority: passPriority(underWay)}, "under-way")
	q.AddWithOpts(priorityqueue.AddOpts{}, "under-way") // the watch event of its own write
	// Len flushes the queue's add buffer, so all three are ready before
	// the first Get.
	if n := q.Len(); n != 3 {
		t.Fatalf("%d items ready, want 3", n)
	}
	var order []string
	for range 3 {
		item, _, _ := q.GetWithPriority()
		order = append(order, item)
		q.Done(item)
	}
	if want := []string{"under-way", "queued-1", "queued-2"}; !slices.Equal(order, want) {
		t.Errorf("served %v, want %v", order, want)
	}
}
