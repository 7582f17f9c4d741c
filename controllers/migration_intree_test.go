package controllers

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestServedStorageMigrationVersion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		served []string
		want   string // "" = not served
	}{
		{"Kubernetes 1.37+: the GA API", []string{"v1"}, "v1"},
		{"Kubernetes 1.35 and 1.36 with the beta enabled", []string{"v1beta1"}, "v1beta1"},
		{"both served: the newest", []string{"v1beta1", "v1"}, "v1"},
		{"not served: Hookwright migrates itself", nil, ""},
		{"an unknown version only", []string{"v2alpha1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var versions []schema.GroupVersion
			for _, v := range tc.served {
				versions = append(versions, schema.GroupVersion{Group: "storagemigration.k8s.io", Version: v})
			}
			mapper := meta.NewDefaultRESTMapper(versions)
			for _, gv := range versions {
				mapper.Add(gv.WithKind("StorageVersionMigration"), meta.RESTScopeRoot)
			}
			gv, ok := servedStorageMigrationVersion(mapper)
			if tc.want == "" {
				if ok {
					t.Fatalf("served %v, want none", gv)
				}
				return
			}
			if !ok || gv != (schema.GroupVersion{Group: "storagemigration.k8s.io", Version: tc.want}) {
				t.Fatalf("got %v (served %v), want storagemigration.k8s.io/%s", gv, ok, tc.want)
			}
		})
	}
}
