package desired

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestDeploymentDrainsWebhookPods(t *testing.T) {
	sleep := func(s int64) *corev1.LifecycleHandler {
		return &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: s}}
	}
	exec := &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/drain"}}}
	postStart := &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/warm"}}}
	for _, tc := range []struct {
		name string
		have *corev1.Lifecycle
		want *corev1.Lifecycle
	}{
		{"no lifecycle: the drain sleep", nil, &corev1.Lifecycle{PreStop: sleep(DrainSeconds)}},
		{"a postStart hook only: kept, and the drain sleep", &corev1.Lifecycle{PostStart: postStart}, &corev1.Lifecycle{PostStart: postStart, PreStop: sleep(DrainSeconds)}},
		{"the author's own preStop: kept as it is", &corev1.Lifecycle{PreStop: exec}, &corev1.Lifecycle{PreStop: exec}},
		{"the author's zero sleep (no drain wanted): kept", &corev1.Lifecycle{PreStop: sleep(0)}, &corev1.Lifecycle{PreStop: sleep(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := authorDeploymentSpec()
			spec.Spec.Template.Spec.Containers[0].Lifecycle = tc.have
			authors := spec.DeepCopy()
			dep := Deployment(newInstall(nil), spec, &Serving{SecretName: "s", Fingerprint: "f"})
			if got := dep.Spec.Template.Spec.Containers[0].Lifecycle; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("lifecycle = %+v, want %+v", got, tc.want)
			}
			// Every container of the pod drains, the sidecar too: it may
			// be the one that serves.
			if got := dep.Spec.Template.Spec.Containers[1].Lifecycle; !reflect.DeepEqual(got, &corev1.Lifecycle{PreStop: sleep(DrainSeconds)}) {
				t.Errorf("sidecar lifecycle = %+v, want the drain sleep", got)
			}
			if !reflect.DeepEqual(spec, *authors) {
				t.Errorf("the author's spec was changed")
			}
		})
	}
}

func TestDeploymentWithoutServingGetsNoDrain(t *testing.T) {
	// Not a webhook Deployment (no Service routes to it): left as written.
	dep := Deployment(newInstall(nil), authorDeploymentSpec(), nil)
	for _, c := range dep.Spec.Template.Spec.Containers {
		if c.Lifecycle != nil {
			t.Errorf("container %s lifecycle = %+v, want none", c.Name, c.Lifecycle)
		}
	}
}
