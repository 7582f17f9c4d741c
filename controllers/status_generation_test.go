package controllers

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// TestStatusAfterAConflictReportsTheGenerationThePassSaw: when the status
// write conflicts because the spec changed meanwhile, the retried write
// keeps the pass's audit records but must not claim the new generation
// was observed: no step of this pass saw that spec (the controllers suite
// found an install reported Succeeded at its new generation with a
// webhook the new spec had dropped).
func TestStatusAfterAConflictReportsTheGenerationThePassSaw(t *testing.T) {
	seen := &v1alpha1.WebhookInstall{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "crontab", Generation: 1}}
	newer := seen.DeepCopy()
	newer.Generation = 2 // the spec changed after the pass read it
	c := fakeInstallClient(t, newer)
	conflicts := 0
	withConflict := interceptor.NewClient(c, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if conflicts == 0 {
				conflicts++
				return apierrors.NewConflict(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "webhookinstalls"}, obj.GetName(), nil)
			}
			return cl.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	r := &WebhookInstallReconciler{Client: withConflict, APIReader: withConflict, Recorder: events.NewFakeRecorder(10)}
	s := &installState{install: seen, generation: seen.Generation, now: time.Now(), services: map[string]*serviceCerts{}}
	if err := r.writeStatus(context.Background(), s, nil); err != nil {
		t.Fatal(err)
	}
	if conflicts != 1 {
		t.Fatalf("the status write did not conflict once (%d)", conflicts)
	}
	got := &v1alpha1.WebhookInstall{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(seen), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.ObservedGeneration != 1 {
		t.Errorf("status.observedGeneration = %d after a conflict, want 1: the pass acted on generation 1", got.Status.ObservedGeneration)
	}
	for _, cond := range got.Status.Conditions {
		if cond.ObservedGeneration != 1 {
			t.Errorf("condition %s observedGeneration = %d, want 1", cond.Type, cond.ObservedGeneration)
		}
	}
}
