package main

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const crd = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
spec:
  versions:
  - name: v1alpha1
    schema:
      openAPIV3Schema:
        description: ours
        properties:
          spec:
            description: ours
            properties:
              install:
                properties:
                  spec:
                    properties:
                      deployments:
                        items:
                          properties:
                            spec:
                              description: the embedded field's own description stays
                              properties:
                                replicas:
                                  description: Kubernetes' docs, dropped
                                  format: int32
                                  minimum: 0
                                  type: integer
                                description:
                                  description: a field named description, dropped docs
                                  maxLength: 10
                                  type: string
                              x-kubernetes-validations:
                              - message: kept
                                rule: self.replicas >= 0
                              type: object
                          type: object
                        type: array
                    type: object
                type: object
            type: object
        type: object
`

func TestTrimDropsOnlyTheEmbeddedDocs(t *testing.T) {
	out, err := trim([]byte(crd))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "---\n") {
		t.Errorf("the document marker is lost:\n%s", out)
	}
	var got, want map[string]any
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(crd), &want); err != nil {
		t.Fatal(err)
	}
	spec, _ := schemaAt(lookup(want, "spec", "versions").([]any)[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any), embedded[0])
	props := spec["properties"].(map[string]any)
	delete(props["replicas"].(map[string]any), "description")
	delete(props["description"].(map[string]any), "description")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("trim changed more than the embedded descriptions:\n%s", out)
	}
}

func TestTrimFailsWhenThePathMoved(t *testing.T) {
	moved := strings.Replace(crd, "deployments:", "workloads:", 1)
	if _, err := trim([]byte(moved)); err == nil || !strings.Contains(err.Error(), "update hack/crdtrim") {
		t.Errorf("trim = %v, want an error saying the path is gone", err)
	}
}

// TestShippedCRDsFitEtcd: the WebhookInstall CRD, in config/ and in the
// bundle, stays well under etcd's 1.5 MiB request limit, with room for a
// second served version.
func TestShippedCRDsFitEtcd(t *testing.T) {
	for _, path := range []string{
		"../../config/crd/bases/operators.hookwright.dev_webhookinstalls.yaml",
		"../../bundle/manifests/operators.hookwright.dev_webhookinstalls.yaml",
	} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() >= 400_000 {
			t.Errorf("%s is %d bytes, want under 400 KB", path, info.Size())
		}
	}
}
