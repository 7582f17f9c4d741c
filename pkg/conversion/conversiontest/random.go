package conversiontest

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kjson "sigs.k8s.io/json"
)

// Bounds where the schema sets none, to keep objects small and fuzzing fast.
const (
	defaultItems  = 3 // array items and map entries beyond the minimum
	defaultString = 8 // string length beyond the minimum
	defaultRange  = 1000
	maxDepth      = 32 // a guard: structural schemas are not recursive
)

const stringChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._"

// RandomObject returns a random object valid for a structural schema (a
// CRD version's openAPIV3Schema), the same for the same random source, so
// a fuzz test can take a seed. It honours types, enum, required, optional
// properties (present half the time), additionalProperties maps,
// min/max items, length, value and properties, multipleOf for integers,
// list-type set and map uniqueness, int-or-string, embedded resources,
// and the date-time, date and byte formats. It does not honour pattern,
// other formats, CEL rules or oneOf/anyOf/allOf/not. Numbers always have
// a fractional part, because an integral float comes back from JSON as an
// int64 and would fail an exact comparison for no real reason. Where
// x-kubernetes-preserve-unknown-fields is set it adds an unknown field
// half the time, so round trips prove unknown fields survive too.
func RandomObject(r *rand.Rand, schema *apiextensionsv1.JSONSchemaProps) map[string]any {
	g := generator{r: r}
	obj := g.object(schema, 0, nil)
	return obj
}

type generator struct{ r *rand.Rand }

func (g generator) value(s *apiextensionsv1.JSONSchemaProps, depth int) any {
	switch {
	case len(s.Enum) > 0:
		return g.enum(s.Enum)
	case s.XIntOrString:
		if g.r.IntN(2) == 0 {
			return g.integer(s)
		}
		return g.string(s)
	}
	switch s.Type {
	case "object":
		return g.object(s, depth, nil)
	case "array":
		return g.array(s, depth)
	case "string":
		return g.string(s)
	case "integer":
		return g.integer(s)
	case "number":
		return g.number(s)
	case "boolean":
		return g.r.IntN(2) == 0
	default:
		if len(s.Properties) > 0 {
			return g.object(s, depth, nil)
		}
		// Untyped, i.e. x-kubernetes-preserve-unknown-fields: anything goes.
		return g.string(s)
	}
}

// object fills required and forced properties always and the others half
// the time; forced are the keys of a list-type map item.
func (g generator) object(s *apiextensionsv1.JSONSchemaProps, depth int, forced []string) map[string]any {
	obj := map[string]any{}
	if s == nil || depth > maxDepth {
		return obj
	}
	limit := math.MaxInt
	if s.MaxProperties != nil {
		limit = int(*s.MaxProperties)
	}
	// Sorted, because map order would make a seed give different objects.
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		must := slices.Contains(s.Required, name) || slices.Contains(forced, name)
		if must || (len(obj) < limit && g.r.IntN(2) == 0) {
			prop := s.Properties[name]
			obj[name] = g.value(&prop, depth+1)
		}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		n := g.count(s.MinProperties, s.MaxProperties)
		for len(obj) < n {
			obj[g.word(1+g.r.IntN(defaultString))] = g.value(s.AdditionalProperties.Schema, depth+1)
		}
	}
	if s.XEmbeddedResource {
		// An embedded resource needs apiVersion and kind to be valid.
		if _, ok := obj["apiVersion"]; !ok {
			obj["apiVersion"] = "example.com/v1"
		}
		if _, ok := obj["kind"]; !ok {
			obj["kind"] = "Example"
		}
	}
	if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields && len(obj) < limit && g.r.IntN(2) == 0 {
		key := "unknown" + g.word(4)
		if _, taken := s.Properties[key]; !taken {
			obj[key] = g.word(1 + g.r.IntN(defaultString))
		}
	}
	return obj
}

