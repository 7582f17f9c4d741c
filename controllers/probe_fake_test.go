package controllers

import (
	"errors"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// probeAnswers is the verification's view of crd's objects: dryRun
// answers each dry-run create, list each list of one object (nil: none
// stored). A create that is not a dry run fails the probe.
func probeAnswers(crd *apiextensionsv1.CustomResourceDefinition, dryRun func() error, list func() error) *dynamicfake.FakeDynamicClient {
	return probeAnswersStoring(crd, dryRun, func() ([]unstructured.Unstructured, error) { return nil, list() })
}

// probeAnswersStoring is probeAnswers whose lists return the objects
// list gives, those of the list's namespace when it names one.
func probeAnswersStoring(crd *apiextensionsv1.CustomResourceDefinition, dryRun func() error, list func() ([]unstructured.Unstructured, error)) *dynamicfake.FakeDynamicClient {
	listKinds := map[schema.GroupVersionResource]string{}
	for _, v := range []string{"v1", "v2"} {
		listKinds[schema.GroupVersionResource{Group: crd.Spec.Group, Version: v, Resource: crd.Spec.Names.Plural}] = crd.Spec.Names.ListKind
	}
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	c.PrependReactor("create", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		create := action.(clienttesting.CreateActionImpl)
		if len(create.CreateOptions.DryRun) == 0 || create.CreateOptions.DryRun[0] != metav1.DryRunAll {
			return true, nil, errors.New("verification must only dry-run")
		}
		if err := dryRun(); err != nil {
			return true, nil, err
		}
		return true, create.GetObject(), nil
	})
	c.PrependReactor("list", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		items, err := list()
		if err != nil {
			return true, nil, err
		}
		var inScope []unstructured.Unstructured
		for _, item := range items {
			if ns := action.GetNamespace(); ns == "" || item.GetNamespace() == ns {
				inScope = append(inScope, item)
			}
		}
		return true, &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}, Items: inScope}, nil
	})
	return c
}
