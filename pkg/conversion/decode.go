package conversion

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/types"
)

// A reviewer of a LIST spends most of its time decoding JSON into maps.
// sigs.k8s.io/json (encoding/json) scans the input twice, once to validate
// and once to decode, through a byte-at-a-time state machine and
// reflection. This decoder does one pass straight into the values
// unstructured objects hold, with the same results: integers without a
// '.' that fit are int64, other numbers float64, invalid UTF-8 and lone
// surrogates become U+FFFD, the last of duplicate keys wins, keys match
// case-sensitively, and nesting is limited to 10000 levels.
// FuzzDecodeMatchesSigsJSON holds it to that.

const maxNesting = 10000

type decoder struct {
	data  []byte
	pos   int
	depth int
}

type syntaxError struct {
	msg    string
	offset int
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.msg, e.offset) }

func (d *decoder) fail(msg string) error { return &syntaxError{msg: msg, offset: d.pos} }

func (d *decoder) unexpected() error {
	if d.pos >= len(d.data) {
		return d.fail("unexpected end of JSON input")
	}
	return d.fail(fmt.Sprintf("invalid character %q", d.data[d.pos]))
}

// decodeReviewJSON decodes a ConversionReview request in one pass.
func decodeReviewJSON(data []byte) (*review, error) {
	d := &decoder{data: data}
	rv := &review{}
	err := d.object(func(key string) error {
		var err error
		switch key {
		case "apiVersion":
			rv.APIVersion, err = d.stringOrNull()
		case "kind":
			rv.Kind, err = d.stringOrNull()
		case "request":
			rv.Request, err = d.request()
		default:
			_, err = d.value()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return rv, d.end()
}

func (d *decoder) request() (*request, error) {
	if d.null() {
		return nil, nil
	}
	req := &request{}
	return req, d.object(func(key string) error {
		var err error
		switch key {
		case "uid":
			var uid string
			uid, err = d.stringOrNull()
			req.UID = types.UID(uid)
		case "desiredAPIVersion":
			req.DesiredAPIVersion, err = d.stringOrNull()
		case "objects":
			req.Objects, err = d.objects()
		default:
			_, err = d.value()
		}
		return err
	})
}

// objects decodes a list of objects, null entries kept as nil maps.
func (d *decoder) objects() ([]map[string]any, error) {
	if d.null() {
		return nil, nil
	}
	d.space()
	if !d.consume('[') {
		return nil, d.expected("array")
	}
	objs := []map[string]any{}
	d.space()
	if d.consume(']') {
		return objs, nil
	}
	for {
		d.space()
		var m map[string]any
		if !d.null() {
			var err error
			if m, err = d.mapValue(); err != nil {
				return nil, err
			}
		}
		objs = append(objs, m)
		d.space()
		if d.consume(']') {
			return objs, nil
		}
		if !d.consume(',') {
			return nil, d.unexpected()
		}
	}
}

func (d *decoder) expected(what string) error {
	if d.pos >= len(d.data) {
		return d.unexpected()
	}
	return d.fail(fmt.Sprintf("expected %s, found %q", what, d.data[d.pos]))
}

func (d *decoder) end() error {
	d.space()
	if d.pos != len(d.data) {
		return d.fail(fmt.Sprintf("invalid character %q after top-level value", d.data[d.pos]))
	}
	return nil
}

func (d *decoder) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) consume(c byte) bool {
	if d.pos < len(d.data) && d.data[d.pos] == c {
		d.pos++
		return true
	}
	return false
}

func (d *decoder) null() bool {
	d.space()
	if len(d.data)-d.pos >= 4 && string(d.data[d.pos:d.pos+4]) == "null" {
		d.pos += 4
		return true
	}
	return false
}

func (d *decoder) stringOrNull() (string, error) {
	if d.null() {
		return "", nil
	}
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return "", d.expected("string")
	}
	return d.string()
}

// object calls field for every key, with the decoder at the key's value.
func (d *decoder) object(field func(key string) error) error {
	d.space()
	if !d.consume('{') {
		return d.expected("object")
	}
	if d.depth++; d.depth > maxNesting {
		return d.fail("exceeded max depth")
	}
	d.space()
	if d.consume('}') {
		d.depth--
		return nil
	}
	for {
		d.space()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return d.unexpected()
		}
		key, err := d.key()
		if err != nil {
			return err
		}
		d.space()
		if !d.consume(':') {
			return d.unexpected()
		}
		if err := field(key); err != nil {
			return err
		}
		d.space()
		if d.consume('}') {
			d.depth--
			return nil
		}
		if !d.consume(',') {
			return d.unexpected()
		}
	}
}

func (d *decoder) mapValue() (map[string]any, error) {
	m := map[string]any{}
	err := d.object(func(key string) error {
		v, err := d.value()
		m[key] = v
		return err
	})
	return m, err
}

func (d *decoder) value() (any, error) {
	d.space()
	if d.pos >= len(d.data) {
		return nil, d.unexpected()
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.mapValue()
	case c == '[':
		return d.array()
	case c == '"':
		return d.string()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case d.literal("true"):
		return true, nil
	case d.literal("false"):
		return false, nil
	case d.literal("null"):
		return nil, nil
	default:
		return nil, d.unexpected()
	}
}

func (d *decoder) literal(lit string) bool {
	if len(d.data)-d.pos >= len(lit) && string(d.data[d.pos:d.pos+len(lit)]) == lit {
		d.pos += len(lit)
		return true
	}
	return false
}

