package importcsv

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// Load reads an OLM bundle directory (the one holding manifests/ and
// metadata/, or manifests/ itself) with operator-framework's bundle
// loader, or a YAML file holding a ClusterServiceVersion and, optionally,
// more documents (CRDs and other objects, as in a bundle).
func Load(path string) (Input, error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Input{}, fmt.Errorf("%s does not exist: pass a ClusterServiceVersion YAML file or an OLM bundle directory", path)
	}
	if err != nil {
		return Input{}, err
	}
	if info.IsDir() {
		return loadBundle(path)
	}
	return loadFile(path)
}

func loadBundle(dir string) (Input, error) {
	bundle, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		return Input{}, fmt.Errorf("reading the bundle in %s: %w", dir, err)
	}
	in := Input{CSV: bundle.CSV, CRDs: map[string]CRD{}}
	for _, crd := range bundle.V1CRDs {
		in.CRDs[crd.Name] = crdV1(crd)
	}
	for _, crd := range bundle.V1beta1CRDs {
		in.CRDs[crd.Name] = crdV1beta1(crd)
	}
	for _, obj := range bundle.Objects {
		switch obj.GetKind() {
		case operatorsv1alpha1.ClusterServiceVersionKind, "CustomResourceDefinition":
		default:
			in.Others = append(in.Others, obj.GetKind()+"/"+obj.GetName())
		}
	}
	return in, nil
}

func loadFile(path string) (Input, error) {
	f, err := os.Open(path)
	if err != nil {
		return Input{}, err
	}
	defer f.Close()
	in := Input{CRDs: map[string]CRD{}}
	var kinds []string
	decoder := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var obj unstructured.Unstructured
		err := decoder.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Input{}, fmt.Errorf("reading %s: %w", path, err)
		}
		if len(obj.Object) == 0 {
			continue // an empty document
		}
		kind := obj.GetKind()
		kinds = append(kinds, kind+"/"+obj.GetName())
		switch {
		case kind == operatorsv1alpha1.ClusterServiceVersionKind:
			if in.CSV != nil {
				return Input{}, fmt.Errorf("%s holds two ClusterServiceVersions, %s and %s: pass a file or bundle with one", path, in.CSV.Name, obj.GetName())
			}
			in.CSV = &operatorsv1alpha1.ClusterServiceVersion{}
			if err := fromUnstructured(&obj, in.CSV); err != nil {
				return Input{}, fmt.Errorf("reading ClusterServiceVersion %s in %s: %w", obj.GetName(), path, err)
			}
		case kind == "CustomResourceDefinition" && obj.GetAPIVersion() == apiextensionsv1.SchemeGroupVersion.String():
			var crd apiextensionsv1.CustomResourceDefinition
			if err := fromUnstructured(&obj, &crd); err != nil {
				return Input{}, fmt.Errorf("reading CRD %s in %s: %w", obj.GetName(), path, err)
			}
			in.CRDs[crd.Name] = crdV1(&crd)
		case kind == "CustomResourceDefinition" && obj.GetAPIVersion() == apiextensionsv1beta1.SchemeGroupVersion.String():
			var crd apiextensionsv1beta1.CustomResourceDefinition
			if err := fromUnstructured(&obj, &crd); err != nil {
				return Input{}, fmt.Errorf("reading CRD %s in %s: %w", obj.GetName(), path, err)
			}
			in.CRDs[crd.Name] = crdV1beta1(&crd)
		default:
			in.Others = append(in.Others, kind+"/"+obj.GetName())
		}
	}
	if in.CSV == nil {
		found := "nothing"
		if len(kinds) > 0 {
			found = fmt.Sprint(kinds)
		}
		return Input{}, fmt.Errorf("%s holds no ClusterServiceVersion (found %s): pass the CSV file (kind: ClusterServiceVersion) or the bundle directory", path, found)
	}
	return in, nil
}

// fromUnstructured decodes obj as encoding/json would, so that types with
// their own JSON form (the CSV's version) decode as in a bundle.
func fromUnstructured(obj *unstructured.Unstructured, into any) error {
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, into)
}

func crdV1(crd *apiextensionsv1.CustomResourceDefinition) CRD {
	out := CRD{Name: crd.Name, Kind: crd.Spec.Names.Kind}
	if conv := crd.Spec.Conversion; conv != nil && conv.Strategy == apiextensionsv1.WebhookConverter && conv.Webhook != nil && conv.Webhook.ClientConfig != nil {
		out.Webhook = clientConfigTarget(conv.Webhook.ClientConfig.URL, conv.Webhook.ClientConfig.Service != nil, func() (string, string) {
			return conv.Webhook.ClientConfig.Service.Namespace, conv.Webhook.ClientConfig.Service.Name
		})
	}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			out.StorageVersion = v.Name
		}
	}
	return out
}

func crdV1beta1(crd *apiextensionsv1beta1.CustomResourceDefinition) CRD {
	out := CRD{Name: crd.Name, Kind: crd.Spec.Names.Kind, StorageVersion: crd.Spec.Version}
	if conv := crd.Spec.Conversion; conv != nil && conv.Strategy == apiextensionsv1beta1.WebhookConverter && conv.WebhookClientConfig != nil {
		out.Webhook = clientConfigTarget(conv.WebhookClientConfig.URL, conv.WebhookClientConfig.Service != nil, func() (string, string) {
			return conv.WebhookClientConfig.Service.Namespace, conv.WebhookClientConfig.Service.Name
		})
	}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			out.StorageVersion = v.Name
		}
	}
	return out
}

// clientConfigTarget describes where a conversion webhook client config
// points: "service <namespace>/<name>" or "a URL".
func clientConfigTarget(url *string, hasService bool, service func() (namespace, name string)) string {
	if url != nil || !hasService {
		return "a URL"
	}
	ns, name := service()
	return "service " + ns + "/" + name
}
