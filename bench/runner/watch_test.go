package runner

import (
	"testing"

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
