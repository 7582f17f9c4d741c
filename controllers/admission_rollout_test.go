package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/controllers/rotation"
)

// While a rotation's serving certificate rolls out, a pass asks the API
// server nothing about an admission webhook verified for this spec: it
// stays Verified, with its last message, and proves no trust (the
// rotation completes only on a pass after the rollout). Any other pass
// verifies as before.
func TestAdmissionVerificationWaitsOutARotationsRollout(t *testing.T) {
	const verifiedMessage = "the API server called the webhook on a dry-run create of configmaps in namespace team-a, and admitted it"
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ca, err := certs.NewCA("svc.team-a-ca", certs.ECDSAP256, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		rotating   bool
		rolledOut  bool
		generation int64 // the install's; its status observed 1
		wantAsked  bool  // the pass made requests to verify the webhook
	}{
		{name: "a rotation under way, its serving certificate rolling out", rotating: true},
		{name: "a rotation under way, rolled out", rotating: true, rolledOut: true, generation: 1, wantAsked: true},
		{name: "a rotation under way, rolling out, the spec changed since it was verified", rotating: true, generation: 2, wantAsked: true},
		{name: "no rotation, rolling out, the CA changed since it was verified", generation: 1, wantAsked: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			generation := max(tc.generation, 1)
			asked := 0
			scheme := runtime.NewScheme()
			if err := corev1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			mapper := meta.NewDefaultRESTMapper(nil)
			mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
			c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).Build(), interceptor.Funcs{
				Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
					asked++
					return errors.New("refused by the test")
				},
				Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
					asked++
					return errors.New("refused by the test")
				},
			})
			r := &WebhookInstallReconciler{Client: c, APIReader: c, Clock: clock.RealClock{}}
			install := &v1alpha1.WebhookInstall{}
			install.Namespace, install.Name, install.Generation = "team-a", "widgets", generation
			install.Status.ObservedGeneration = 1
			install.Status.Services = []v1alpha1.ServiceStatus{{Name: "svc", CAFingerprint: certs.Fingerprint(ca.Cert)}}
			if tc.rotating {
				install.Status.Rotations = []v1alpha1.RotationRecord{{Service: "svc", Kind: v1alpha1.RotationCA, Reason: rotation.ReasonManual, Outcome: v1alpha1.RotationInProgress}}
			} else {
				install.Status.Services[0].CAFingerprint = "a CA the status named before" // admissionStillVerified does not hold
			}
			install.Status.AdmissionWebhooks = []v1alpha1.AdmissionWebhookStatus{{Name: "vwidgets.example.com", Type: string(operatorsv1alpha1.ValidatingAdmissionWebhook),
				State: v1alpha1.AdmissionVerified, Message: verifiedMessage}}
			a := &admissionState{name: "vwidgets.example.com", kind: operatorsv1alpha1.ValidatingAdmissionWebhook, webhook: desired.Webhook{Service: "svc"},
				registered: true, state: v1alpha1.AdmissionRegistered,
				definition: v1alpha1.WebhookDefinition{SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), Rules: []v1alpha1.AdmissionRule{{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}
			s := &installState{now: now, install: install, admission: []*admissionState{a},
				services: map[string]*serviceCerts{"svc": {ca: ca, rolledOut: tc.rolledOut}}}
			if err := r.verifyAdmission(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if got := asked > 0; got != tc.wantAsked {
				t.Fatalf("%d request(s) to verify the webhook, want requests: %v", asked, tc.wantAsked)
			}
			if tc.wantAsked {
				return
			}
			if a.state != v1alpha1.AdmissionVerified || a.message != verifiedMessage || a.trusted {
				t.Errorf("state %q, message %q, trusted %v; want Verified with the last message, trust unproven", a.state, a.message, a.trusted)
			}
		})
	}
}
