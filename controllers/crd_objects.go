package controllers

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	ctrl "sigs.k8s.io/controller-runtime"
)

// crdObjects reaches the objects of crd at version, in namespace ns (""
// for every namespace, and for a cluster-scoped CRD), by the resource the
// CRD itself names.
//
// The verification goes this way rather than through controller-runtime's
// client because that client finds a kind's resource through discovery:
// for each API group it has not seen it asks the API server for the
// group's resources and then rebuilds its map of every group it knows,
// holding a lock that every other worker's new group waits behind. Each
// install brings groups of its own, so the cost grows with the square of
// the installs: `make bench` P4 measured the rebuilds at 15% of the
// operator's CPU over 1,000 installs, with one discovery request per CRD.
// The CRD in hand already says group, resource and scope.
func (r *WebhookInstallReconciler) crdObjects(crd *apiextensionsv1.CustomResourceDefinition, version, ns string) dynamic.ResourceInterface {
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
	if crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		ns = ""
	}
	return r.Resources.Resource(gvr).Namespace(ns)
}

// resourcesFor is the client of crdObjects, on the manager's connection.
func resourcesFor(mgr ctrl.Manager) (dynamic.Interface, error) {
	return dynamic.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
}
