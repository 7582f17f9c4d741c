package controllers

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
)

func TestWithStoredRotations(t *testing.T) {
	at := func(sec int) metav1.Time { return metav1.NewTime(time.Date(2030, 1, 1, 0, 0, sec, 0, time.UTC)) }
	rec := func(kind v1alpha1.RotationKind, fp string, sec int, outcome v1alpha1.RotationOutcome) v1alpha1.RotationRecord {
		return v1alpha1.RotationRecord{Service: "svc", Kind: kind, NewFingerprint: fp, Started: at(sec), Outcome: outcome}
	}
	stored := func(records ...v1alpha1.RotationRecord) map[string]*storedRotations {
		st := &storedRotations{}
		for _, r := range records {
			st.records = append(st.records, desired.RotationProvenance{Record: r})
		}
		return map[string]*storedRotations{"svc": st}
	}
	full := func(fromSec int) []v1alpha1.RotationRecord {
		var h []v1alpha1.RotationRecord
		for i := range maxRotationHistory {
			h = append(h, rec(v1alpha1.RotationServing, fmt.Sprint("s", i), fromSec+i, v1alpha1.RotationSucceeded))
		}
		return h
	}
	tests := []struct {
		name    string
		history []v1alpha1.RotationRecord
		stored  map[string]*storedRotations
		want    []string // kind/fingerprint/outcome, in order
	}{
		{
			name:    "a crash lost the status write: the Secret's record comes back, in progress",
			history: []v1alpha1.RotationRecord{rec(v1alpha1.RotationServing, "s0", 1, v1alpha1.RotationSucceeded)},
			stored:  stored(rec(v1alpha1.RotationCA, "ca1", 5, v1alpha1.RotationInProgress)),
			want:    []string{"Serving/s0/Succeeded", "CA/ca1/InProgress"},
		},
		{
			name:    "recorded already: not added twice, its outcome kept",
			history: []v1alpha1.RotationRecord{rec(v1alpha1.RotationCA, "ca1", 5, v1alpha1.RotationSucceeded)},
			stored:  stored(rec(v1alpha1.RotationCA, "ca1", 5, v1alpha1.RotationInProgress)),
			want:    []string{"CA/ca1/Succeeded"},
		},
		{
			name:    "older than a full history: trimmed on purpose, stays out",
			history: full(10),
			stored:  stored(rec(v1alpha1.RotationCA, "ca0", 1, v1alpha1.RotationInProgress)),
			want:    nil, // checked by length below
		},
		{
			name:    "a record of another Service's Secret is ignored",
			history: nil,
			stored:  map[string]*storedRotations{"other": {records: []desired.RotationProvenance{{Record: rec(v1alpha1.RotationCA, "ca1", 5, v1alpha1.RotationInProgress)}}}},
			want:    nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := withStoredRotations(append([]v1alpha1.RotationRecord(nil), tt.history...), tt.stored)
			if tt.want == nil {
				if len(got) != len(tt.history) {
					t.Fatalf("history grew from %d to %d: %+v", len(tt.history), len(got), got)
				}
				return
			}
			var have []string
			for _, r := range got {
				have = append(have, fmt.Sprintf("%s/%s/%s", r.Kind, r.NewFingerprint, r.Outcome))
			}
			if fmt.Sprint(have) != fmt.Sprint(tt.want) {
				t.Errorf("history = %v, want %v", have, tt.want)
			}
		})
	}
}

