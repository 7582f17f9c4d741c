package testcluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// route is where one CONNECT leads: a pod's loopback listener, and what
// the proxy's log says about it.
type route struct {
	addr        string
	service     types.NamespacedName
	pod         types.NamespacedName
	podIP       string
	ready       bool // the endpoint was ready (not terminating) when dialled
	terminating bool
	stale       bool // ready only in the lagging view (SetEndpointLag)
}

// network is the stand-in for Services and kube-proxy. It resolves a
// ClusterIP:port the way kube-proxy programs it, from the Service and the
// EndpointSlices the real EndpointSlice controller writes: a ready endpoint
// chosen at random (so a rollout serves from old and new pods alike), or,
// when none is ready, a serving terminating one (kube-proxy's fallback,
// KEP-1669). The endpoint's pod IP leads to that pod's loopback listener;
// a pod IP with nothing listening on the port refuses the connection.
type network struct {
	reader client.Reader

	mu        sync.RWMutex
	byIP      map[string]*pod
	nextIP    uint32
	lag       time.Duration                                 // SetEndpointLag
	lastReady map[types.NamespacedName]map[string]lastReady // by Service, then endpoint address
	clock     clock.PassiveClock
}

func newNetwork(reader client.Reader) *network {
	return &network{reader: reader, byIP: map[string]*pod{}, lastReady: map[types.NamespacedName]map[string]lastReady{}, clock: clock.RealClock{}}
}

// allocateIP hands out a free pod IP in 10.88.0.0/16.
func (n *network) allocateIP() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	for {
		n.nextIP = n.nextIP%65534 + 1
		ip := fmt.Sprintf("10.88.%d.%d", n.nextIP>>8, n.nextIP&0xff)
		if _, used := n.byIP[ip]; !used && n.nextIP&0xff != 0 {
			return ip
		}
	}
}

// register makes the pod's IP lead to its host.
func (n *network) register(p *pod) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.byIP[p.ip] = p
}

// unregister frees the pod's IP unless another pod (its restart) holds it.
func (n *network) unregister(p *pod) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.byIP[p.ip] == p {
		delete(n.byIP, p.ip)
	}
}

func (n *network) resolve(ctx context.Context, clusterIP string, port int32) (route, error) {
	svc, err := n.serviceByClusterIP(ctx, clusterIP)
	if err != nil {
		return route{}, err
	}
	svcKey := client.ObjectKeyFromObject(svc)
	var portName *string
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			portName = &svc.Spec.Ports[i].Name
		}
	}
	if portName == nil {
		return route{}, fmt.Errorf("service %s has no port %d", svcKey, port)
	}
	var slices discoveryv1.EndpointSliceList
	if err := n.reader.List(ctx, &slices, client.InNamespace(svc.Namespace),
		client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name}); err != nil {
		return route{}, fmt.Errorf("listing endpointslices of service %s: %w", svcKey, err)
	}
	var ready, terminating []route
	for _, slice := range slices.Items {
		target, ok := slicePort(slice.Ports, *portName)
		if !ok || slice.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		for _, ep := range slice.Endpoints {
			if len(ep.Addresses) == 0 {
				continue
			}
			r := route{service: svcKey, podIP: ep.Addresses[0], addr: fmt.Sprintf("%s:%d", ep.Addresses[0], target)}
			if ep.TargetRef != nil {
				r.pod = types.NamespacedName{Namespace: ep.TargetRef.Namespace, Name: ep.TargetRef.Name}
			}
			// A nil condition reads as its default: ready and serving true,
			// terminating false (EndpointConditions' API documentation).
			switch c := ep.Conditions; {
			case c.Ready == nil || *c.Ready:
				r.ready = true
				ready = append(ready, r)
			case (c.Serving == nil || *c.Serving) && c.Terminating != nil && *c.Terminating:
				r.terminating = true
				terminating = append(terminating, r)
			}
		}
	}
	candidates := n.withLag(svcKey, ready)
	if len(candidates) == 0 {
		candidates = terminating
	}
	if len(candidates) == 0 {
		return route{}, fmt.Errorf("no ready pod serves service %s: its endpointslices list no ready endpoint for port %d", svcKey, port)
	}
	r := candidates[rand.IntN(len(candidates))]
	addr, err := n.podListener(r.podIP, r.addr)
	if err != nil {
		return route{}, fmt.Errorf("service %s: %w", svcKey, err)
	}
	r.addr = addr
	return r, nil
}

// podListener maps podIP:port to the loopback listener of the pod holding
// that IP, if it serves that port.
func (n *network) podListener(podIP, podAddr string) (string, error) {
	n.mu.RLock()
	p := n.byIP[podIP]
	n.mu.RUnlock()
	if p == nil || fmt.Sprintf("%s:%d", p.ip, p.port) != podAddr {
		return "", fmt.Errorf("dial %s: connection refused (no pod serves it)", podAddr)
	}
	return p.addr, nil
}

func slicePort(ports []discoveryv1.EndpointPort, name string) (int32, bool) {
	for _, p := range ports {
		if p.Port != nil && (p.Name == nil && name == "" || p.Name != nil && *p.Name == name) {
			return *p.Port, true
		}
	}
	return 0, false
}

func (n *network) serviceByClusterIP(ctx context.Context, clusterIP string) (*corev1.Service, error) {
	var services corev1.ServiceList
	if err := n.reader.List(ctx, &services); err != nil {
		return nil, fmt.Errorf("listing services: %w", err)
	}
	for i := range services.Items {
		for _, ip := range services.Items[i].Spec.ClusterIPs {
			if ip == clusterIP {
				return &services.Items[i], nil
			}
		}
	}
	return nil, fmt.Errorf("no service has ClusterIP %s", clusterIP)
}
