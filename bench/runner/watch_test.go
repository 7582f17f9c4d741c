package runner

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

func TestCAPromotedForFollowsTheMarkedRotationsCA(t *testing.T) {
	ca := func(message, fingerprint string) v1alpha1.RotationRecord {
		return v1alpha1.RotationRecord{Kind: v1alpha1.RotationCA, Message: message, NewFingerprint: fingerprint}
	}
	moved := func(toCA string) v1alpha1.RotationRecord {
		return v1alpha1.RotationRecord{Kind: v1alpha1.RotationServing, Reason: "CARotation", Message: "serving certificate moved to the new CA " + toCA}
	}
	for _, tc := range []struct {
		name      string
		rotations []v1alpha1.RotationRecord
		want      bool
	}{
		{"moved to the marked rotation's CA", []v1alpha1.RotationRecord{ca("storm 1", "ca-2"), moved("ca-2")}, true},
		{"not moved yet", []v1alpha1.RotationRecord{ca("storm 1", "ca-2")}, false},
		{"moved by an earlier rotation", []v1alpha1.RotationRecord{ca("earlier", "ca-1"), moved("ca-1"), ca("storm 1", "ca-2")}, false},
		{"a CA whose fingerprint extends the marked one", []v1alpha1.RotationRecord{ca("storm 1", "ca-2"), moved("ca-22")}, false},
		{"no marked rotation", []v1alpha1.RotationRecord{ca("earlier", "ca-1"), moved("ca-1")}, false},
	} {
		whi := &v1alpha1.WebhookInstall{}
		whi.Status.Rotations = tc.rotations
		if got := caPromotedFor(whi, "storm 1"); got != tc.want {
			t.Errorf("%s: caPromotedFor = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// An install is counted unfinished only when the status that first shows
// it verified still has its first certificates in progress; a later
// status cannot change the count either way.
func TestObserverCountsInstallsVerifiedBeforeTheirFirstCertificatesComplete(t *testing.T) {
	initial := func(outcome v1alpha1.RotationOutcome) v1alpha1.RotationRecord {
		return v1alpha1.RotationRecord{Kind: v1alpha1.RotationServing, Reason: "Initial", Outcome: outcome}
	}
	status := func(verified bool, rotations ...v1alpha1.RotationRecord) *v1alpha1.WebhookInstall {
		whi := &v1alpha1.WebhookInstall{}
		whi.Namespace, whi.Name, whi.Generation = "ns", "widgets", 1
		whi.Status.Rotations = rotations
		if verified {
			whi.Status.Conditions = []metav1.Condition{{Type: v1alpha1.TypeConversionVerified, Status: metav1.ConditionTrue, ObservedGeneration: 1}}
		}
		return whi
	}
	manual := v1alpha1.RotationRecord{Kind: v1alpha1.RotationCA, Reason: "Manual", Outcome: v1alpha1.RotationInProgress}
	for _, tc := range []struct {
		name     string
		statuses []*v1alpha1.WebhookInstall
		want     int
	}{
		{"verified with its first certificates completed", []*v1alpha1.WebhookInstall{status(true, initial(v1alpha1.RotationSucceeded))}, 0},
		{"verified with its first certificates in progress", []*v1alpha1.WebhookInstall{status(true, initial(v1alpha1.RotationInProgress))}, 1},
		{"in progress before verification, completed with it", []*v1alpha1.WebhookInstall{
			status(false, initial(v1alpha1.RotationInProgress)), status(true, initial(v1alpha1.RotationSucceeded))}, 0},
		{"completed one status after verification", []*v1alpha1.WebhookInstall{
			status(true, initial(v1alpha1.RotationInProgress)), status(true, initial(v1alpha1.RotationSucceeded))}, 1},
		{"a later rotation in progress is no first issuance", []*v1alpha1.WebhookInstall{status(true, initial(v1alpha1.RotationSucceeded), manual)}, 0},
	} {
		o := &observer{verified: map[types.NamespacedName]time.Time{}, created: map[types.NamespacedName]time.Time{},
			phases: map[types.NamespacedName]v1alpha1.InstallPhase{}, unfinished: map[types.NamespacedName]bool{}}
		for _, whi := range tc.statuses {
			o.install(whi)
		}
		if got := o.countUnfinished([]types.NamespacedName{{Namespace: "ns", Name: "widgets"}}); got != tc.want {
			t.Errorf("%s: countUnfinished = %d, want %d", tc.name, got, tc.want)
		}
	}
}
