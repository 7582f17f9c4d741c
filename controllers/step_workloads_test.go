package controllers

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
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

// The ServiceAccount is not cached, so checking it costs a live read. A
// pass that makes the Deployment creates the account without one (it is
// usually missing too); a later pass reads it only while a pod of the
// Deployment may still have to be made under it; once a pod of the applied template exists for every
// replica (ready or not: the API server admitted it, so the account
// existed), the read is skipped: an idle resync reads one object less,
// and so does every pass while the pods get ready. A
// deleted account is made again as soon as the Deployment reports a pod
// the ReplicaSet could not recreate, whose status update wakes the
// install.
func TestServiceAccountReadOnlyWhilePodsMayBeMade(t *testing.T) {
	const ns, deployment, account = "team-a", "widget-webhook", "widget-webhook"
	now := time.Now()
	ca, err := certs.NewCA("widget-ca", certs.ECDSAP256, 24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.IssueServing([]string{"widget.team-a.svc"}, certs.ECDSAP256, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := certs.ParseCert(pair.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		deployment func(dep *appsv1.Deployment) *appsv1.Deployment // the cached Deployment; nil: none yet
		accountSet bool                                            // the ServiceAccount exists
		wantReads  int
		wantCreate bool
	}{
		{name: "no Deployment yet: the account is made first, without a read", wantCreate: true},
		{name: "the applied Deployment runs every replica: no read", accountSet: true,
			deployment: func(dep *appsv1.Deployment) *appsv1.Deployment { rolled(dep); return dep }},
		{name: "every pod made, none ready yet: no read", accountSet: true,
			deployment: func(dep *appsv1.Deployment) *appsv1.Deployment {
				rolled(dep)
				dep.Status.AvailableReplicas, dep.Status.ReadyReplicas = 0, 0
				dep.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable"}}
				return dep
			}},
		{name: "a pod of the template not made yet: the account is read", accountSet: true, wantReads: 1,
			deployment: func(dep *appsv1.Deployment) *appsv1.Deployment {
				rolled(dep)
				dep.Spec.Replicas = ptr.To[int32](2)
				return dep
			}},
		{name: "the applied spec not observed yet: the account is read", accountSet: true, wantReads: 1,
			deployment: func(dep *appsv1.Deployment) *appsv1.Deployment {
				rolled(dep)
				dep.Generation = 2
				return dep
			}},
		{name: "deleted account, every replica still runs: no read yet", accountSet: false,
			deployment: func(dep *appsv1.Deployment) *appsv1.Deployment { rolled(dep); return dep }},
		{name: "deleted account, a pod could not be made: made again", wantReads: 1, wantCreate: true,
			deployment: func(dep *appsv1.Deployment) *appsv1.Deployment {
				rolled(dep)
				dep.Status.AvailableReplicas, dep.Status.ReadyReplicas = 0, 0
				dep.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse},
					{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate"}}
				return dep
			}},
		{name: "a Deployment to be rewritten: the account is read", accountSet: true, wantReads: 1,
			deployment: func(dep *appsv1.Deployment) *appsv1.Deployment {
				rolled(dep)
				dep.Annotations[desired.AnnotationSpecHash] = "an-older-spec"
				return dep
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			install := testfixtures.WidgetInstall(ns, "widgets", deployment, "widgets.example.com")
			install.UID = "uid-1"
			s := &installState{install: install, generation: 1, now: now, webhooks: desired.Webhooks(install), services: map[string]*serviceCerts{}}
			service := s.webhooks[0].Service
			s.services[service] = &serviceCerts{secretName: desired.ServingSecretName(service), ca: ca, servingPEM: pair.CertPEM}
			if got := install.Spec.Install.Spec.Deployments[0].Spec.Template.Spec.ServiceAccountName; got != account {
				t.Fatalf("the fixture's Deployment runs as %q, want %q", got, account)
			}
			var objects []client.Object
			if tc.deployment != nil {
				objects = append(objects, tc.deployment(desired.Deployment(install, install.Spec.Install.Spec.Deployments[0],
					&desired.Serving{SecretName: desired.ServingSecretName(service), Fingerprint: certs.Fingerprint(cert)})))
			}
			if tc.accountSet {
				objects = append(objects, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: account}})
			}
			scheme := runtime.NewScheme()
			if err := corev1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			if err := appsv1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			reads, created := 0, false
			c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build(), interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if _, ok := obj.(*corev1.ServiceAccount); ok {
						reads++
					}
					return c.Get(ctx, key, obj, opts...)
				},
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if _, ok := obj.(*corev1.ServiceAccount); ok {
						created = true
					}
					return c.Create(ctx, obj, opts...)
				},
				// The applies of the Deployment and Service: accepted,
				// nothing to store for this test.
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					return nil
				},
			})
			r := &WebhookInstallReconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(10)}
			if err := r.ensureWorkloads(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if reads != tc.wantReads {
				t.Errorf("the ServiceAccount was read %d time(s), want %d", reads, tc.wantReads)
			}
			if created != tc.wantCreate {
				t.Errorf("ServiceAccount created: %v, want %v", created, tc.wantCreate)
			}
		})
	}
}

