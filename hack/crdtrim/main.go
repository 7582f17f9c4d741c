// Command crdtrim drops the descriptions inside the Kubernetes types that
// the WebhookInstall CRD embeds (the Deployment spec of
// spec.install.spec.deployments[]), keeping every validation rule and
// every description of Hookwright's own fields. Those descriptions are
// Kubernetes' own API docs (`kubectl explain deployment.spec`) and made
// up two thirds of an 860 KB CRD: too close to etcd's object size limit
// to ever serve a second version. `make manifests` runs it after
// controller-gen; never edit its output.
package main

import (
	"bytes"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// embedded are the schema paths whose subtrees lose their descriptions:
// property names from the version's openAPIV3Schema ("[]" steps into
// array items). The field's own description stays.
var embedded = [][]string{
	{"spec", "install", "spec", "deployments", "[]", "spec"},
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crdtrim <CRD YAML file>")
		os.Exit(2)
	}
	if err := trimFile(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "crdtrim:", err)
		os.Exit(1)
	}
}

func trimFile(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := trim(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, out, 0o644)
}

func trim(raw []byte) ([]byte, error) {
	header := []byte("---\n")
	var crd map[string]any
	if err := yaml.Unmarshal(bytes.TrimPrefix(raw, header), &crd); err != nil {
		return nil, err
	}
	spec, _ := crd["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	if len(versions) == 0 {
		return nil, fmt.Errorf("no spec.versions")
	}
	for _, v := range versions {
		schema, _ := lookup(v, "schema", "openAPIV3Schema").(map[string]any)
		for _, path := range embedded {
			node, ok := schemaAt(schema, path)
			if !ok {
				return nil, fmt.Errorf("schema has no %v: update hack/crdtrim", path)
			}
			description := node["description"]
			dropDescriptions(node)
			if description != nil {
				node["description"] = description
			}
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return nil, err
	}
	return append(header, out...), nil
}

func lookup(node any, keys ...string) any {
	for _, k := range keys {
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[k]
	}
	return node
}

// schemaAt walks properties (and items for "[]") down path.
func schemaAt(schema map[string]any, path []string) (map[string]any, bool) {
	node := schema
	for _, step := range path {
		var next any
		if step == "[]" {
			next = node["items"]
		} else {
			next = lookup(node, "properties", step)
		}
		m, ok := next.(map[string]any)
		if !ok {
			return nil, false
		}
		node = m
	}
	return node, true
}

// dropDescriptions removes every schema description under node. A
// property named "description" (a key of "properties") is a field, not
// documentation, and is kept.
func dropDescriptions(node any) {
	switch n := node.(type) {
	case map[string]any:
		delete(n, "description")
		for key, child := range n {
			if key == "properties" {
				if props, ok := child.(map[string]any); ok {
					for _, p := range props {
						dropDescriptions(p)
					}
				}
				continue
			}
			dropDescriptions(child)
		}
	case []any:
		for _, child := range n {
			dropDescriptions(child)
		}
	}
}
