package controllers

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// TestReplacementStatusSurvivesAStaleCopy: a pass that starts before the
// cache shows the install's own previous status write acts on a stale
// copy, and its status write conflicts. That previous write's event is
// status-only, so it wakes nothing (skipStatusOnlyUpdates), and nothing
// else may: a replaced install whose Deployment its replacement adopted
// has no more workload events to come. A dropped write then leaves the
// install Replacing for good (the controllers suite saw one stay
// "keeps serving CRDs []" after its replacement had succeeded). The write
// must land.
func TestReplacementStatusSurvivesAStaleCopy(t *testing.T) {
	stored := &v1alpha1.WebhookInstall{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "crontab-v1", Generation: 2},
		Status: v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseReplacing, Reason: v1alpha1.ReasonReplacing, Message: "keeps serving CRDs []"}}
	c := fakeInstallClient(t, stored)
	stale := &v1alpha1.WebhookInstall{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(stored), stale); err != nil {
		t.Fatal(err)
	}
	stale.ResourceVersion = "1" // read before the previous pass's status write
	stale.Generation = 1        // and before a spec change, which this pass did not see
	stale.Status = v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseSucceeded}

	r := &WebhookInstallReconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(10)}
	if err := r.writeReplacementStatus(context.Background(), stale, v1alpha1.PhaseReplaced, v1alpha1.ReasonReplaced, "replaced by WebhookInstall team-a/crontab-v2"); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.WebhookInstall{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(stored), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1alpha1.PhaseReplaced || got.Status.Message != "replaced by WebhookInstall team-a/crontab-v2" {
		t.Errorf("stored status %s %q after a write from a stale copy; want Replaced: a dropped write is never retried", got.Status.Phase, got.Status.Message)
	}
	if ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.TypeReady); ready == nil || ready.ObservedGeneration != 1 {
		t.Errorf("Ready condition %+v; want observedGeneration 1, the spec the pass decided on, not the one its retry read", ready)
	}
}
