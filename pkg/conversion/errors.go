package conversion

import (
	"fmt"
	"strings"
)

// Reason classifies a failed conversion; it is the reason label of
// hookwright_conversion_failures_total.
type Reason string

const (
	// ReasonDecode: the request or an object in it is not a usable object
	// (bad JSON, no apiVersion or kind).
	ReasonDecode Reason = "decode"
	// ReasonUnsupported: no Converter or route is registered for the
	// object's kind and versions.
	ReasonUnsupported Reason = "unsupported"
	// ReasonConvert: a conversion function returned an error or no object.
	ReasonConvert Reason = "convert"
	// ReasonMetadata: the converted object broke the API server's metadata
	// rule (changed name, namespace, uid or kind, or invalid labels or
	// annotations).
	ReasonMetadata Reason = "metadata"
	// ReasonPanic: a conversion function panicked.
	ReasonPanic Reason = "panic"
)

var reasons = []Reason{ReasonDecode, ReasonUnsupported, ReasonConvert, ReasonMetadata, ReasonPanic}

// Error is a failed conversion of one object. Its message names the
// object, its uid and both versions, because the API server passes it
// verbatim to the user of kubectl, who has no other way to find which
// object of a LIST failed.
type Error struct {
	Reason     Reason
	APIVersion string // the object's apiVersion, e.g. stable.example.com/v1
	Kind       string
	Namespace  string
	Name       string
	UID        string
	ToVersion  string // the desired version, e.g. v2
	Err        error
}

// Error reads like
// converting stable.example.com/v1 CronTab default/my-cron (uid 123) to v2: cause
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("converting ")
	if e.APIVersion != "" {
		b.WriteString(e.APIVersion)
		b.WriteByte(' ')
	}
	if e.Kind != "" {
		b.WriteString(e.Kind)
		b.WriteByte(' ')
	}
	switch {
	case e.Namespace != "":
		b.WriteString(e.Namespace + "/" + e.Name)
	case e.Name != "":
		b.WriteString(e.Name)
	default:
		b.WriteString("<unnamed object>")
	}
	if e.UID != "" {
		b.WriteString(" (uid " + e.UID + ")")
	}
	b.WriteString(" to " + e.ToVersion + ": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// newError names the object from its original metadata, which conversion
// functions never see, so a function that renames the object cannot
// hide which object it was.
func newError(reason Reason, apiVersion, kind string, meta map[string]any, toVersion string, err error) *Error {
	return &Error{
		Reason:     reason,
		APIVersion: apiVersion,
		Kind:       kind,
		Namespace:  stringField(meta, "namespace"),
		Name:       stringField(meta, "name"),
		UID:        stringField(meta, "uid"),
		ToVersion:  toVersion,
		Err:        err,
	}
}

// panicError is a recovered panic of a conversion function. The stack is
// for the webhook's log, not for the API server's message.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

func stringField(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}
