package conversion

import (
	"reflect"
	"strings"
	"testing"

	kjson "sigs.k8s.io/json"
)

// decodeBoth decodes data as one JSON value with this package's decoder
// and with sigs.k8s.io/json, which the API server machinery uses.
func decodeBoth(data []byte) (ours any, oursErr error, theirs any, theirsErr error) {
	d := &decoder{data: data}
	ours, oursErr = d.value()
	if oursErr == nil {
		oursErr = d.end()
	}
	theirsErr = kjson.UnmarshalCaseSensitivePreserveInts(data, &theirs)
	return
}

var decodeCorpus = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1`, `-1`, `1.0`, `1e3`, `1E-3`, `-1.5e+10`, `0.1`,
	`9223372036854775807`, `9223372036854775808`, `-9223372036854775808`, `-9223372036854775809`, `1e400`, `123456789012345678901234567890`,
	`""`, `"plain"`, `"esc \" \\ \/ \b \f \n \r \t"`, `"\u00e9\u2028"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ude00\ud83d"`,
	"\"\xff\xfe\"", "\"caf\xc3\xa9\"", `"\x"`, `"\u12"`, `"\u12g4"`, "\"\x01\"", `"unterminated`, `"\`,
	` { "a" : [ 1 , 2 , { "b" : null } ] , "a" : "dup" } `, `{"metadata":{"name":"n","labels":{"app":"x"}},"kind":"K"}`,
	`{"a":1,}`, `[1,]`, `[1 2]`, `{"a" 1}`, `{a:1}`, `01`, `-`, `1.`, `.5`, `1e`, `+1`, `tru`, `nulls`, `{} {}`, ``, ` `,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200),
}

// TestDecodeMatchesSigsJSON pins the hand-written decoder to
// sigs.k8s.io/json on valid and invalid input.
func TestDecodeMatchesSigsJSON(t *testing.T) {
	for _, in := range decodeCorpus {
		ours, oursErr, theirs, theirsErr := decodeBoth([]byte(in))
		if (oursErr == nil) != (theirsErr == nil) {
			t.Errorf("%.60q: our error %v, sigs.k8s.io/json error %v", in, oursErr, theirsErr)
			continue
		}
		if oursErr == nil && !reflect.DeepEqual(ours, theirs) {
			t.Errorf("%.60q: ours %#v, sigs.k8s.io/json %#v", in, ours, theirs)
		}
	}
}

func FuzzDecodeMatchesSigsJSON(f *testing.F) {
	for _, in := range decodeCorpus {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ours, oursErr, theirs, theirsErr := decodeBoth(data)
		if (oursErr == nil) != (theirsErr == nil) {
			t.Fatalf("%q: our error %v, sigs.k8s.io/json error %v", data, oursErr, theirsErr)
		}
		if oursErr == nil && !reflect.DeepEqual(ours, theirs) {
			t.Fatalf("%q: ours %#v, sigs.k8s.io/json %#v", data, ours, theirs)
		}
	})
}

// TestDecodeReviewMatchesSigsJSON checks the envelope: same fields as a
// struct decode, unknown and null fields tolerated.
func TestDecodeReviewMatchesSigsJSON(t *testing.T) {
	for _, in := range []string{
		string(reviewBody(t, reviewV1, "u1", v2, manyCronV1(3)...)),
		`{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1beta1","response":{"x":1},"request":{"objects":[null,{}],"extra":[1],"uid":null,"desiredAPIVersion":"g/v"}}`,
		`{"apiVersion":null,"request":null}`,
		`{"request":{"objects":null}}`,
		`{"apiVersion":"a","apiVersion":"b"}`,
	} {
		ours, err := decodeReviewJSON([]byte(in))
		if err != nil {
			t.Errorf("%.60q: %v", in, err)
			continue
		}
		var theirs review
		if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(in), &theirs); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ours, &theirs) {
			t.Errorf("%.60q:\n ours %+v\n sigs %+v", in, ours, theirs)
		}
	}
	for _, in := range []string{`[]`, `{"apiVersion":1}`, `{"request":{"objects":[1]}}`, `{"request":{"objects":{}}}`, `{"request":"x"}`, `{"kind":"a"} x`} {
		if _, err := decodeReviewJSON([]byte(in)); err == nil {
			t.Errorf("%q decoded without error", in)
		}
	}
}
