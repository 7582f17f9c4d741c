package controllers

import (
	"reflect"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

func crdWithVersions(storage string, stored []string, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	for _, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: v == storage})
	}
	crd.Status.StoredVersions = stored
	return crd
}

func TestStaleAndRemovableVersions(t *testing.T) {
	cases := []struct {
		name             string
		crd              *apiextensionsv1.CustomResourceDefinition
		stale, removable []string
	}{
		{"one version", crdWithVersions("v1", []string{"v1"}, "v1"), nil, nil},
		{"storage moved to v2, v1 still stored", crdWithVersions("v2", []string{"v1", "v2"}, "v1", "v2"), []string{"v1"}, nil},
		{"migrated: v1 stores nothing", crdWithVersions("v2", []string{"v2"}, "v1", "v2"), nil, []string{"v1"}},
		{"v2 served, never stored", crdWithVersions("v1", []string{"v1"}, "v1", "v2"), nil, []string{"v2"}},
		{"three versions, two stale", crdWithVersions("v3", []string{"v1", "v2", "v3"}, "v1", "v2", "v3"), []string{"v1", "v2"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := staleVersions(tc.crd); !equalStrings(got, tc.stale) {
				t.Errorf("staleVersions = %v, want %v", got, tc.stale)
			}
			if got := removableVersions(tc.crd); !equalStrings(got, tc.removable) {
				t.Errorf("removableVersions = %v, want %v", got, tc.removable)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// notStarted decides whether a due migration may start: the policy, the
// request annotation and the conversion's state.
func TestMigrationStartDecision(t *testing.T) {
	const crd = "crontabs.stable.example.com"
	install := func(policy v1alpha1.MigrationPolicy, request string) *v1alpha1.WebhookInstall {
		whi := &v1alpha1.WebhookInstall{ObjectMeta: metav1.ObjectMeta{Name: "crontab"}}
		whi.Spec.StorageMigration.CRDs = []v1alpha1.CRDMigrationPolicy{{Name: crd, Policy: policy}}
		if request != "" {
			whi.Annotations = map[string]string{v1alpha1.AnnotationMigrateStorage: request}
		}
		return whi
	}
	verified := &crdState{name: crd, state: v1alpha1.ConversionVerified}
	refused := &crdState{name: crd, state: v1alpha1.ConversionFailed, verifyReason: v1alpha1.ReasonConversionRefused}
	unreachable := &crdState{name: crd, state: v1alpha1.ConversionFailed, verifyReason: v1alpha1.ReasonWebhookUnreachable}
	done := &v1alpha1.StorageMigrationStatus{Name: crd, State: v1alpha1.MigrationSucceeded, Request: "retire v1", Migrated: 42,
		StartedAt: &metav1.Time{Time: time.Unix(100, 0)}, CompletedAt: &metav1.Time{Time: time.Unix(200, 0)}}

	cases := []struct {
		name       string
		install    *v1alpha1.WebhookInstall
		crd        *crdState
		prev       *v1alpha1.StorageMigrationStatus
		wantReason string // "" means it starts
	}{
		{"Automatic, verified: starts", install(v1alpha1.MigrationAutomatic, ""), verified, nil, ""},
		{"Automatic by default", &v1alpha1.WebhookInstall{}, verified, nil, ""},
		{"Automatic, the webhook refuses some object: starts, to stop at it and name it", install(v1alpha1.MigrationAutomatic, ""), refused, nil, ""},
		{"Automatic, webhook unreachable: waits", install(v1alpha1.MigrationAutomatic, ""), unreachable, nil, v1alpha1.ReasonMigrationWaiting},
		{"Disabled", install(v1alpha1.MigrationDisabled, "retire v1"), verified, nil, v1alpha1.ReasonMigrationNotRequested},
		{"OnRequest without a request", install(v1alpha1.MigrationOnRequest, ""), verified, nil, v1alpha1.ReasonMigrationNotRequested},
		{"OnRequest with a new request", install(v1alpha1.MigrationOnRequest, "retire v1"), verified, nil, ""},
		{"OnRequest, the request was carried out already", install(v1alpha1.MigrationOnRequest, "retire v1"), verified, done, v1alpha1.ReasonMigrationNotRequested},
		{"OnRequest, another request after one carried out", install(v1alpha1.MigrationOnRequest, "retire v2"), verified, done, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &installState{install: tc.install}
			got := notStarted(s, tc.crd, tc.prev, []string{"v1"}, "v2")
			switch {
			case tc.wantReason == "" && got != nil:
				t.Fatalf("did not start: %s %s: %s", got.State, got.Reason, got.Message)
			case tc.wantReason != "" && got == nil:
				t.Fatalf("started, want %s", tc.wantReason)
			case got != nil && got.Reason != tc.wantReason:
				t.Fatalf("reason %s, want %s (%s)", got.Reason, tc.wantReason, got.Message)
			}
			if got != nil && tc.prev != nil && (got.Migrated != tc.prev.Migrated || !got.CompletedAt.Equal(tc.prev.CompletedAt)) {
				t.Errorf("the last completed migration's audit fields are lost: %+v", got)
			}
		})
	}
}

// A StorageVersionMigration's name is the same for one migration across
// restarts, and differs for another.
func TestStorageVersionMigrationName(t *testing.T) {
	start := &metav1.Time{Time: time.Unix(1000, 0)}
	a := storageVersionMigrationName("crontabs.stable.example.com", "v2", start)
	if b := storageVersionMigrationName("crontabs.stable.example.com", "v2", &metav1.Time{Time: time.Unix(1000, 0)}); a != b {
		t.Errorf("same migration, names %s and %s", a, b)
	}
	for _, other := range []string{
		storageVersionMigrationName("crontabs.stable.example.com", "v3", start),
		storageVersionMigrationName("crontabs.stable.example.com", "v2", &metav1.Time{Time: time.Unix(2000, 0)}),
		storageVersionMigrationName("widgets.stable.example.com", "v2", start),
	} {
		if other == a {
			t.Errorf("another migration has the same name %s", a)
		}
	}
	if len(a) > 63 {
		t.Errorf("name %s is longer than 63 characters", a)
	}
}

// A pass that began from a stale cache changes no record it did not
// touch: the status written keeps the live records (the bench's smoke run
// lost a finished migration's record to such a pass).
func TestMergeMigrations(t *testing.T) {
	done := v1alpha1.StorageMigrationStatus{Name: "a", State: v1alpha1.MigrationSucceeded, Migrated: 50}
	other := v1alpha1.StorageMigrationStatus{Name: "b", State: v1alpha1.MigrationRunning, Migrated: 500}
	next := v1alpha1.StorageMigrationStatus{Name: "b", State: v1alpha1.MigrationRunning, Migrated: 1000}
	got := mergeMigrations([]v1alpha1.StorageMigrationStatus{done, other}, []v1alpha1.StorageMigrationStatus{next})
	if len(got) != 2 || !reflect.DeepEqual(got[0], done) || got[1].Migrated != 1000 {
		t.Errorf("merge = %+v, want a kept as is and b at 1000", got)
	}
	if got := mergeMigrations([]v1alpha1.StorageMigrationStatus{done}, nil); len(got) != 1 || !reflect.DeepEqual(got[0], done) {
		t.Errorf("a pass that changed nothing dropped or changed a record: %+v", got)
	}
	fresh := v1alpha1.StorageMigrationStatus{Name: "c", State: v1alpha1.MigrationRunning}
	if got := mergeMigrations(nil, []v1alpha1.StorageMigrationStatus{fresh}); len(got) != 1 || got[0].Name != "c" {
		t.Errorf("a new record is lost: %+v", got)
	}
}
