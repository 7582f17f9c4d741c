package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// A verification's read of a stored object and its dry run are
// independent requests: the dry run does not wait for the read. The read
// here answers only once the dry run was made; made one after the other,
// the read would give up and the probe would fail.
func TestProbeConversionReadsAndDryRunsAtOnce(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ListKind: "WidgetList"},
	}}
	dryRun := make(chan struct{})
	resources := probeAnswers(crd, func() error {
		close(dryRun)
		return nil
	}, func() error {
		select {
		case <-dryRun:
			return nil // no stored object
		case <-time.After(10 * time.Second): // a deadlock guard, not a timing goal
			return errors.New("the dry run waited for the read")
		}
	})
	r := &WebhookInstallReconciler{Resources: resources}
	install := &v1alpha1.WebhookInstall{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "widgets"}}
	p := r.probeConversion(context.Background(), install, crd, "v2")
	if !p.converted {
		t.Fatalf("probe = %+v, want converted through the dry run", p)
	}
}
