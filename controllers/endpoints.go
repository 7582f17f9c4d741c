package controllers

import (
	"context"
	"fmt"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

// endpointsRetry is how soon a webhook whose Service lists no ready
// endpoint yet is looked at again without an event. The slices are
// watched (a slice turning ready wakes the install); this is the fallback.
const endpointsRetry = 5 * time.Second

// awaitReadyEndpoints stops the pipeline while a webhook Service that no
// CRD or admission configuration points at yet lists no ready endpoint in
// its EndpointSlices. A Deployment turns available when its pods are
// ready, but the API server reaches a Service through its EndpointSlices
// (kube-proxy's rules), which the EndpointSlice controller updates
// separately: pointing a CRD at the Service in between fails every read
// of the other versions for that moment. Services already in use are not
// checked: a resync reads nothing more.
func (r *WebhookInstallReconciler) awaitReadyEndpoints(ctx context.Context, s *installState) error {
	for _, w := range s.webhooks {
		if !s.firstUseOf(w) {
			continue
		}
		ready, err := r.serviceHasReadyEndpoint(ctx, s.install.Namespace, w.Service)
		if err != nil {
			return fmt.Errorf("reading the EndpointSlices of service %s/%s: %w", s.install.Namespace, w.Service, err)
		}
		if !ready {
			if since, ok := s.availableSince[w.Deployment]; ok && s.now.Sub(since) < endpointsRetry {
				s.endpointsJustLate = true
			}
			s.retryWithin(endpointsRetry)
			s.stop(v1alpha1.PhaseInstalling, v1alpha1.ReasonDeploymentUnavailable,
				fmt.Sprintf("webhook deployment %s is available, but service %s lists no ready endpoint yet (its EndpointSlices follow the pods' readiness)", w.Deployment, w.Service))
			return nil
		}
	}
	return nil
}

// firstUseOf: a CRD or admission webhook of w is about to be pointed at
// its Service for the first time.
func (s *installState) firstUseOf(w desired.Webhook) bool {
	for _, c := range s.crds {
		if c.webhook.Service == w.Service && c.crd != nil && !pointsAtService(c.crd, s.install.Namespace, w.Service) {
			return true
		}
	}
	for _, a := range s.admission {
		if a.webhook.Service == w.Service && (a.config == nil || a.config.clientConfig(a.name) == nil) {
			return true
		}
	}
	return false
}

// serviceHasReadyEndpoint: an EndpointSlice of the Service lists a ready
// endpoint. The slices come from the cache (Hookwright's Services' slices
// carry its label, see CacheOptions): a cache behind the API server can
// only say "not yet" too long, never "ready" too early.
func (r *WebhookInstallReconciler) serviceHasReadyEndpoint(ctx context.Context, namespace, service string) (bool, error) {
	slices := &discoveryv1.EndpointSliceList{}
	if err := r.Client.List(ctx, slices, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: service}); err != nil {
		return false, err
	}
	for _, slice := range slices.Items {
		for _, e := range slice.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				return true, nil
			}
		}
	}
	return false, nil
}