// A rotation completes once a pass proves the API server trusts the pods
// through everything that calls the Service and that Hookwright can
// verify: its CRDs and its registered admission webhooks. A Service that
// only admission webhooks call completes too (its rotations stayed in
// progress for good before).
func TestRotationDoneWaitsForEveryCallerOfTheService(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ca, err := certs.NewCA("svc.team-a-ca", certs.ECDSAP256, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	rec := v1alpha1.RotationRecord{Service: "svc", Kind: v1alpha1.RotationCA, NewFingerprint: certs.Fingerprint(ca.Cert), Outcome: v1alpha1.RotationInProgress}
	crd := func(trusted, written bool) *crdState {
		return &crdState{name: "widgets.example.com", webhook: desired.Webhook{Service: "svc"}, trusted: trusted, written: written}
	}
	// unverifiableCRD: no object to convert and the schema rejects the dry
	// run's empty object before conversion, or RBAC forbids the dry run.
	unverifiableCRD := func(forbidden, written bool) *crdState {
		c := crd(false, written)
		c.unverifiable, c.forbidden = true, forbidden
		return c
	}
	type caller struct{ registered, trusted, unverifiable, written bool }
	webhook := func(c caller) *admissionState {
		return &admissionState{name: "vwidgets.example.com", webhook: desired.Webhook{Service: "svc"},
			registered: c.registered, trusted: c.trusted, unverifiable: c.unverifiable, written: c.written}
	}
	for _, tc := range []struct {
		name      string
		crds      []*crdState
		admission []caller
		done      bool
	}{
		{name: "admission webhooks only, trusted", admission: []caller{{registered: true, trusted: true}}, done: true},
		{name: "admission webhooks only, one not trusted this pass", admission: []caller{{registered: true, trusted: true}, {registered: true}}},
		{name: "admission webhooks only, written this pass", admission: []caller{{registered: true, trusted: true, written: true}}},
		{name: "admission webhooks only, none Hookwright can verify", admission: []caller{{registered: true, unverifiable: true}}, done: true},
		{name: "admission webhooks only, one trusted, one Hookwright cannot verify", admission: []caller{{registered: true, trusted: true}, {registered: true, unverifiable: true}}, done: true},
		{name: "admission webhooks only, not registered yet", admission: []caller{{trusted: true}}},
		{name: "a CRD trusted", crds: []*crdState{crd(true, false)}, done: true},
		{name: "a CRD trusted, its admission webhook not", crds: []*crdState{crd(true, false)}, admission: []caller{{registered: true}}},
		{name: "a CRD trusted and its admission webhook", crds: []*crdState{crd(true, false)}, admission: []caller{{registered: true, trusted: true}}, done: true},
		// RBAC forbids verifying the admission webhooks (the demo's
		// install): the CRD proves the same pods' trust.
		{name: "a CRD trusted, its admission webhook one Hookwright cannot verify", crds: []*crdState{crd(true, false)}, admission: []caller{{registered: true, unverifiable: true}}, done: true},
		{name: "a CRD not trusted, its admission webhook one Hookwright cannot verify", crds: []*crdState{crd(false, false)}, admission: []caller{{registered: true, unverifiable: true}}},
		{name: "a CRD written this pass", crds: []*crdState{crd(true, true)}, admission: []caller{{registered: true, trusted: true}}},
		// A CRD with no object yet whose schema rejects an empty one, or
		// whose dry run RBAC forbids: the rotation's gates proved trust
		// through the probe CRDs, which need neither.
		{name: "a CRD Hookwright cannot verify: no object, its schema rejects the dry run", crds: []*crdState{unverifiableCRD(false, false)}, done: true},
		{name: "a CRD Hookwright cannot verify: RBAC forbids the dry run", crds: []*crdState{unverifiableCRD(true, false)}, done: true},
		{name: "a CRD Hookwright cannot verify, written this pass", crds: []*crdState{unverifiableCRD(false, true)}},
		{name: "a CRD Hookwright cannot verify, another not trusted", crds: []*crdState{unverifiableCRD(false, false), crd(false, false)}},
		{name: "a CRD Hookwright cannot verify, another trusted", crds: []*crdState{unverifiableCRD(false, false), crd(true, false)}, done: true},
		{name: "a CRD Hookwright cannot verify, its admission webhook not trusted", crds: []*crdState{unverifiableCRD(false, false)}, admission: []caller{{registered: true}}},
		{name: "a CRD Hookwright cannot verify, its admission webhook trusted", crds: []*crdState{unverifiableCRD(true, false)}, admission: []caller{{registered: true, trusted: true}}, done: true},
		{name: "no caller at all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &installState{now: now, crds: tc.crds,
				services: map[string]*serviceCerts{"svc": {ca: ca, rolledOut: true}}}
			for _, c := range tc.admission {
				s.admission = append(s.admission, webhook(c))
			}
			if got := rotationDone(s, &rec); got != tc.done {
				t.Errorf("rotationDone = %v, want %v", got, tc.done)
			}
		})
	}
}

// certsLastUpdated says when a certificate was last issued even when the
// pass that issued it left the status to a later one (deferFirstStatus):
// the later pass takes the time from the record the Secret carries.
func TestLatestIssuance(t *testing.T) {
	at := func(sec int) metav1.Time { return metav1.NewTime(time.Date(2030, 1, 1, 0, 0, sec, 0, time.UTC)) }
	rec := func(kind v1alpha1.RotationKind, fp string, sec int) v1alpha1.RotationRecord {
		return v1alpha1.RotationRecord{Service: "svc", Kind: kind, NewFingerprint: fp, Started: at(sec)}
	}
	ptr := func(m metav1.Time) *metav1.Time { return &m }
	for _, tc := range []struct {
		name          string
		last          *metav1.Time
		prev, history []v1alpha1.RotationRecord
		want          *metav1.Time
	}{
		{"no status yet: the first certificates' issuance, from the Secrets", nil, nil,
			[]v1alpha1.RotationRecord{rec(v1alpha1.RotationCA, "ca1", 5), rec(v1alpha1.RotationServing, "s1", 5)}, ptr(at(5))},
		{"this pass issued: its time stays", ptr(at(9)), nil, []v1alpha1.RotationRecord{rec(v1alpha1.RotationServing, "s1", 9)}, ptr(at(9))},
		{"a record the status had already counts no more", ptr(at(3)), []v1alpha1.RotationRecord{rec(v1alpha1.RotationServing, "s1", 7)},
			[]v1alpha1.RotationRecord{rec(v1alpha1.RotationServing, "s1", 7)}, ptr(at(3))},
		{"a CA alone is no serving issuance", ptr(at(3)), nil, []v1alpha1.RotationRecord{rec(v1alpha1.RotationCA, "ca2", 8)}, ptr(at(3))},
		{"nothing issued", nil, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := latestIssuance(tc.last, tc.prev, tc.history)
			if (got == nil) != (tc.want == nil) || (got != nil && !got.Equal(tc.want)) {
				t.Errorf("latestIssuance = %v, want %v", got, tc.want)
			}
		})
	}
}
