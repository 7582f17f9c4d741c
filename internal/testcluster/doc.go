// Package testcluster is Hookwright's test ground: a real kube-apiserver and
// etcd (built from Go modules by hack/build-control-plane.sh) started through
// controller-runtime's envtest, plus stand-ins for the two things a real
// cluster has and this machine lacks:
//
//   - the cluster network: an HTTP CONNECT proxy on a unix socket that the
//     API server uses, through its egress selector, for every Service it
//     dials; it maps ClusterIP:port to the loopback listener of the pod
//     stand-in that backs the Service, and never dials anything else;
//   - the kubelet: pod stand-ins that run a webhook host for a Deployment,
//     with the Deployment's Secret volumes materialized exactly as kubelet
//     does (timestamped directory and an atomic ..data symlink swap) after a
//     configurable propagation delay, and that write the Deployment's status
//     because no controller-manager runs.
//
// It serves tests, the demo and the benchmarks; product code never imports it.
package testcluster
