package controllers

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/internal/testfixtures"
)

// The certificates step reads the webhook Deployment before the workloads
// step does. When its rollout finishes between those two reads, the
// workloads step's fresher read is what the pass goes by: the first
// issuance completes in the same pass that points the CRD at the webhook
// and verifies it (bench P3 found an install whose completion waited for
// the next restart: one status write and two Events on an idle resync).
func TestWorkloadsStepSeesTheRolloutFinish(t *testing.T) {
	const ns, deployment = "team-a", "widget-webhook"
	now := time.Now()
	ca, err := certs.NewCA("widget-ca", certs.ECDSAP256, 24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	issue := func() []byte {
		pair, err := ca.IssueServing([]string{"widget.team-a.svc"}, certs.ECDSAP256, time.Hour, now)
		if err != nil {
			t.Fatal(err)
		}
		return pair.CertPEM
	}
	current, older := issue(), issue()
	fingerprint := func(pem []byte) string {
		cert, err := certs.ParseCert(pem)
		if err != nil {
			t.Fatal(err)
		}
		return certs.Fingerprint(cert)
	}
	rolled := func(dep *appsv1.Deployment) {
		dep.Generation = 1
		dep.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}}
	}
	for _, tc := range []struct {
		name     string
		template string // the serving fingerprint on the live pod template
		status   func(dep *appsv1.Deployment)
		want     bool
	}{
		{name: "every replica runs the current certificate", template: fingerprint(current), status: rolled, want: true},
		{name: "an older replica still runs", template: fingerprint(current), status: func(dep *appsv1.Deployment) {
			rolled(dep)
			dep.Status.Replicas = 2 // one pod of the previous template left
		}},
		{name: "the rollout's new spec not observed yet", template: fingerprint(current), status: func(dep *appsv1.Deployment) {
			rolled(dep)
			dep.Generation = 2
		}},
		{name: "the pods run an older certificate", template: fingerprint(older), status: rolled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			install := testfixtures.WidgetInstall(ns, "widgets", deployment, "widgets.example.com")
			install.UID = "uid-1"
			s := &installState{install: install, generation: 1, now: now, webhooks: desired.Webhooks(install), services: map[string]*serviceCerts{}}
			if len(s.webhooks) != 1 {
				t.Fatalf("the fixture declares %d webhook Services, want 1", len(s.webhooks))
			}
			service := s.webhooks[0].Service
			// What the certificates step saw: not rolled out yet.
			s.services[service] = &serviceCerts{secretName: desired.ServingSecretName(service), ca: ca, servingPEM: current}

			live := desired.Deployment(install, install.Spec.Install.Spec.Deployments[0],
				&desired.Serving{SecretName: desired.ServingSecretName(service), Fingerprint: tc.template})
			tc.status(live)
			svc, err := desired.Service(install, &install.Spec.Install.Spec.Deployments[0].Spec, s.webhooks[0])
			if err != nil {
				t.Fatal(err)
			}
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "widget-webhook"}}
			scheme := runtime.NewScheme()
			if err := corev1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			if err := appsv1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(live, desired.WithSpecHash(svc), sa).Build(), interceptor.Funcs{
				// The apply of a new pod template (the last case) or of a
				// Service selector: accepted, nothing to store for this test.
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					return nil
				},
			})
			r := &WebhookInstallReconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(10)}
			if err := r.ensureWorkloads(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if got := s.services[service].rolledOut; got != tc.want {
				t.Errorf("rolledOut = %v after the workloads step, want %v", got, tc.want)
			}
			if rolling := len(s.rollingOut) > 0; rolling == tc.want {
				t.Errorf("rollingOut = %v, yet rolledOut is %v: the two must agree", s.rollingOut, tc.want)
			}
		})
	}
}