func (g generator) array(s *apiextensionsv1.JSONSchemaProps, depth int) []any {
	items := []any{}
	if s.Items == nil || s.Items.Schema == nil || depth > maxDepth {
		return items
	}
	item := s.Items.Schema
	n := g.count(s.MinItems, s.MaxItems)
	listType := ""
	if s.XListType != nil {
		listType = *s.XListType
	}
	seen := map[string]bool{}
	// Unique lists may run out of distinct values (an enum of two), so
	// give up after a few tries rather than loop.
	for tries := 0; len(items) < n && tries < 10*n+10; tries++ {
		var v any
		if listType == "map" {
			v = g.object(item, depth+1, s.XListMapKeys)
		} else {
			v = g.value(item, depth+1)
		}
		if listType == "set" || listType == "map" {
			key := identity(v, listType, s.XListMapKeys)
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		items = append(items, v)
	}
	return items
}

// identity is what must be unique in a set (the value) or a map list (the keys).
func identity(v any, listType string, mapKeys []string) string {
	if m, ok := v.(map[string]any); ok && listType == "map" {
		keys := make([]any, len(mapKeys))
		for i, k := range mapKeys {
			keys[i] = m[k]
		}
		v = keys
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// count is a size in [min, max], with max defaulting to min+defaultItems.
func (g generator) count(minimum, maximum *int64) int {
	lo := int64(0)
	if minimum != nil {
		lo = *minimum
	}
	hi := lo + defaultItems
	if maximum != nil && *maximum < hi {
		hi = *maximum
	}
	if hi <= lo {
		return int(lo)
	}
	return int(lo + g.r.Int64N(hi-lo+1))
}

func (g generator) string(s *apiextensionsv1.JSONSchemaProps) string {
	switch s.Format {
	case "date-time":
		return g.time().Format(time.RFC3339)
	case "date":
		return g.time().Format(time.DateOnly)
	case "byte":
		b := make([]byte, 1+g.r.IntN(defaultString)) // "" is not valid base64 for OpenAPI
		for i := range b {
			b[i] = byte(g.r.IntN(256))
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	return g.word(g.count(s.MinLength, s.MaxLength))
}

func (g generator) word(n int) string {
	var b strings.Builder
	for range n {
		b.WriteByte(stringChars[g.r.IntN(len(stringChars))])
	}
	return b.String()
}

func (g generator) time() time.Time {
	return time.Unix(946684800+g.r.Int64N(100*365*24*3600), 0).UTC() // 2000 to 2100
}

func (g generator) integer(s *apiextensionsv1.JSONSchemaProps) int64 {
	lo, hi := int64(-defaultRange), int64(defaultRange)
	if s.Minimum != nil {
		lo = int64(math.Ceil(*s.Minimum))
		if s.ExclusiveMinimum && float64(lo) == *s.Minimum {
			lo++
		}
		if s.Maximum == nil {
			hi = lo + 2*defaultRange
		}
	}
	if s.Maximum != nil {
		hi = int64(math.Floor(*s.Maximum))
		if s.ExclusiveMaximum && float64(hi) == *s.Maximum {
			hi--
		}
		if s.Minimum == nil {
			lo = hi - 2*defaultRange
		}
	}
	if s.MultipleOf != nil && *s.MultipleOf >= 1 && *s.MultipleOf == math.Trunc(*s.MultipleOf) {
		m := int64(*s.MultipleOf)
		klo, khi := ceilDiv(lo, m), floorDiv(hi, m)
		if khi < klo {
			return lo // no multiple in range: the schema is unsatisfiable
		}
		return m * (klo + g.r.Int64N(khi-klo+1))
	}
	if hi <= lo {
		return lo
	}
	return lo + g.r.Int64N(hi-lo+1)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }

func (g generator) number(s *apiextensionsv1.JSONSchemaProps) float64 {
	lo, hi := float64(-defaultRange), float64(defaultRange)
	if s.Minimum != nil {
		lo = *s.Minimum
		if s.Maximum == nil {
			hi = lo + 2*defaultRange
		}
	}
	if s.Maximum != nil {
		hi = *s.Maximum
		if s.Minimum == nil {
			lo = hi - 2*defaultRange
		}
	}
	for range 100 {
		f := lo + g.r.Float64()*(hi-lo)
		if f != math.Trunc(f) && (f > lo || !s.ExclusiveMinimum) && (f < hi || !s.ExclusiveMaximum) {
			return f
		}
	}
	return (lo + hi) / 2
}

func (g generator) enum(values []apiextensionsv1.JSON) any {
	var v any
	// Enum values come from the CRD as JSON; int64 for integers, as the
	// API server would decode them.
	_ = kjson.UnmarshalCaseSensitivePreserveInts(values[g.r.IntN(len(values))].Raw, &v)
	return v
}
