package controllers

import (
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// TestCacheKeepsManagedFieldsOnlyWhereRead: the manager's cache drops
// managedFields from what it holds, except from the admission
// configurations, whose drift checks read them.
func TestCacheKeepsManagedFieldsOnlyWhereRead(t *testing.T) {
	opts := CacheOptions()
	// A type's transform, as controller-runtime resolves it: its own,
	// else the default.
	transformOf := func(obj client.Object) func(any) (any, error) {
		for typ, by := range opts.ByObject {
			if sameType(typ, obj) && by.Transform != nil {
				return by.Transform
			}
		}
		return opts.DefaultTransform
	}
	cases := []struct {
		obj  client.Object
		kept bool
	}{
		{&v1alpha1.WebhookInstall{}, false},
		{&appsv1.Deployment{}, false},
		{&corev1.Service{}, false},
		{&corev1.Secret{}, false},
		{&discoveryv1.EndpointSlice{}, false},
		{crdMetadata(), false},
		{&admissionregistrationv1.ValidatingWebhookConfiguration{}, true},
		{&admissionregistrationv1.MutatingWebhookConfiguration{}, true},
	}
	for _, tc := range cases {
		obj := tc.obj
		obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "hookwright", Operation: metav1.ManagedFieldsOperationApply}})
		var out any = obj // no transform: the cache holds the object as listed
		if transform := transformOf(obj); transform != nil {
			var err error
			if out, err = transform(obj); err != nil {
				t.Fatalf("%T: %v", obj, err)
			}
		}
		if kept := len(out.(client.Object).GetManagedFields()) > 0; kept != tc.kept {
			t.Errorf("%T: managedFields kept in the cache = %v, want %v", obj, kept, tc.kept)
		}
	}
}

// sameType: a and b are the same Go type (ByObject is keyed by one).
func sameType(a, b client.Object) bool { return fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b) }
