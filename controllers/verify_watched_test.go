package controllers

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/controllers/rotation"
)

// The pass that points a CRD at the webhook verifies it at once only when
// its own CRD watch (the cache) shows that write, and only during an
// install's first convergence.
func TestWriteWatched(t *testing.T) {
	const crdName = "widgets.example.com"
	inFlight := func(reason string) v1alpha1.RotationRecord {
		return v1alpha1.RotationRecord{Service: "svc", Kind: v1alpha1.RotationCA, Reason: reason, Outcome: v1alpha1.RotationInProgress}
	}
	for _, tc := range []struct {
		name    string
		cached  string // the resourceVersion Hookwright's cache shows
		written string // the resourceVersion of this pass's write
		status  v1alpha1.WebhookInstallStatus
		crd     func(c *crdState)
		want    bool
		reads   bool // whether the cache is consulted at all
	}{
		{name: "the watch shows the write", cached: "12", written: "12", status: v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling}, want: true, reads: true},
		{name: "a new install without status yet", cached: "12", written: "12", want: true, reads: true},
		{name: "its first certificates in flight", cached: "12", written: "12",
			status: v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling, Rotations: []v1alpha1.RotationRecord{inFlight(rotation.ReasonInitial)}}, want: true, reads: true},
		{name: "the watch has not shown it yet", cached: "11", written: "12", status: v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling}, want: false, reads: true},
		{name: "a served install rewrote its caBundle", cached: "12", written: "12", status: v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseSucceeded}},
		{name: "a failed install", cached: "12", written: "12", status: v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseFailed}},
		{name: "a CA rotation in flight", cached: "12", written: "12",
			status: v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling, Rotations: []v1alpha1.RotationRecord{inFlight("Manual")}}},
		{name: "a hand-over", cached: "12", written: "12", status: v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling}, crd: func(c *crdState) { c.handover = true }},
		{name: "a restored drift", cached: "12", written: "12", status: v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling}, crd: func(c *crdState) { c.driftManager = "kubectl" }},
		{name: "nothing written", cached: "12", status: v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := apiextensionsv1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crdName}}
			reads := 0
			cache := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(crd).Build(), interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					reads++
					if _, ok := obj.(*metav1.PartialObjectMetadata); !ok {
						t.Errorf("read a %T: the pass reads the CRD's metadata from the cache only", obj)
					}
					if err := c.Get(ctx, key, obj, opts...); err != nil {
						return err
					}
					obj.SetResourceVersion(tc.cached)
					return nil
				},
			})
			r := &WebhookInstallReconciler{Client: cache}
			c := &crdState{name: crdName, webhook: desired.Webhook{Service: "svc"}, written: true, writtenVersion: tc.written}
			if tc.crd != nil {
				tc.crd(c)
			}
			s := &installState{install: &v1alpha1.WebhookInstall{Status: tc.status}}
			if got := r.writeWatched(context.Background(), s, c); got != tc.want {
				t.Errorf("writeWatched = %v, want %v", got, tc.want)
			}
			if (reads > 0) != tc.reads {
				t.Errorf("the cache was read %d times; want reads: %v", reads, tc.reads)
			}
		})
	}
}
