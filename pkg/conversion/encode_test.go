package conversion

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// TestEncoderMatchesEncodingJSON pins the hand-written encoder to
// encoding/json's output (without HTML escaping) on the values a
// conversion function can produce.
func TestEncoderMatchesEncodingJSON(t *testing.T) {
	values := []any{
		nil, true, false, "", "plain", `quote " backslash \ slash /`, "tab\tnewline\nreturn\rbell\x07nul\x00",
		"<html> & more", "ünïcödé ✓ 日本", "bad utf8 \xff\xfe end", "line sep \u2028 para sep \u2029",
		int64(0), int64(-1), int64(math.MaxInt64), int64(math.MinInt64),
		0.0, 2.5, -0.000001, 1e-7, 123456789e-20, 1e21, 1e20, math.MaxFloat64, math.SmallestNonzeroFloat64,
		[]any{}, []any{int64(1), "two", 3.5, nil, []any{map[string]any{}}},
		map[string]any{}, map[string]any{"b": int64(1), "a": map[string]any{"z": nil, "y": []any{"x"}}, "é": "k", "": "empty"},
		// Values only a conversion function would store: encoding/json's job.
		map[string]any{"int": 7, "strings": []string{"a", "b"}, "labels": map[string]string{"k": "v"}, "float32": float32(1.5)},
	}
	for _, v := range values {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		e := &encoder{}
		if err := e.value(v); err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		if got := string(e.buf) + "\n"; got != want.String() {
			t.Errorf("%#v:\n got %s\nwant %s", v, got, want.String())
		}
	}
}

func TestEncoderRejectsNonFinite(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		e := &encoder{}
		if err := e.value(map[string]any{"f": f}); err == nil {
			t.Errorf("%v encoded as %s", f, e.buf)
		}
	}
}

func FuzzEncoderString(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\", "\x00\x1f", "\xff", "\u2028", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		e := &encoder{}
		e.string(s)
		if got := string(e.buf) + "\n"; got != want.String() {
			t.Errorf("%q:\n got %s\nwant %s", s, got, want.String())
		}
	})
}
