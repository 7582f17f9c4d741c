package conversion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// encoding/json spends most of a webhook's time and garbage on maps: it
// reflects on every value and allocates to sort every map's keys. The
// converted objects are maps of JSON values, so a direct encoder for
// exactly those types does the same job several times faster. Output
// matches encoding/json (sorted keys, same number and string forms)
// except that <, > and & are not HTML-escaped, which no API server needs.
// Any other type a conversion function stores falls back to encoding/json.

type encoder struct {
	buf []byte
	// keys is one stack for the sorted keys of every open map, so nested
	// maps reuse one backing array.
	keys []string
}

var encoders = sync.Pool{New: func() any { return &encoder{keys: make([]string, 0, 64)} }}

// encodeResponse writes the ConversionReview answer to out.
func encodeResponse(out *bytes.Buffer, apiVersion string, resp *response) error {
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	e.buf = out.AvailableBuffer()
	e.buf = append(e.buf, `{"apiVersion":`...)
	e.string(apiVersion)
	e.buf = append(e.buf, `,"kind":"ConversionReview","response":{"uid":`...)
	e.string(string(resp.UID))
	if resp.ConvertedObjects != nil {
		e.buf = append(e.buf, `,"convertedObjects":[`...)
		for i, obj := range resp.ConvertedObjects {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.object(obj); err != nil {
				return fmt.Errorf("object %d: %w", i, err)
			}
		}
		e.buf = append(e.buf, ']')
	}
	e.buf = append(e.buf, `,"result":{"status":`...)
	e.string(resp.Status)
	if resp.Message != "" {
		e.buf = append(e.buf, `,"message":`...)
		e.string(resp.Message)
	}
	e.buf = append(e.buf, "}}}\n"...)
	out.Write(e.buf)
	e.buf = nil
	return nil
}

func (e *encoder) value(v any) error {
	switch v := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case string:
		e.string(v)
	case bool:
		e.buf = strconv.AppendBool(e.buf, v)
	case int64:
		e.buf = strconv.AppendInt(e.buf, v, 10)
	case float64:
		return e.float(v)
	case map[string]any:
		return e.object(v)
	case []any:
		e.buf = append(e.buf, '[')
		for i, item := range v {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(item); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	default:
		// int, []string, typed structs...: whatever a function stored.
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		e.buf = append(e.buf, b...)
	}
	return nil
}

func (e *encoder) object(m map[string]any) error {
	if m == nil {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	start := len(e.keys)
	for k := range m {
		e.keys = append(e.keys, k)
	}
	end := len(e.keys)
	slices.Sort(e.keys[start:end])
	e.buf = append(e.buf, '{')
	for i := start; i < end; i++ {
		if i > start {
			e.buf = append(e.buf, ',')
		}
		k := e.keys[i]
		e.string(k)
		e.buf = append(e.buf, ':')
		if err := e.value(m[k]); err != nil {
			e.keys = e.keys[:start]
			return fmt.Errorf("%q: %w", k, err)
		}
	}
	e.buf = append(e.buf, '}')
	clear(e.keys[start:end]) // do not pin the keys in the pool
	e.keys = e.keys[:start]
	return nil
}

// float formats like encoding/json: 'f' unless very small or large, and
// e-07 shortened to e-7.
func (e *encoder) float(f float64) error {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("unsupported value %v", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	e.buf = strconv.AppendFloat(e.buf, f, format, -1, 64)
	if format == 'e' {
		if n := len(e.buf); n >= 4 && e.buf[n-4] == 'e' && e.buf[n-3] == '-' && e.buf[n-2] == '0' {
			e.buf[n-2] = e.buf[n-1]
			e.buf = e.buf[:n-1]
		}
	}
	return nil
}

const hex = "0123456789abcdef"

// string quotes s as encoding/json does, without HTML escaping: invalid
// UTF-8 becomes U+FFFD, and U+2028 and U+2029 are escaped for JavaScript.
func (e *encoder) string(s string) {
	e.buf = append(e.buf, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			e.buf = append(e.buf, s[start:i]...)
			switch c {
			case '"', '\\':
				e.buf = append(e.buf, '\\', c)
			case '\n':
				e.buf = append(e.buf, '\\', 'n')
			case '\r':
				e.buf = append(e.buf, '\\', 'r')
			case '\t':
				e.buf = append(e.buf, '\\', 't')
			case '\b':
				e.buf = append(e.buf, '\\', 'b')
			case '\f':
				e.buf = append(e.buf, '\\', 'f')
			default:
				e.buf = append(e.buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			e.buf = append(e.buf, s[start:i]...)
			e.buf = append(e.buf, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			e.buf = append(e.buf, s[start:i]...)
			e.buf = append(e.buf, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	e.buf = append(e.buf, s[start:]...)
	e.buf = append(e.buf, '"')
}
