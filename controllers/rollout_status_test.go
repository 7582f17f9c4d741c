package controllers

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The statuses below are the ones the real deployment controller writes
// during a rolling update of 1 and 3 replicas with maxSurge 1 and
// maxUnavailable 0 (seen on the test ground's kube-controller-manager).
func TestFullyRolledOut(t *testing.T) {
	dep := func(replicas int32, s appsv1.DeploymentStatus) *appsv1.Deployment {
		s.Conditions = append(s.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue})
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(replicas)},
			Status:     s,
		}
	}
	for _, tc := range []struct {
		name string
		dep  *appsv1.Deployment
		want bool
	}{
		{"new spec not observed yet", dep(1, appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}), false},
		// The surge pod exists (updated) but is not ready; the old pod is
		// the available one: the new template does not serve yet.
		{"surge pod created, not ready", dep(1, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}), false},
		{"surge pod ready, old pod not scaled down", dep(1, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 1, ReadyReplicas: 2, AvailableReplicas: 2}), false},
		{"3 replicas: all updated, an old one still running", dep(3, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 4, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3}), false},
		{"3 replicas: all updated, one not available", dep(3, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 2}), false},
		{"rolled out", dep(3, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3}), true},
		{"rolled out, an old pod still terminating", dep(1, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, TerminatingReplicas: ptr.To[int32](1)}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fullyRolledOut(tc.dep); got != tc.want {
				t.Errorf("fullyRolledOut = %v, want %v (status %+v)", got, tc.want, tc.dep.Status)
			}
		})
	}
}
