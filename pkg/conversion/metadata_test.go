package conversion

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestMetadataRule applies one metadata change per case in a v1 -> v2
// conversion and checks the API server's rule: name, namespace, uid and
// kind changes are errors naming the object, other metadata is silently
// restored, labels and annotations are kept.
func TestMetadataRule(t *testing.T) {
	meta := func(u *unstructured.Unstructured) map[string]any { return u.Object["metadata"].(map[string]any) }
	ownerRefs := []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "o1"}}
	tests := []struct {
		name      string
		mutate    func(u *unstructured.Unstructured)
		wantErr   string                 // substring of the metadata error; empty for success
		wantMeta  func(m map[string]any) // edits of the input metadata that the output must equal
		inputMeta func(m map[string]any) // edits of the input metadata before converting
	}{
		{name: "name", mutate: func(u *unstructured.Unstructured) { u.SetName("other") }, wantErr: `metadata.name changed from "my-cron" to "other"`},
		{name: "namespace", mutate: func(u *unstructured.Unstructured) { u.SetNamespace("kube-system") }, wantErr: `metadata.namespace changed from "default" to "kube-system"`},
		{name: "uid", mutate: func(u *unstructured.Unstructured) { u.SetUID("456") }, wantErr: `metadata.uid changed from "123" to "456"`},
		{name: "kind", mutate: func(u *unstructured.Unstructured) { u.SetKind("CronJob") }, wantErr: `kind changed from "CronTab" to "CronJob"`},
		{name: "metadata removed", mutate: func(u *unstructured.Unstructured) { delete(u.Object, "metadata") }, wantErr: "has no metadata"},
		{name: "invalid label", mutate: func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"app": "no spaces allowed"}) }, wantErr: "metadata.labels"},
		{name: "invalid annotation key", mutate: func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{"a/b/c": "x"}) }, wantErr: "metadata.annotations"},
		{name: "label that is not a string", mutate: func(u *unstructured.Unstructured) { meta(u)["labels"] = map[string]any{"app": int64(1)} }, wantErr: `metadata.labels: value of "app" must be a string`},

		{name: "kind cleared is filled in", mutate: func(u *unstructured.Unstructured) { delete(u.Object, "kind") }},
		{name: "generation restored", mutate: func(u *unstructured.Unstructured) { u.SetGeneration(99) }},
		{name: "resourceVersion restored", mutate: func(u *unstructured.Unstructured) { u.SetResourceVersion("1") }},
		{name: "creationTimestamp restored", mutate: func(u *unstructured.Unstructured) { delete(meta(u), "creationTimestamp") }},
		{name: "ownerReferences restored", mutate: func(u *unstructured.Unstructured) { meta(u)["ownerReferences"] = []any{} },
			inputMeta: func(m map[string]any) { m["ownerReferences"] = ownerRefs }},
		{name: "ownerReference edited in place restored",
			mutate: func(u *unstructured.Unstructured) {
				meta(u)["ownerReferences"].([]any)[0].(map[string]any)["name"] = "thief"
			},
			inputMeta: func(m map[string]any) { m["ownerReferences"] = ownerRefs }},
		{name: "finalizers restored", mutate: func(u *unstructured.Unstructured) { u.SetFinalizers([]string{"x/y"}) }},
		{name: "new metadata field dropped", mutate: func(u *unstructured.Unstructured) { u.SetGenerateName("gen-") }},

		{name: "label added kept", mutate: func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{"app": "cron", "tier": "batch"})
		}, wantMeta: func(m map[string]any) { m["labels"] = map[string]any{"app": "cron", "tier": "batch"} }},
		{name: "label edited in place kept", mutate: func(u *unstructured.Unstructured) {
			meta(u)["labels"].(map[string]any)["app"] = "cron2"
		}, wantMeta: func(m map[string]any) { m["labels"] = map[string]any{"app": "cron2"} }},
		{name: "labels removed", mutate: func(u *unstructured.Unstructured) { u.SetLabels(nil) },
			wantMeta: func(m map[string]any) { delete(m, "labels") }},
		{name: "annotations as map[string]string kept", mutate: func(u *unstructured.Unstructured) {
			meta(u)["annotations"] = map[string]string{"team": "ops"}
		}, wantMeta: func(m map[string]any) { m["annotations"] = map[string]any{"team": "ops"} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := &unstructured.Unstructured{Object: cronV1("default", "my-cron", "123", "* * * * *")}
			if tc.inputMeta != nil {
				tc.inputMeta(meta(in))
			}
			want := runtimeDeepCopyMeta(meta(in))
			if tc.wantMeta != nil {
				tc.wantMeta(want)
			}
			c := NewConverter(group, "CronTab").AddPair("v1", "v2", func(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
				tc.mutate(u)
				return u, nil
			})

			out, err := c.Convert(in, "v2")
			if tc.wantErr != "" {
				var cerr *Error
				if !errors.As(err, &cerr) || cerr.Reason != ReasonMetadata {
					t.Fatalf("error = %v, want a metadata error", err)
				}
				for _, part := range []string{"stable.example.com/v1 CronTab default/my-cron (uid 123) to v2: ", tc.wantErr} {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("error %q does not contain %q", err, part)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := meta(out); !reflect.DeepEqual(got, want) {
				t.Errorf("metadata =\n%v\nwant\n%v", got, want)
			}
			if out.GetKind() != "CronTab" || out.GetAPIVersion() != v2 {
				t.Errorf("kind %q apiVersion %q", out.GetKind(), out.GetAPIVersion())
			}
		})
	}
}

func runtimeDeepCopyMeta(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: map[string]any{"metadata": m}}).DeepCopy().Object["metadata"].(map[string]any)
}