// rolled makes dep's one replica updated and available, as the deployment
// controller reports a finished rollout.
func rolled(dep *appsv1.Deployment) {
	dep.Generation = 1
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}}
}

// With a new Deployment, a missing account is created in one request,
// labelled as Hookwright's. An account that exists, made before or
// between passes by someone else, is neither relabelled nor an error, nor
// is a create some policy refuses while the account exists; the same
// refusal of a missing account fails the step with the API server's
// answer. With a Deployment already there whose pods are not all made (a
// stuck one, on every resync) the account is read first: an existing one
// costs a read, not a create that fails on every pass.
func TestEnsureServiceAccountLabelsOnlyItsOwnCreate(t *testing.T) {
	const ns, account = "team-a", "widget-webhook"
	refused := apierrors.NewForbidden(corev1.Resource("serviceaccounts"), account, errors.New(`admission webhook "accounts.policy.example" denied the request`))
	ours := map[string]string{desired.LabelManagedBy: desired.ManagedByValue, desired.LabelInstall: "widgets"}
	for _, tc := range []struct {
		name            string
		deploymentThere bool  // the pass does not make the Deployment
		exists          bool  // the account is there before the step
		createErr       error // the API server's answer to the create, before storage
		wantLabels      map[string]string
		wantCreates     int
		wantRequests    int
		wantErr         bool
	}{
		{name: "created by Hookwright", wantLabels: ours, wantCreates: 1, wantRequests: 1},
		{name: "made by someone else", exists: true, wantCreates: 1, wantRequests: 1},
		{name: "a create refused by a policy, the account there", exists: true, createErr: refused, wantCreates: 1, wantRequests: 2},
		{name: "a create refused by a policy, no account", createErr: refused, wantCreates: 1, wantRequests: 2, wantErr: true},
		{name: "the Deployment there, the account too", deploymentThere: true, exists: true, wantRequests: 1},
		{name: "the Deployment there, the account missing", deploymentThere: true, wantLabels: ours, wantCreates: 1, wantRequests: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := corev1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			builder := fake.NewClientBuilder().WithScheme(scheme)
			if tc.exists {
				builder = builder.WithObjects(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: account}})
			}
			requests, creates := 0, 0
			c := interceptor.NewClient(builder.Build(), interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					requests++
					creates++
					if tc.createErr != nil {
						return tc.createErr
					}
					return c.Create(ctx, obj, opts...)
				},
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					requests++
					return c.Get(ctx, key, obj, opts...)
				},
			})
			recorder := events.NewFakeRecorder(10)
			r := &WebhookInstallReconciler{Client: c, APIReader: c, Recorder: recorder}
			install := testfixtures.WidgetInstall(ns, "widgets", "widget-webhook", "widgets.example.com")
			err := r.ensureServiceAccount(context.Background(), &installState{install: install}, account, !tc.deploymentThere)
			if requests != tc.wantRequests || creates != tc.wantCreates {
				t.Errorf("%d request(s), %d of them creates; want %d and %d", requests, creates, tc.wantRequests, tc.wantCreates)
			}
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "denied the request") {
					t.Errorf("error %v, want the create's refusal", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := len(recorder.Events); got != 0 {
				t.Errorf("%d Event(s), want none: the account is a step, its labels the record", got)
			}
			sa := &corev1.ServiceAccount{}
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: account}, sa); err != nil {
				t.Fatalf("the account is missing after the step: %v", err)
			}
			if !maps.Equal(sa.Labels, tc.wantLabels) {
				t.Errorf("labels %v, want %v", sa.Labels, tc.wantLabels)
			}
		})
	}
}
