package testcluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// endpoint is one ready pod stand-in as the network sees it.
type endpoint struct {
	namespace string
	labels    labels.Set
	ports     []corev1.ContainerPort // declared by the pod's container
	port      int32                  // the containerPort the host serves
	addr      string                 // its loopback listener
}

// network is the stand-in for Services and kube-proxy: it resolves a
// ClusterIP:port to a ready endpoint, choosing at random among several (as
// kube-proxy does), so a rollout serves from old and new pods alike.
type network struct {
	reader client.Reader

	mu        sync.RWMutex
	endpoints map[*pod]endpoint
}

func newNetwork(reader client.Reader) *network {
	return &network{reader: reader, endpoints: map[*pod]endpoint{}}
}

func (n *network) add(p *pod, ep endpoint) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.endpoints[p] = ep
}

func (n *network) remove(p *pod) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.endpoints, p)
}

func (n *network) resolve(ctx context.Context, clusterIP string, port int32) (string, error) {
	svc, err := n.serviceByClusterIP(ctx, clusterIP)
	if err != nil {
		return "", err
	}
	var target *intstr.IntOrString
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			t := svc.Spec.Ports[i].TargetPort
			if t.IntVal == 0 && t.StrVal == "" {
				t = intstr.FromInt32(port)
			}
			target = &t
		}
	}
	if target == nil {
		return "", fmt.Errorf("service %s/%s has no port %d", svc.Namespace, svc.Name, port)
	}
	if len(svc.Spec.Selector) == 0 {
		return "", fmt.Errorf("service %s/%s has no selector, so no pod backs it", svc.Namespace, svc.Name)
	}
	selector := labels.SelectorFromSet(svc.Spec.Selector)

	n.mu.RLock()
	var candidates []string
	for _, ep := range n.endpoints {
		if ep.namespace == svc.Namespace && selector.Matches(ep.labels) && ep.serves(*target) {
			candidates = append(candidates, ep.addr)
		}
	}
	n.mu.RUnlock()
	if len(candidates) == 0 {
		return "", fmt.Errorf("no ready pod serves service %s/%s targetPort %s", svc.Namespace, svc.Name, target.String())
	}
	return candidates[rand.IntN(len(candidates))], nil
}

func (ep endpoint) serves(target intstr.IntOrString) bool {
	if target.Type == intstr.Int {
		return target.IntVal == ep.port
	}
	for _, p := range ep.ports {
		if p.Name == target.StrVal {
			return p.ContainerPort == ep.port
		}
	}
	return false
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
