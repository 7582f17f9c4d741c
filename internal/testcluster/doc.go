// Package testcluster is Hookwright's test ground: a real kube-apiserver,
// etcd and kube-controller-manager (built from Go modules by
// hack/build-control-plane.sh; the API server started through
// controller-runtime's envtest), plus stand-ins for the two things a real
// cluster has and this machine lacks:
//
//   - the node: a registered, Ready Node (its Lease renewed) whose kubelet
//     stand-in binds the Pods the real ReplicaSet controller creates, runs
//     for each Pod of a Deployment it was asked to serve a webhook host with
//     that Pod's own Secret volumes (materialized as kubelet does: a
//     timestamped directory and an atomic ..data symlink swap, after a
//     configurable propagation delay), and reports the Pod's IP, readiness
//     and termination (the container's preStop sleep, then the host drains,
//     then the Pod is removed). Deployment
//     and ReplicaSet status, garbage collection, EndpointSlices, namespace
//     deletion and ServiceAccount tokens are the real controllers' work;
//   - the cluster network: an HTTP CONNECT proxy on a unix socket that the
//     API server uses, through its egress selector, for every Service it
//     dials; it maps ClusterIP:port to a ready endpoint of the Service's
//     EndpointSlices, as kube-proxy does, and the endpoint's pod IP to that
//     pod's loopback listener (SetEndpointLag applies removals late, as a
//     kube-proxy that is behind). It never dials anything else.
//
// It serves tests, the demo and the benchmarks; product code never imports it.
package testcluster
