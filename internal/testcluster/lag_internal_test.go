package testcluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestEndpointLag(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Now())
	n := newNetwork(nil)
	n.clock = clock
	svc := types.NamespacedName{Namespace: "ns", Name: "webhook"}
	oldPod := route{addr: "10.88.0.1:9443", podIP: "10.88.0.1", ready: true}
	newPod := route{addr: "10.88.0.2:9443", podIP: "10.88.0.2", ready: true}
	addrs := func(routes []route) map[string]bool {
		out := map[string]bool{}
		for _, r := range routes {
			out[r.addr] = r.stale
		}
		return out
	}

	if got := addrs(n.withLag(svc, []route{oldPod})); len(got) != 1 || got[oldPod.addr] {
		t.Fatalf("no lag: routes %v, want the ready one only", got)
	}
	n.setLag(5 * time.Second)
	n.withLag(svc, []route{oldPod, newPod}) // both seen ready
	clock.SetTime(clock.Now().Add(4 * time.Second))
	got := addrs(n.withLag(svc, []route{newPod})) // the old pod left the slices' ready endpoints
	if stale, listed := got[oldPod.addr]; len(got) != 2 || !listed || !stale || got[newPod.addr] {
		t.Errorf("4s after the old endpoint was last ready, lag 5s: routes (addr: stale) %v, want the new one and the old one stale", got)
	}
	clock.SetTime(clock.Now().Add(2 * time.Second))
	if got := addrs(n.withLag(svc, []route{newPod})); len(got) != 1 || got[newPod.addr] {
		t.Errorf("6s after: routes %v, want the new one only", got)
	}
	n.withLag(svc, []route{oldPod, newPod})
	n.setLag(0)
	if got := addrs(n.withLag(svc, []route{newPod})); len(got) != 1 {
		t.Errorf("lag back to 0: routes %v, want the ready one only", got)
	}
}

func TestPreStopSleep(t *testing.T) {
	sleep := func(s int64) *corev1.Lifecycle {
		return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: s}}}
	}
	seconds := func(s int64) *int64 { return &s }
	for _, tc := range []struct {
		name      string
		lifecycle *corev1.Lifecycle
		grace     *int64 // the Pod's terminationGracePeriodSeconds
		deletion  *int64 // the delete's grace period
		want      time.Duration
	}{
		{"no hook", nil, nil, nil, 0},
		{"an exec hook (not modelled)", &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "5"}}}}, nil, nil, 0},
		{"a sleep", sleep(5), nil, seconds(30), 5 * time.Second},
		{"a sleep beyond the default grace period", sleep(45), nil, nil, 30 * time.Second},
		{"a sleep beyond the pod's grace period", sleep(5), seconds(2), nil, 2 * time.Second},
		{"a delete asking for less than the pod's grace period", sleep(5), seconds(30), seconds(1), time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &corev1.Pod{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: tc.grace, Containers: []corev1.Container{
				{Name: "sidecar"},
				{Name: "webhook", Lifecycle: tc.lifecycle},
			}}}
			obj.DeletionGracePeriodSeconds = tc.deletion
			p := &pod{container: "webhook"}
			if got := p.preStopSleep(obj); got != tc.want {
				t.Errorf("preStopSleep = %v, want %v", got, tc.want)
			}
		})
	}
}
