package verify

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Sample is one object read from a sample file.
type Sample struct {
	Path   string
	Object *unstructured.Unstructured
}

// LoadCRD reads a CustomResourceDefinition from a YAML or JSON file.
func LoadCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		return nil, fmt.Errorf("%s is not a CustomResourceDefinition: %w", path, err)
	}
	if crd.Kind != "CustomResourceDefinition" {
		return nil, fmt.Errorf("%s holds a %q, not a CustomResourceDefinition", path, crd.Kind)
	}
	return crd, nil
}

// LoadSamples reads every .yaml, .yml and .json file under dir (documents
// separated by ---), in path order.
func LoadSamples(dir string) ([]Sample, error) {
	var samples []Sample
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, doc := range bytes.Split(raw, []byte("\n---")) {
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			// Through JSON and decodeObject, as answers are decoded, so
			// that numbers compare by value (YAML alone gives float64).
			raw, err := yaml.YAMLToJSON(doc)
			if err != nil {
				return fmt.Errorf("%s (document %d): %w", path, i+1, err)
			}
			obj, err := decodeObject(raw)
			if err != nil {
				return fmt.Errorf("%s (document %d): not an object: %w", path, i+1, err)
			}
			u := &unstructured.Unstructured{Object: obj}
			if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
				return fmt.Errorf("%s (document %d): a sample needs apiVersion, kind and metadata.name", path, i+1)
			}
			samples = append(samples, Sample{Path: path, Object: u})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(samples) == 0 {
		return nil, fmt.Errorf("no sample objects under %s", dir)
	}
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].Path < samples[j].Path })
	return samples, nil
}

func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}
