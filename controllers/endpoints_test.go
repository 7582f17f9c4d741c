package controllers

import (
	"context"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
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
