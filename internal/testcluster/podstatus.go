package testcluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writePodStatus reports the Pod as kubelet would: Running with its IP once
// its host runs, Ready once the host said so (its readiness probe), and
// Pending with the container waiting (message says why) before. It writes
// only when something changed, with the cached resourceVersion, so a stale
// view is a conflict and a retry, never a lost update.
func (k *Kubelet) writePodStatus(ctx context.Context, obj *corev1.Pod, running *pod, waiting string) error {
	want := podStatus(obj, running, waiting)
	if equality.Semantic.DeepEqual(obj.Status, want) {
		return nil
	}
	updated := obj.DeepCopy()
	updated.Status = want
	return k.client.Status().Update(ctx, updated)
}

func podStatus(obj *corev1.Pod, running *pod, waiting string) corev1.PodStatus {
	old := obj.Status
	// Fields kubelet does not own here (QOS class, observed generation...)
	// are kept as the API server set them.
	s := *old.DeepCopy()
	s.Phase, s.HostIP, s.HostIPs = corev1.PodPending, "127.0.0.1", []corev1.HostIP{{IP: "127.0.0.1"}}
	s.ContainerStatuses = nil
	if s.StartTime == nil {
		now := metav1.Now()
		s.StartTime = &now
	}
	started := running != nil && !running.exited.Load()
	ready := started && running.ready.Load()
	if running != nil {
		s.PodIP, s.PodIPs = running.ip, []corev1.PodIP{{IP: running.ip}}
	}
	if started || old.Phase == corev1.PodRunning {
		// A pod whose container died keeps its phase; only readiness goes.
		s.Phase = corev1.PodRunning
	}
	s.Conditions = []corev1.PodCondition{
		condition(old.Conditions, corev1.PodScheduled, true, ""),
		condition(old.Conditions, corev1.PodReadyToStartContainers, running != nil, ""),
		condition(old.Conditions, corev1.PodInitialized, true, ""),
		condition(old.Conditions, corev1.ContainersReady, ready, "ContainersNotReady"),
		condition(old.Conditions, corev1.PodReady, ready, "ContainersNotReady"),
	}
	for _, c := range obj.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: ready, Started: &started}
		if running != nil {
			cs.RestartCount = running.restarts
		}
		switch {
		case started:
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(running.started.Truncate(1e9))}
		case running != nil:
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "the host exited; kubelet restarts it"}
		default:
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating", Message: waiting}
		}
		s.ContainerStatuses = append(s.ContainerStatuses, cs)
	}
	return s
}

// condition builds a Pod condition, keeping the transition time of one
// whose status did not change: availability (minReadySeconds) counts from
// the Ready transition, and an unchanged status must compare equal.
func condition(old []corev1.PodCondition, t corev1.PodConditionType, status bool, falseReason string) corev1.PodCondition {
	c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: falseReason}
	if status {
		c.Status, c.Reason = corev1.ConditionTrue, ""
	}
	for _, o := range old {
		if o.Type == t && o.Status == c.Status {
			c.LastTransitionTime, c.LastProbeTime = o.LastTransitionTime, o.LastProbeTime
			return c
		}
	}
	c.LastTransitionTime = metav1.Now()
	return c
}
