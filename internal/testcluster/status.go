package testcluster

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// writeStatus writes the Deployment status the deployment controller would,
// from the pods the stand-in runs, and only when it differs. One ready pod
// stands for every replica. It uses the cached resourceVersion, so a stale
// view is a conflict and a retry, never a lost update.
func (k *Kubelet) writeStatus(ctx context.Context, dep *appsv1.Deployment) error {
	want := k.deploymentStatus(dep)
	if equality.Semantic.DeepEqual(dep.Status, want) {
		return nil
	}
	updated := dep.DeepCopy()
	updated.Status = want
	return k.client.Status().Update(ctx, updated)
}

func (k *Kubelet) deploymentStatus(dep *appsv1.Deployment) appsv1.DeploymentStatus {
	replicas := replicasOf(dep)
	key := types.NamespacedName{Namespace: dep.Namespace, Name: dep.Name}
	hash := templateHash(&dep.Spec.Template)
	var currentReady, anyReady bool
	for _, p := range k.pods[key] {
		if p.ready.Load() && !p.exited.Load() {
			anyReady = true
			currentReady = currentReady || p.hash == hash
		}
	}
	s := appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: replicas}
	available, progressing := corev1.ConditionFalse, "ReplicaSetUpdated"
	availableReason := "MinimumReplicasUnavailable"
	switch {
	case replicas == 0 || currentReady:
		s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas = replicas, replicas, replicas
		available, availableReason, progressing = corev1.ConditionTrue, "MinimumReplicasAvailable", "NewReplicaSetAvailable"
	case anyReady:
		s.ReadyReplicas, s.AvailableReplicas = replicas, replicas
		available, availableReason = corev1.ConditionTrue, "MinimumReplicasAvailable"
	default:
		s.UnavailableReplicas = replicas
	}
	s.Conditions = []appsv1.DeploymentCondition{
		keepTimes(dep.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: available, Reason: availableReason}),
		keepTimes(dep.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: progressing}),
	}
	return s
}

// keepTimes carries over the timestamps of an unchanged condition so that
// an unchanged status compares equal and is not rewritten.
func keepTimes(old []appsv1.DeploymentCondition, c appsv1.DeploymentCondition) appsv1.DeploymentCondition {
	for _, o := range old {
		if o.Type == c.Type && o.Status == c.Status && o.Reason == c.Reason {
			c.LastUpdateTime, c.LastTransitionTime = o.LastUpdateTime, o.LastTransitionTime
			return c
		}
	}
	now := metav1.Now()
	c.LastUpdateTime, c.LastTransitionTime = now, now
	return c
}
