package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// A verification's read of a stored object and its dry run are
// independent requests: the dry run does not wait for the read. The read
// here answers only once the dry run was made; made one after the other,
// the read would give up and the probe would fail.
//
// The read waits before it reaches the fake client: the fake answers one
// request at a time, under a lock its reactors run in, so a read that
// waited in its reactor would hold the dry run back whenever its
// goroutine got there first.
func TestProbeConversionReadsAndDryRunsAtOnce(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ListKind: "WidgetList"},
	}}
	dryRun := make(chan struct{})
	resources := probeAnswers(crd, func() error {
		close(dryRun)
		return nil
	}, func() error { return nil }) // no stored object
	r := &WebhookInstallReconciler{Resources: listsAfter{Interface: resources, gate: dryRun}}
	install := &v1alpha1.WebhookInstall{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "widgets"}}
	p := r.probeConversion(context.Background(), install, crd, "v2")
	if !p.converted {
		t.Fatalf("probe = %+v, want converted through the dry run", p)
	}
}

// listsAfter makes every list wait until gate is closed, giving up after
// 10 s (a deadlock guard, not a timing goal).
type listsAfter struct {
	dynamic.Interface
	gate <-chan struct{}
}

func (l listsAfter) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return listsAfterResource{NamespaceableResourceInterface: l.Interface.Resource(gvr), gate: l.gate}
}

type listsAfterResource struct {
	dynamic.NamespaceableResourceInterface
	gate <-chan struct{}
}

func (l listsAfterResource) Namespace(ns string) dynamic.ResourceInterface {
	return listsAfterNamespaced{ResourceInterface: l.NamespaceableResourceInterface.Namespace(ns), gate: l.gate}
}

func (l listsAfterResource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	if err := waitFor(l.gate); err != nil {
		return nil, err
	}
	return l.NamespaceableResourceInterface.List(ctx, opts)
}

type listsAfterNamespaced struct {
	dynamic.ResourceInterface
	gate <-chan struct{}
}

func (l listsAfterNamespaced) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	if err := waitFor(l.gate); err != nil {
		return nil, err
	}
	return l.ResourceInterface.List(ctx, opts)
}

func waitFor(gate <-chan struct{}) error {
	select {
	case <-gate:
		return nil
	case <-time.After(10 * time.Second):
		return errors.New("the dry run waited for the read")
	}
}
