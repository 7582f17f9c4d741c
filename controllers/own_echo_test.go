package controllers

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
)

// The watches drop the update event that carries a recorded write's
// resourceVersion, and nothing else; an update that arrives while the
// write is in flight is held back and, unless it was the echo, wakes the
// install once the write returns.
func TestOwnEchoes(t *testing.T) {
	secret := func(name, rv string) client.Object {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	update := func(name, from, to string) [2]client.Object {
		return [2]client.Object{secret(name, from), secret(name, to)}
	}
	install := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "widgets"}}
	writeFails := errors.New("conflict")
	for _, tc := range []struct {
		name       string
		kind       string             // the watch the events come through
		during     [][2]client.Object // updates while the write is in flight
		writeErr   error              // the write's outcome
		after      [][2]client.Object // updates once it returned version 12
		deleteIt   bool               // the object is deleted before the updates after
		wantDuring []bool             // whether each update during wakes the install at once
		wantAfter  []bool             // whether each update after does
		wantWakes  int                // installs woken when the write returned
	}{
		{name: "the echo after the response is dropped", kind: echoSecret,
			after: [][2]client.Object{update("ca", "11", "12")}, wantAfter: []bool{false}},
		{name: "the echo before the response is dropped, and wakes no one after", kind: echoSecret,
			during: [][2]client.Object{update("ca", "11", "12")}, wantDuring: []bool{false},
			after: [][2]client.Object{update("ca", "10", "12")}, wantAfter: []bool{true}},
		{name: "someone else's write delivered during the write wakes the install once it returns", kind: echoSecret,
			during: [][2]client.Object{update("ca", "10", "11")}, wantDuring: []bool{false}, wantWakes: 1,
			after: [][2]client.Object{update("ca", "11", "12")}, wantAfter: []bool{false}},
		{name: "an update held during a failed write wakes the install", kind: echoSecret, writeErr: writeFails,
			during: [][2]client.Object{update("ca", "10", "11")}, wantDuring: []bool{false}, wantWakes: 1},
		{name: "only once: a later update of the same version is a relist's", kind: echoSecret,
			after: [][2]client.Object{update("ca", "11", "12"), update("ca", "10", "12")}, wantAfter: []bool{false, true}},
		{name: "a write by someone else since wakes the install", kind: echoSecret,
			after: [][2]client.Object{update("ca", "12", "13")}, wantAfter: []bool{true}},
		{name: "a resync (same version old and new) wakes the install", kind: echoSecret,
			after: [][2]client.Object{update("ca", "12", "12")}, wantAfter: []bool{true}},
		{name: "another object of the same version wakes the install", kind: echoSecret,
			after: [][2]client.Object{update("cert", "11", "12")}, wantAfter: []bool{true}},
		{name: "the same name through another kind's watch wakes the install", kind: echoCRD,
			during: [][2]client.Object{update("ca", "10", "11")}, wantDuring: []bool{true},
			after: [][2]client.Object{update("ca", "11", "12")}, wantAfter: []bool{true}},
		{name: "a deleted object's record goes with it", kind: echoSecret, deleteIt: true,
			after: [][2]client.Object{update("ca", "11", "12")}, wantAfter: []bool{true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			woken := 0
			echoes := ownEchoes{wake: func(req reconcile.Request) {
				if req != install {
					t.Errorf("woke %v, want %v", req, install)
				}
				woken++
			}}
			p := echoes.skip(tc.kind)
			check := func(when string, updates [][2]client.Object, want []bool) {
				for i, u := range updates {
					if got := p.Update(event.UpdateEvent{ObjectOld: u[0], ObjectNew: u[1]}); got != want[i] {
						t.Errorf("update %d %s the write (%s -> %s): wakes = %v, want %v", i, when, u[0].GetResourceVersion(), u[1].GetResourceVersion(), got, want[i])
					}
				}
			}
			written := secret("ca", "11")
			done := echoes.writing(echoSecret, written, install)
			check("during", tc.during, tc.wantDuring)
			if tc.writeErr == nil {
				written.SetResourceVersion("12")
			}
			done(tc.writeErr)
			if woken != tc.wantWakes {
				t.Errorf("the write's return woke %d install(s), want %d", woken, tc.wantWakes)
			}
			if tc.deleteIt && !p.Delete(event.DeleteEvent{Object: written}) {
				t.Fatal("a delete event must wake the install")
			}
			check("after", tc.after, tc.wantAfter)
		})
	}
}

