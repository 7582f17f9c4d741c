package runner

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCensusLineSizesManagedFieldsApart: the P5 census says how much of
// what is served is managedFields, which Hookwright's cache drops.
func TestCensusLineSizesManagedFieldsApart(t *testing.T) {
	half := strings.Repeat("x", 1<<19) // 512 KiB
	secret := func(name string, withFields bool) corev1.Secret {
		s := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if withFields {
			s.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m", FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:` + half + `":{}}}}`)}}}
		} else {
			s.StringData = map[string]string{"k": half}
		}
		return s
	}
	cases := []struct {
		withFields bool
		want       string
	}{
		{true, "Secrets: 2 objects, 1.0 MiB of JSON, 1.0 MiB of it managedFields"},
		{false, "Secrets: 2 objects, 1.0 MiB of JSON, 0.0 MiB of it managedFields"},
	}
	for _, tc := range cases {
		list := &corev1.SecretList{Items: []corev1.Secret{secret("a", tc.withFields), secret("b", tc.withFields)}}
		if got := censusLine("Secrets", list); got != tc.want {
			t.Errorf("managedFields %v: got %q, want %q", tc.withFields, got, tc.want)
		}
	}
}