func (d *decoder) array() ([]any, error) {
	d.pos++ // '['
	if d.depth++; d.depth > maxNesting {
		return nil, d.fail("exceeded max depth")
	}
	items := []any{}
	d.space()
	if d.consume(']') {
		d.depth--
		return items, nil
	}
	for {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		d.space()
		if d.consume(']') {
			d.depth--
			return items, nil
		}
		if !d.consume(',') {
			return nil, d.unexpected()
		}
	}
}

// key is a string that, for the keys every object has, is not allocated.
func (d *decoder) key() (string, error) {
	start := d.pos + 1
	if end := start + 24; end <= len(d.data) {
		// Fast path: a short plain key followed by its closing quote.
		for i := start; i < end; i++ {
			c := d.data[i]
			if c == '"' {
				if k, ok := commonKey(d.data[start:i]); ok {
					d.pos = i + 1
					return k, nil
				}
				break
			}
			if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				break
			}
		}
	}
	return d.string()
}

// commonKeys are keys found in nearly every object, so decoding a LIST
// does not allocate "metadata" once per object. Looking up string(b) in
// a map does not allocate.
var commonKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"apiVersion", "kind", "metadata", "name", "namespace", "uid", "resourceVersion", "generation",
		"creationTimestamp", "labels", "annotations", "ownerReferences", "finalizers", "managedFields",
		"spec", "status", "conditions", "type", "reason", "message", "lastTransitionTime", "observedGeneration",
	} {
		m[k] = k
	}
	return m
}()

func commonKey(b []byte) (string, bool) {
	k, ok := commonKeys[string(b)]
	return k, ok
}

// string decodes the string at d.pos (its opening quote).
func (d *decoder) string() (string, error) {
	start := d.pos + 1
	escaped, ascii := false, true
	for i := start; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			seg := d.data[start:i]
			d.pos = i + 1
			if !escaped && (ascii || utf8.Valid(seg)) {
				return string(seg), nil
			}
			return d.unquote(seg, start)
		case c == '\\':
			escaped = true
			i++ // the escaped byte cannot end the string
		case c < 0x20:
			d.pos = i
			return "", d.fail("invalid control character in string")
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	d.pos = len(d.data)
	return "", d.unexpected()
}

// unquote is encoding/json's, for strings with escapes or non-ASCII.
func (d *decoder) unquote(s []byte, offset int) (string, error) {
	b := make([]byte, 0, len(s)+2*utf8.UTFMax)
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			if r+1 >= len(s) {
				return "", &syntaxError{"invalid escape", offset + r}
			}
			switch e := s[r+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
				r += 2
			case 'b':
				b, r = append(b, '\b'), r+2
			case 'f':
				b, r = append(b, '\f'), r+2
			case 'n':
				b, r = append(b, '\n'), r+2
			case 'r':
				b, r = append(b, '\r'), r+2
			case 't':
				b, r = append(b, '\t'), r+2
			case 'u':
				rr := getu4(s[r:])
				if rr < 0 {
					return "", &syntaxError{"invalid \\u escape", offset + r}
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					if rr1 := getu4(s[r:]); rr1 >= 0 {
						if dec := utf16.DecodeRune(rr, rr1); dec != unicode.ReplacementChar {
							r += 6
							b = utf8.AppendRune(b, dec)
							break
						}
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
			default:
				return "", &syntaxError{fmt.Sprintf("invalid escape %q", e), offset + r}
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			b = utf8.AppendRune(b, rr)
		}
	}
	return string(b), nil
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// number decodes a JSON number: int64 when it has no '.' and fits, like
// sigs.k8s.io/json's PreserveInts, else float64.
func (d *decoder) number() (any, error) {
	start := d.pos
	i := start
	if d.data[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(d.data) && d.data[i] >= '0' && d.data[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(d.data) && d.data[i] == '0':
		i++
	case digits() == 0:
		d.pos = i
		return nil, d.unexpected()
	}
	integer := true
	if i < len(d.data) && d.data[i] == '.' {
		i++
		integer = false
		if digits() == 0 {
			d.pos = i
			return nil, d.unexpected()
		}
	}
	exponent := false
	if i < len(d.data) && (d.data[i] == 'e' || d.data[i] == 'E') {
		i++
		exponent = true
		if i < len(d.data) && (d.data[i] == '+' || d.data[i] == '-') {
			i++
		}
		if digits() == 0 {
			d.pos = i
			return nil, d.unexpected()
		}
	}
	lit := d.data[start:i]
	d.pos = i
	if integer && !exponent {
		if n, ok := parseInt(lit); ok {
			return n, nil
		}
	}
	// Like sigs.k8s.io/json: "1e3" has no '.', is no int64, is a float64.
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return nil, &syntaxError{fmt.Sprintf("number %s out of range", lit), start}
	}
	return f, nil
}

// parseInt parses a validated integer literal without allocating; ok is
// false on overflow.
func parseInt(lit []byte) (int64, bool) {
	neg := lit[0] == '-'
	if neg {
		lit = lit[1:]
	}
	var n uint64
	for _, c := range lit {
		if n > (1<<63)/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	switch {
	case neg && n <= 1<<63:
		return -int64(n-1) - 1, true
	case !neg && n < 1<<63:
		return int64(n), true
	}
	return 0, false
}
