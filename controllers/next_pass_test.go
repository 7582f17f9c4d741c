package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

func TestNextPass(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	r := &WebhookInstallReconciler{Clock: clocktesting.NewFakePassiveClock(now)}
	window := func(started time.Duration) []v1alpha1.ConversionCRDStatus {
		return []v1alpha1.ConversionCRDStatus{{Name: "crontabs.stable.example.com", DriftWindowStart: &metav1.Time{Time: now.Add(-started)}}}
	}
	tests := []struct {
		name       string
		retryAfter time.Duration
		rotateIn   time.Duration
		crds       []v1alpha1.ConversionCRDStatus
		written    bool // a CRD's conversion written this pass and left unverified
		published  bool // with written: the write published a new CA and dropped its echo
		want       time.Duration
	}{
		{"at the next renewal", 0, time.Hour, nil, false, false, time.Hour},
		{"sooner when a step asked", 2 * time.Second, time.Hour, nil, false, false, 2 * time.Second},
		{"when a drift window closes, so a stopped fight clears", 0, time.Hour, window(9 * time.Minute), false, false, time.Minute + time.Second},
		{"a renewal already due runs at once", 0, -time.Minute, nil, false, false, time.Millisecond},
		{"a write left unverified: the fallback to its watch event", 0, time.Hour, nil, true, false, verifyDelay},
		{"a new CA published: when its trust settles, as the pass scheduled, not the fallback", 2500 * time.Millisecond, time.Hour, nil, true, true, 2500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &installState{
				install:    &v1alpha1.WebhookInstall{Status: v1alpha1.WebhookInstallStatus{ConversionCRDs: tt.crds}},
				retryAfter: tt.retryAfter,
				services:   map[string]*serviceCerts{"svc": {rotateAt: now.Add(tt.rotateIn)}},
				crds:       []*crdState{{name: "crontabs.stable.example.com", written: tt.written, echoDropped: tt.published}},
			}
			if got := r.nextPass(s); got != tt.want {
				t.Errorf("nextPass = %s, want %s", got, tt.want)
			}
		})
	}
}
