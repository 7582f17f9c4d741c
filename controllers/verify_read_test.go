package controllers

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// The read of a stored object reports what reading the install's
// namespace first, then everywhere, reported: an object of the namespace
// by name whenever one is stored there, any other object without its
// name, and a list's failure as the namespace's own only when the list of
// the namespace failed. It lists everywhere first and the namespace only
// when that does not settle it, so a CRD with nothing stored costs one
// list, not two.
func TestReadStoredListsTheNamespaceOnlyWhenEverywhereDoesNotSettleIt(t *testing.T) {
	refused := func(object string) error {
		return statusErr(http.StatusInternalServerError, metav1.StatusReasonInternalError,
			`conversion webhook for example.com/v1, Kind=Widget failed: `+object+` is refused`)
	}
	forbidden := statusErr(http.StatusForbidden, metav1.StatusReasonForbidden, `widgets.example.com is forbidden: cannot list resource "widgets" at the cluster scope`)
	for _, tc := range []struct {
		name         string
		clusterScope bool
		stored       []string         // namespace/name, in key order
		failing      map[string]error // a list's error by its namespace ("" everywhere)
		wantLists    []string         // the lists' namespaces, in order
		wantRead     string           // "" : nothing read
		wantFailure  string           // a substring of the failure's message
		wantForbid   bool
	}{
		{name: "nothing stored: one list", wantLists: []string{""}},
		{name: "the first object is the namespace's: one list", stored: []string{"team-a/w1", "team-b/w2"},
			wantLists: []string{""}, wantRead: "read team-a/w1 at v2 through the webhook"},
		{name: "objects elsewhere only: the namespace is listed, the object not named", stored: []string{"team-b/w2"},
			wantLists: []string{"", "team-a"}, wantRead: "read an object outside namespace team-a at v2 through the webhook"},
		{name: "an object elsewhere first: the namespace's is named", stored: []string{"aaa/w0", "team-a/w1"},
			wantLists: []string{"", "team-a"}, wantRead: "read team-a/w1 at v2 through the webhook"},
		{name: "refused everywhere and in the namespace: the namespace's failure", stored: []string{"team-a/w1"},
			failing:   map[string]error{"": refused("team-a/w1"), "team-a": refused("team-a/w1")},
			wantLists: []string{"", "team-a"}, wantFailure: refusedPrefix + " an object to v2"},
		{name: "refused elsewhere, nothing in the namespace: kept out of the status", stored: []string{"team-b/w2"},
			failing:   map[string]error{"": refused("team-b/w2")},
			wantLists: []string{"", "team-a"}, wantFailure: "its name and the webhook's answer are kept out of this status"},
		{name: "refused elsewhere, the namespace's converts: read", stored: []string{"aaa/w0", "team-a/w1"},
			failing:   map[string]error{"": refused("aaa/w0")},
			wantLists: []string{"", "team-a"}, wantRead: "read team-a/w1 at v2 through the webhook"},
		{name: "forbidden everywhere, the namespace's converts: read", stored: []string{"team-a/w1"},
			failing:   map[string]error{"": forbidden},
			wantLists: []string{"", "team-a"}, wantRead: "read team-a/w1 at v2 through the webhook"},
		{name: "forbidden everywhere, nothing in the namespace: forbidden", stored: []string{"team-b/w2"},
			failing:   map[string]error{"": forbidden},
			wantLists: []string{"", "team-a"}, wantForbid: true},
		{name: "a cluster-scoped CRD: one list, the object not named", clusterScope: true, stored: []string{"/w1"},
			wantLists: []string{""}, wantRead: "read an object outside namespace team-a at v2 through the webhook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := rigCRDObject()
			if tc.clusterScope {
				crd.Spec.Scope = apiextensionsv1.ClusterScoped
			}
			var lists []string
			resources := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				{Group: "example.com", Version: "v2", Resource: "widgets"}: "WidgetList",
			})
			resources.PrependReactor("list", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
				ns := action.GetNamespace()
				lists = append(lists, ns)
				if err := tc.failing[ns]; err != nil {
					return true, nil, err
				}
				list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
				for _, key := range tc.stored {
					objNS, name, _ := strings.Cut(key, "/")
					if ns == "" || objNS == ns {
						w := unstructured.Unstructured{}
						w.SetAPIVersion("example.com/v2")
						w.SetKind("Widget")
						w.SetNamespace(objNS)
						w.SetName(name)
						list.Items = append(list.Items, w)
					}
				}
				if len(list.Items) > 1 {
					list.Items = list.Items[:1] // Limit: 1
				}
				return true, list, nil
			})
			r := &WebhookInstallReconciler{Resources: resources}

			got := r.readStored(context.Background(), rigInstall(v1alpha1.WebhookInstallStatus{}), crd, "v2")

			if strings.Join(lists, ",") != strings.Join(tc.wantLists, ",") {
				t.Errorf("listed namespaces %q, want %q", lists, tc.wantLists)
			}
			if got.read != tc.wantRead {
				t.Errorf("read %q, want %q", got.read, tc.wantRead)
			}
			switch {
			case tc.wantForbid:
				var fe *verifyForbiddenError
				if got.failed == nil || got.failed.forbidden == nil || !errors.As(got.failed.forbidden, &fe) {
					t.Errorf("failure %+v, want forbidden", got.failed)
				}
			case tc.wantFailure != "":
				if got.failed == nil || !strings.Contains(got.failed.message, tc.wantFailure) {
					t.Errorf("failure %+v, want a message with %q", got.failed, tc.wantFailure)
				}
			case got.failed != nil:
				t.Errorf("failure %+v, want none", got.failed)
			}
		})
	}
}

// rigCRDObject is a namespaced CRD served at v1 (storage) and v2.
func rigCRDObject() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: rigCRD},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true},
				{Name: "v2", Served: true},
			},
		},
	}
}
