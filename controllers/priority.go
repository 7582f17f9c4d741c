package controllers

import (
	"k8s.io/utils/ptr"

	"github.com/hookwright/hookwright/controllers/rotation"
)

// Work-queue priorities (controller-runtime's priority queue, its default
// queue). An install with a certificate rotation under way is reconciled
// before installs with none: its next pass carries on what an earlier
// pass started.
//
// Without it, a burst of rotations (1,000 CAs due in the same minute)
// moves through the queue breadth-first: every event of an install's own
// writes puts it behind all the others, so every install takes step one,
// then every install step two, and none finishes until all do; in the
// meantime each trusts two CAs. With it, the rotations under way finish
// first, one install after another (make bench's rotation storm of 300,
// same phases, back to back: per install p50 119 s -> 57 s, the last
// 125 s -> 108 s).
//
// The pass that starts a rotation falling due (a serving renewal, a CA
// rotation) gets the same priority, from a timer of its own (due_wake.go):
// queued below the rotations under way, it waited for all of them (make
// bench's P2, run alone: of 10 serving renewals due within a second, the
// last two started 0.5 s and 1.06 s late, behind the first eight's
// rollout passes). Among equals the queue serves in turn, so starts and
// continuations alternate. Only while few rotations are under way (twice
// the reconcile workers): when many CAs fall due together, the ones under
// way still finish first.
//
// An install's first convergence gets no priority. make bench's P4 showed
// why: served as soon as each event of its Deployment's rollout came, 300
// new installs took 43% more passes and 29% more status writes (each step
// of the rollout told) than served in turn, when the rollout is over.
const (
	priorityIdle     = 0
	priorityInFlight = 1
)

// passPriority is the priority of the install's next pass. It holds for
// the events that wake the install too: the queue keeps the higher of an
// item's priorities.
func passPriority(s *installState) *int {
	if rotationInFlight(s) {
		return ptr.To(priorityInFlight)
	}
	return ptr.To(priorityIdle)
}

// rotationInFlight: a certificate rotation of the install is under way,
// other than its first certificates.
func rotationInFlight(s *installState) bool {
	for _, rec := range inProgressRotations(s) {
		if rec.Reason != rotation.ReasonInitial {
			return true
		}
	}
	return false
}
