package controllers

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// fakeInstallClient is a fake API server holding install, with the status
// subresource as the CRD declares it.
func fakeInstallClient(t *testing.T, install *v1alpha1.WebhookInstall) client.WithWatch {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(install).WithStatusSubresource(install).Build()
}
