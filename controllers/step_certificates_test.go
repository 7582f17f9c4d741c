package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/internal/testfixtures"
)

// A first issuance reads each of the Service's Secrets live once: the
// cache (which holds only Hookwright's Secrets) says they are missing,
// the live read that decides the writes confirms it, and nothing reads
// them again (bench P4 traced three live reads of each, two of them
// foreign-name checks after a live read had already answered). A Secret
// of someone else's by that name is still refused, on that live read,
// and nothing is written over it.
func TestFirstIssuanceReadsEachSecretLiveOnce(t *testing.T) {
	const ns = "team-a"
	for _, tc := range []struct {
		name          string
		foreign       string // the name of a Secret someone else made, live only
		wantLiveReads int    // of Secrets
		wantErr       string
		wantApplies   int // of Secrets
	}{
		{name: "nothing stored yet: one live read of each, both issued", wantLiveReads: 2, wantApplies: 2},
		{name: "someone else's Secret has the CA's name: refused, nothing written", foreign: "ca",
			wantLiveReads: 1, wantErr: "exists and is not managed by Hookwright: rename or delete it"},
		{name: "someone else's Secret has the serving certificate's name: refused, nothing written", foreign: "serving",
			wantLiveReads: 2, wantErr: "exists and is not managed by Hookwright: rename or delete it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			install := testfixtures.WidgetInstall(ns, "widgets", "widget-webhook", "widgets.example.com")
			install.UID, install.ResourceVersion = "uid-1", "7"
			s := &installState{install: install, generation: 1, now: time.Now(), webhooks: desired.Webhooks(install), services: map[string]*serviceCerts{}}
			service := s.webhooks[0].Service

			scheme := runtime.NewScheme()
			if err := corev1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			if err := v1alpha1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			live := []client.Object{install.DeepCopy()}
			switch tc.foreign {
			case "ca":
				live = append(live, foreignNamedSecret(ns, desired.CASecretName(service)))
			case "serving":
				live = append(live, foreignNamedSecret(ns, desired.ServingSecretName(service)))
			}
			liveReads, applies := 0, 0
			countSecretReads := interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if _, ok := obj.(*corev1.Secret); ok {
						liveReads++
					}
					return c.Get(ctx, key, obj, opts...)
				},
			}
			apiReader := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(live...).Build(), countSecretReads)
			// The label-selected cache: the install, no Secret of anyone's.
			cache := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(install.DeepCopy()).Build(), interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if _, ok := obj.(*corev1.Secret); ok {
						applies++
					}
					return nil // accepted; nothing to store for this test
				},
			})
			r := &WebhookInstallReconciler{Client: cache, APIReader: apiReader, Recorder: events.NewFakeRecorder(10)}

			err := r.ensureCertificates(context.Background(), s)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
			}
			if liveReads != tc.wantLiveReads {
				t.Errorf("Secrets read live %d time(s), want %d", liveReads, tc.wantLiveReads)
			}
			if applies != tc.wantApplies {
				t.Errorf("Secrets applied %d time(s), want %d", applies, tc.wantApplies)
			}
		})
	}
}

func foreignNamedSecret(ns, name string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "someone-else"}},
		Data: map[string][]byte{"password": []byte("not Hookwright's")}}
}