// Only the caBundle write that adds a CA for an ordered rotation of a
// verified CRD drops its echo: removing the old CA (the prune, whose echo
// wakes the pass that completes the rotation) and a first configuration
// do not.
func TestPublishesNewCA(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	newCA := func() *certs.CA {
		ca, err := certs.NewCA("test-ca", certs.ECDSAP256, time.Hour, now)
		if err != nil {
			t.Fatal(err)
		}
		return ca
	}
	old, next := newCA(), newCA()
	const crdName, service = "widgets.example.com", "svc"
	def := v1alpha1.WebhookDefinition{ConversionCRDs: []string{crdName}}
	conv := func(cas ...*certs.CA) *apiextensionsv1.CustomResourceConversion {
		var bundle []byte
		for _, ca := range cas {
			bundle = append(bundle, certs.Bundle(ca.Cert)...)
		}
		return desired.Conversion("ns", service, def, bundle)
	}
	verified := v1alpha1.WebhookInstallStatus{ConversionCRDs: []v1alpha1.ConversionCRDStatus{{Name: crdName, State: v1alpha1.ConversionVerified}}}
	inProgress := []v1alpha1.RotationRecord{{Service: service, Kind: v1alpha1.RotationCA, Reason: "Manual", Outcome: v1alpha1.RotationInProgress}}
	for _, tc := range []struct {
		name      string
		have      *apiextensionsv1.CustomResourceConversion
		want      *apiextensionsv1.CustomResourceConversion
		status    v1alpha1.WebhookInstallStatus
		rotations []v1alpha1.RotationRecord
		publishes bool
	}{
		{name: "a new CA added beside the active one", have: conv(old), want: conv(old, next), status: verified, rotations: inProgress, publishes: true},
		{name: "the old CA pruned", have: conv(old, next), want: conv(next), status: verified, rotations: inProgress},
		{name: "one CA replaced by another", have: conv(old), want: conv(next), status: verified, rotations: inProgress},
		{name: "no rotation under way", have: conv(old), want: conv(old, next), status: verified},
		{name: "not verified before", have: conv(old), want: conv(old, next), rotations: inProgress},
		{name: "a first configuration", want: conv(old), status: verified, rotations: inProgress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &installState{install: &v1alpha1.WebhookInstall{Status: tc.status}, rotations: tc.rotations}
			c := &crdState{name: crdName, webhook: desired.Webhook{Service: service}, crd: &apiextensionsv1.CustomResourceDefinition{}}
			c.crd.Spec.Conversion = tc.have
			c.bundleOnly = onlyCABundleDiffers(tc.have, tc.want)
			if got := publishesNewCA(s, c, tc.want); got != tc.publishes {
				t.Errorf("publishesNewCA = %v, want %v", got, tc.publishes)
			}
		})
	}
}

// The pass that publishes a new CA comes back when trustedFor will say the
// caBundle has been in place for rotation.SettleTime, counted from the
// apply's managedFields time as trustedFor counts it.
func TestUntilTrustSettles(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 400_000_000, time.UTC)
	r := &WebhookInstallReconciler{Clock: clocktesting.NewFakePassiveClock(now)}
	applied := func(entries ...metav1.ManagedFieldsEntry) client.Object {
		u := conversionApplyObject("widgets.example.com", nil)
		u.SetManagedFields(entries)
		return u
	}
	at := func(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }
	for _, tc := range []struct {
		name    string
		applied client.Object
		want    time.Duration
	}{
		{"the apply's second ends, then the settle time", applied(metav1.ManagedFieldsEntry{Manager: desired.FieldManager, Operation: metav1.ManagedFieldsOperationApply, Time: at(now.Add(-100 * time.Millisecond))}), 2600 * time.Millisecond},
		{"another manager's entry counts for nothing", applied(metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, Time: at(now.Add(-time.Hour))}), 3 * time.Second},
		{"no entry: a second from now, then the settle time", applied(), 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.untilTrustSettles(tc.applied); got != tc.want {
				t.Errorf("untilTrustSettles = %s, want %s", got, tc.want)
			}
		})
	}
}
