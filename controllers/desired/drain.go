package desired

import corev1 "k8s.io/api/core/v1"

// DrainSeconds is how long a webhook pod keeps serving, as it did, after
// it is told to stop and before its containers get SIGTERM: Hookwright
// gives each container of a webhook Deployment that declares no preStop
// hook a preStop sleep of this many seconds (kubelet's built-in sleep
// action, no binary in the image needed).
//
// Why: a pod being deleted is marked terminating in its EndpointSlices at
// once, but every kube-proxy (and an API server routing to endpoints
// itself) applies that later, after its own watch and sync. A webhook that
// stops accepting connections on SIGTERM, as net/http's Shutdown does,
// fails every request still routed to it in between. The rotations
// Hookwright runs roll these pods (a new serving certificate rolls the
// pod template), so it must not be the cause of those failed reads.
// Kubernetes' own guidance for load-balanced servers is the same:
// https://kubernetes.io/docs/concepts/containers/container-lifecycle-hooks/
// An author who has a preStop hook keeps it (and its timing), and one who
// wants none can declare `preStop: {sleep: {seconds: 0}}`.
const DrainSeconds = 5

// withDrain gives every container without a preStop hook the drain sleep.
func withDrain(pod *corev1.PodSpec) {
	for i := range pod.Containers {
		c := &pod.Containers[i]
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
			continue
		}
		if c.Lifecycle == nil {
			c.Lifecycle = &corev1.Lifecycle{}
		}
		c.Lifecycle.PreStop = &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: DrainSeconds}}
	}
}
