package desired

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

func TestRotationProvenance(t *testing.T) {
	record := v1alpha1.RotationRecord{
		Service: "crontab-webhook-service", Kind: v1alpha1.RotationCA, Reason: "Manual", Message: "key leak drill",
		Started: metav1.NewTime(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)), OldFingerprint: "aa", NewFingerprint: "bb",
		Outcome: v1alpha1.RotationInProgress,
	}
	tests := []struct {
		name   string
		value  string
		wantOK bool
		want   RotationProvenance
	}{
		{"written by EncodeRotation", EncodeRotation(RotationProvenance{Record: record, Request: "ca: key leak drill"}), true, RotationProvenance{Record: record, Request: "ca: key leak drill"}},
		{"missing (a Secret from before the annotation)", "", false, RotationProvenance{}},
		{"edited into something unreadable", "{not json", false, RotationProvenance{}},
		{"a record without the certificate it issued", `{"record":{"service":"s"}}`, false, RotationProvenance{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := DecodeRotation(tt.value)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if got.Request != tt.want.Request || got.Record.NewFingerprint != tt.want.Record.NewFingerprint ||
				!got.Record.Started.Equal(&tt.want.Record.Started) || got.Record.Message != tt.want.Record.Message {
				t.Errorf("decoded %+v, want %+v", got, tt.want)
			}
		})
	}
}
