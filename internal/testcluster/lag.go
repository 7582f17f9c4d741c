package testcluster

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// SetEndpointLag makes the cluster network apply the removal of an
// endpoint lag late, as a kube-proxy whose watch and rule sync are behind
// (under load, several seconds): an endpoint stays routable as ready for
// lag after the proxy last saw it ready in the Service's EndpointSlices,
// whether its pod is terminating or gone (then the connection is
// refused). New endpoints are used at once. Zero, the default, routes by
// the EndpointSlices as they are.
func (c *Cluster) SetEndpointLag(lag time.Duration) { c.network.setLag(lag) }

// lastReady is an endpoint the network saw ready, routable until until.
type lastReady struct {
	route route
	until time.Time
}

func (n *network) setLag(lag time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lag = lag
	clear(n.lastReady)
}

// withLag adds to the Service's ready endpoints those the lagging view
// still has as ready, marked stale. Without a lag (the default, and the
// bench) it takes only the read lock: every tunnel passes here.
func (n *network) withLag(svc types.NamespacedName, ready []route) []route {
	n.mu.RLock()
	lagging := n.lag > 0
	n.mu.RUnlock()
	if !lagging {
		return ready
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lag <= 0 {
		return ready
	}
	now := n.clock.Now()
	seen := n.lastReady[svc]
	if seen == nil {
		seen = map[string]lastReady{}
		n.lastReady[svc] = seen
	}
	current := map[string]bool{}
	for _, r := range ready {
		seen[r.addr] = lastReady{route: r, until: now.Add(n.lag)}
		current[r.addr] = true
	}
	for addr, l := range seen {
		switch {
		case current[addr]:
		case now.After(l.until):
			delete(seen, addr)
		default:
			r := l.route
			r.stale = true
			ready = append(ready, r)
		}
	}
	return ready
}
