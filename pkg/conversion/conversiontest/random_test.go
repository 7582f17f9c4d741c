package conversiontest

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
	"k8s.io/utils/ptr"
)

func props(p map[string]apiextensionsv1.JSONSchemaProps) map[string]apiextensionsv1.JSONSchemaProps {
	return p
}

func enum(values ...string) []apiextensionsv1.JSON {
	out := make([]apiextensionsv1.JSON, len(values))
	for i, v := range values {
		out[i] = apiextensionsv1.JSON{Raw: []byte(v)}
	}
	return out
}

// everything uses every schema feature RandomObject claims to honour.
var everything = &apiextensionsv1.JSONSchemaProps{
	Type:     "object",
	Required: []string{"spec"},
	Properties: props(map[string]apiextensionsv1.JSONSchemaProps{
		"apiVersion": {Type: "string"},
		"kind":       {Type: "string"},
		"metadata":   {Type: "object"},
		"spec": {
			Type:     "object",
			Required: []string{"mode", "replicas"},
			Properties: props(map[string]apiextensionsv1.JSONSchemaProps{
				"mode":     {Type: "string", Enum: enum(`"Fast"`, `"Safe"`)},
				"level":    {Type: "integer", Enum: enum(`1`, `2`, `3`)},
				"replicas": {Type: "integer", Minimum: ptr.To(1.0), Maximum: ptr.To(5.0), ExclusiveMaximum: true},
				"even":     {Type: "integer", MultipleOf: ptr.To(2.0), Minimum: ptr.To(-7.0), Maximum: ptr.To(7.0)},
				"ratio":    {Type: "number", Minimum: ptr.To(0.0), Maximum: ptr.To(1.0)},
				"name":     {Type: "string", MinLength: ptr.To[int64](3), MaxLength: ptr.To[int64](5)},
				"since":    {Type: "string", Format: "date-time"},
				"day":      {Type: "string", Format: "date"},
				"blob":     {Type: "string", Format: "byte"},
				"enabled":  {Type: "boolean"},
				"port":     {XIntOrString: true, AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}},
				"tags": {Type: "array", MinItems: ptr.To[int64](1), MaxItems: ptr.To[int64](4), XListType: ptr.To("set"),
					Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", Enum: enum(`"a"`, `"b"`, `"c"`)}}},
				"ports": {Type: "array", XListType: ptr.To("map"), XListMapKeys: []string{"name", "protocol"},
					Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object",
						Properties: props(map[string]apiextensionsv1.JSONSchemaProps{
							"name":     {Type: "string", MaxLength: ptr.To[int64](1)},
							"protocol": {Type: "string", Enum: enum(`"TCP"`, `"UDP"`)},
							"port":     {Type: "integer"},
						}),
					}}},
				"env": {Type: "object", MaxProperties: ptr.To[int64](2),
					AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
				"template": {Type: "object", XEmbeddedResource: true, XPreserveUnknownFields: ptr.To(true),
					Properties: props(map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)}})},
				"nested": {Type: "object", Properties: props(map[string]apiextensionsv1.JSONSchemaProps{
					"deeper": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "number"}}}}},
				})},
			}),
		},
	}),
}

func TestRandomObjectIsValid(t *testing.T) {
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(everything, &internal, nil); err != nil {
		t.Fatal(err)
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		t.Fatal(err)
	}
	if errs := structuralschema.ValidateStructural(nil, structural); len(errs) > 0 {
		t.Fatalf("the test schema is not structural: %v", errs)
	}
	// The OpenAPI validator the API server builds on; the schema's JSON
	// is the same in both types.
	var openapi spec.Schema
	if raw, err := json.Marshal(everything); err != nil || json.Unmarshal(raw, &openapi) != nil {
		t.Fatalf("schema to OpenAPI: %v", err)
	}
	validator := validate.NewSchemaValidator(&openapi, nil, "", strfmt.Default)

	seen := map[string]int{}
	for seed := range uint64(500) {
		obj := RandomObject(rand.New(rand.NewPCG(seed, 0)), everything)
		// What the API server validates is what came through JSON.
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(append(raw[:len(raw)-1], []byte(`,"kind":"K","apiVersion":"a/v1"}`)...)); err != nil {
			t.Fatalf("seed %d: %s: %v", seed, raw, err)
		}
		if !equal(u.Object["spec"], obj["spec"]) {
			t.Errorf("seed %d: the object does not survive JSON exactly:\n%v\n%v", seed, obj["spec"], u.Object["spec"])
		}
		if res := validator.Validate(u.Object); !res.IsValid() {
			t.Errorf("seed %d: invalid object %s: %v", seed, raw, res.AsError())
		}
		if errs := listtype.ValidateListSetsAndMaps(field.NewPath(""), structural, u.Object); len(errs) > 0 {
			t.Errorf("seed %d: invalid list %s: %v", seed, raw, errs)
		}
		for k := range obj["spec"].(map[string]any) {
			seen[k]++
		}
	}
	// Optional fields are sometimes there and sometimes not.
	for name := range everything.Properties["spec"].Properties {
		switch n := seen[name]; {
		case name == "mode" || name == "replicas":
			if n != 500 {
				t.Errorf("required spec.%s present %d of 500 times", name, n)
			}
		case n == 0 || n == 500:
			t.Errorf("optional spec.%s present %d of 500 times", name, n)
		}
	}
}

func TestRandomObjectIsDeterministic(t *testing.T) {
	for seed := range uint64(20) {
		a := RandomObject(rand.New(rand.NewPCG(seed, 1)), everything)
		b := RandomObject(rand.New(rand.NewPCG(seed, 1)), everything)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d gave two objects:\n%v\n%v", seed, a, b)
		}
	}
}

func equal(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

var cronV2Fields = []string{"minute", "hour", "dayOfMonth", "month", "dayOfWeek", "image"}

// cronV2Schema is the KEP's v2 CronTab. The spec fields are required: an
// absent field would come back from v1 as "", which this fuzz test found.
var cronV2Schema = &apiextensionsv1.JSONSchemaProps{
	Type:     "object",
	Required: []string{"spec"},
	Properties: props(map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Required: cronV2Fields, Properties: props(map[string]apiextensionsv1.JSONSchemaProps{
			"minute": {Type: "string"}, "hour": {Type: "string"}, "dayOfMonth": {Type: "string"},
			"month": {Type: "string"}, "dayOfWeek": {Type: "string"}, "image": {Type: "string"},
		})},
		"status": {Type: "object", Properties: props(map[string]apiextensionsv1.JSONSchemaProps{
			"active": {Type: "integer"},
			"conditions": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", Properties: props(map[string]apiextensionsv1.JSONSchemaProps{"type": {Type: "string"}, "status": {Type: "string"}}),
			}}},
		})},
	}),
}

// FuzzCronTabRoundTrip is the fuzz test the package documents: random v2
// CronTabs must survive v2 -> v1 -> v2. go test runs the seeds; go test
// -fuzz explores more.
func FuzzCronTabRoundTrip(f *testing.F) {
	for _, seed := range []int64{0, 1, 2, 42, -7} {
		f.Add(seed)
	}
	conv := cronTab(false)
	f.Fuzz(func(t *testing.T, seed int64) {
		obj := &unstructured.Unstructured{Object: RandomObject(rand.New(rand.NewPCG(uint64(seed), 0)), cronV2Schema)}
		obj.SetAPIVersion("stable.example.com/v2")
		obj.SetKind("CronTab")
		obj.SetName("fuzz")
		RoundTrip(t, conv, obj, []string{"v1", "v2"})
	})
}
