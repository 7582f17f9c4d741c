package controllers

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// A pass that follows its predecessor before the cache shows the
// predecessor's status write must start from the install as written, not
// from the cache's older copy; once the cache has caught up, passes read
// it alone again.
func TestPassStartsFromTheManagersOwnLastWrite(t *testing.T) {
	stored := &v1alpha1.WebhookInstall{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "crontab", Generation: 1}}
	api := fakeInstallClient(t, stored)
	key := client.ObjectKeyFromObject(stored)

	// The cache serves snapshot while it is set (a watch not yet
	// delivered), else what the API server stores.
	var snapshot *v1alpha1.WebhookInstall
	cache := interceptor.NewClient(api, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if snapshot != nil {
				snapshot.DeepCopyInto(obj.(*v1alpha1.WebhookInstall))
				return nil
			}
			return c.Get(ctx, k, obj, opts...)
		},
	})
	liveReads := 0
	live := interceptor.NewClient(api, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			liveReads++
			return c.Get(ctx, k, obj, opts...)
		},
	})
	r := &WebhookInstallReconciler{Client: cache, APIReader: live, Recorder: events.NewFakeRecorder(10)}

	first, _, err := r.currentInstall(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if liveReads != 0 {
		t.Fatalf("a pass with nothing written before read live %d time(s): the cache is all there is", liveReads)
	}
	snapshot = first.DeepCopy()

	// The predecessor's status write.
	s := &installState{install: first, generation: 1, now: time.Now(), services: map[string]*serviceCerts{}}
	if err := r.writeStatus(context.Background(), s, nil); err != nil {
		t.Fatal(err)
	}
	if s.install.ResourceVersion == snapshot.ResourceVersion {
		t.Fatal("the status write did not change the install's resourceVersion; the test proves nothing")
	}

	next, wasLive, err := r.currentInstall(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if next.ResourceVersion != s.install.ResourceVersion || next.Status.ObservedGeneration != 1 {
		t.Errorf("the next pass started from resourceVersion %s (observedGeneration %d); want %s, the predecessor's write",
			next.ResourceVersion, next.Status.ObservedGeneration, s.install.ResourceVersion)
	}
	if !wasLive {
		t.Error("currentInstall read live but did not say so")
	}

	// A pass that started from that live copy does not read it again
	// before deciding a certificate write; one that started from the
	// cache does.
	for _, tc := range []struct {
		live      bool
		wantReads int
	}{{live: true, wantReads: 0}, {live: false, wantReads: 1}} {
		liveReads = 0
		pass := &installState{install: next.DeepCopy(), installLive: tc.live}
		fresh, stale, err := r.freshInstall(context.Background(), pass)
		if err != nil {
			t.Fatal(err)
		}
		if liveReads != tc.wantReads || stale || fresh.ResourceVersion != next.ResourceVersion {
			t.Errorf("freshInstall from a live copy %v: %d live read(s), stale %v, resourceVersion %s; want %d, false, %s",
				tc.live, liveReads, stale, fresh.ResourceVersion, tc.wantReads, next.ResourceVersion)
		}
	}

	snapshot = nil // the watch delivered the write
	liveReads = 0
	if _, _, err := r.currentInstall(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if liveReads != 0 {
		t.Errorf("a pass after the cache caught up read live %d time(s); want none", liveReads)
	}
}
