package controllers

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/internal/testfixtures"
)

// The API server reaches a webhook Service through its EndpointSlices: a
// CRD is first pointed at it only once a slice lists a ready endpoint.
func TestServiceHasReadyEndpoint(t *testing.T) {
	slice := func(service string, ready ...*bool) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", GenerateName: service + "-", Name: service + "-" + string(rune('a'+len(ready))), Labels: map[string]string{discoveryv1.LabelServiceName: service}},
			AddressType: discoveryv1.AddressTypeIPv4,
		}
		for _, r := range ready {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.88.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: r}})
		}
		return s
	}
	cases := []struct {
		name   string
		slices []*discoveryv1.EndpointSlice
		want   bool
	}{
		{"no slice yet", nil, false},
		{"a slice with no endpoint", []*discoveryv1.EndpointSlice{slice("webhook-service")}, false},
		{"only a pod that is not ready", []*discoveryv1.EndpointSlice{slice("webhook-service", ptr.To(false))}, false},
		{"a ready pod", []*discoveryv1.EndpointSlice{slice("webhook-service", ptr.To(false), ptr.To(true))}, true},
		{"readiness unknown counts as ready (as kube-proxy does)", []*discoveryv1.EndpointSlice{slice("webhook-service", nil)}, true},
		{"another Service's ready pod", []*discoveryv1.EndpointSlice{slice("other-service", ptr.To(true))}, false},
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme)
			for _, s := range tc.slices {
				b = b.WithObjects(s)
			}
			r := &WebhookInstallReconciler{Client: b.Build()}
			got, err := r.serviceHasReadyEndpoint(context.Background(), "ns", "webhook-service")
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("ready endpoint = %v, want %v", got, tc.want)
			}
		})
	}
}

// A Service's EndpointSlices usually follow its Deployment's availability
// within a second: a pass that finds the Deployment available but no
// ready endpoint within endpointsRetry of the Deployment turning
// available leaves its status to the pass the slice wakes (one status
// write less per install that meets the lag). A wait that lasts longer is
// written, and so is one whose Deployment's availability is unknown.
func TestAwaitReadyEndpointsDefersItsStatusOnlyJustAfterAvailable(t *testing.T) {
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name           string
		availableSince *time.Time
		wantDeferred   bool
	}{
		{name: "available a second ago", availableSince: ptr.To(now.Add(-time.Second)), wantDeferred: true},
		{name: "available for endpointsRetry already", availableSince: ptr.To(now.Add(-endpointsRetry))},
		{name: "the Deployment's availability not recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			install := testfixtures.WidgetInstall("team-a", "widgets", "widget-webhook", "widgets.example.com")
			s := &installState{install: install, now: now, webhooks: desired.Webhooks(install)}
			w := s.webhooks[0]
			s.crds = []*crdState{{name: "widgets.example.com", webhook: w, crd: &apiextensionsv1.CustomResourceDefinition{}}}
			if tc.availableSince != nil {
				dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: w.Deployment}}
				dep.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(*tc.availableSince)}}
				s.recordAvailableSince(dep)
			}
			scheme := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			r := &WebhookInstallReconciler{Client: fake.NewClientBuilder().WithScheme(scheme).Build()} // no EndpointSlice
			if err := r.awaitReadyEndpoints(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if s.halt == nil || s.retryAfter != endpointsRetry {
				t.Fatalf("halt %v, retry after %s: want the pipeline stopped and another look within %s", s.halt, s.retryAfter, endpointsRetry)
			}
			installing := v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling, ObservedGeneration: 1}
			next := installing
			next.Message = s.halt.message
			if got := deferStatusToVerification(s, nil, installing, next); got != tc.wantDeferred {
				t.Errorf("status deferred: %v, want %v", got, tc.wantDeferred)
			}
		})
	}
}
