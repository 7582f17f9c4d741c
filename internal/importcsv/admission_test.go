package importcsv

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// The WebhookInstall CRD as the API server is given it, and the limits
// the API server runs its CEL rules with (k8s.io/apiserver/pkg/apis/cel).
const (
	crdPath              = "../../config/crd/bases/operators.hookwright.dev_webhookinstalls.yaml"
	celPerCallLimit      = 1000000
	celRuntimeCostBudget = 10000000
)

type crdSchema struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
}

var loadSchema = sync.OnceValues(func() (*crdSchema, error) {
	data, err := os.ReadFile(filepath.FromSlash(crdPath))
	if err != nil {
		return nil, err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		return nil, err
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, &internal, nil); err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
	if err != nil {
		return nil, err
	}
	return &crdSchema{structural: structural, validator: validator}, nil
})

// admissionErrors runs what the API server runs on a created custom
// resource, in process: schema defaulting, OpenAPI validation, list-type
// checks and the CEL rules of config/crd/bases. Object metadata
// validation is left out (Convert checks the name).
func admissionErrors(t *testing.T, manifest []byte) field.ErrorList {
	t.Helper()
	schema, err := loadSchema()
	if err != nil {
		t.Fatalf("loading the WebhookInstall CRD schema from %s: %v", crdPath, err)
	}
	data, err := yaml.YAMLToJSON(manifest)
	if err != nil {
		t.Fatalf("output is not YAML: %v", err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(data, &obj); err != nil { // integers as int64, as the API server decodes them
		t.Fatalf("output is not an object: %v", err)
	}
	structuraldefaulting.Default(obj, schema.structural)
	errs := apiservervalidation.ValidateCustomResource(nil, obj, schema.validator)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, schema.structural, obj)...)
	celErrs, _ := cel.NewValidator(schema.structural, true, celPerCallLimit).Validate(context.Background(), nil, schema.structural, obj, nil, celRuntimeCostBudget)
	return append(errs, celErrs...)
}
