package controllers

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// TestMigrationGoesOnPastAnExpiredSnapshot: the API server compacts etcd
// every 5 minutes by default, so a listing longer than that finds its
// continue token expired. When the 410 answer offers a token to go on
// (an inconsistent continuation, which skips no object that existed when
// the migration began), the migrator takes it; starting over would redo
// every object done, and a listing longer than the compaction interval
// would never end (a cold make test saw the 10,000-object migration
// start over under load).
func TestMigrationGoesOnPastAnExpiredSnapshot(t *testing.T) {
	expired := func(token string) error {
		err := apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result.")
		err.ErrStatus.ListMeta.Continue = token
		return err
	}
	for _, tc := range []struct {
		name         string
		listErr      error
		wantContinue string
		wantRestarts int32
	}{
		{"the API server offers the rest at its newest snapshot", expired("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTF9"), "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTF9", 0},
		{"no way on offered: list again from the start", expired(""), "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			c := fake.NewClientBuilder().WithScheme(scheme).Build()
			var asked []string
			failing := interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
				List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					o := &client.ListOptions{}
					o.ApplyOptions(opts)
					asked = append(asked, o.Continue)
					return tc.listErr
				},
			})
			r := &WebhookInstallReconciler{Client: failing, APIReader: failing}
			crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "stable.example.com", Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "crontabs", ListKind: "CronTabList"}}}
			m := &v1alpha1.StorageMigrationStatus{Name: "crontabs.stable.example.com", To: "v2", Continue: "stale", Migrated: 3500, Total: 10000}
			done, err := r.migratePage(context.Background(), &installState{}, &crdState{name: m.Name, crd: crd}, m)
			if err != nil || done {
				t.Fatalf("migratePage = %v, %v; want not done, no error (the next pass goes on)", done, err)
			}
			if len(asked) != 1 || asked[0] != "stale" {
				t.Fatalf("listed with continue tokens %q, want the stored one", asked)
			}
			if m.Continue != tc.wantContinue || m.Restarts != tc.wantRestarts {
				t.Errorf("continue %q, restarts %d; want %q, %d", m.Continue, m.Restarts, tc.wantContinue, tc.wantRestarts)
			}
			if m.Migrated != 3500 {
				t.Errorf("migrated %d, want the progress kept (3500)", m.Migrated)
			}
		})
	}
}
