package desired

import (
	"encoding/json"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// AnnotationRotation on a CA or serving Secret records the rotation that
// wrote it: its audit record and the manual request it carried out. It is
// written in the same request as the certificate, so a crash between that
// write and the status write loses no audit record, and a manual request
// is never carried out twice. Fingerprints only: never key material.
const AnnotationRotation = "operators.hookwright.dev/rotation"

// RotationProvenance is the AnnotationRotation value.
type RotationProvenance struct {
	Record v1alpha1.RotationRecord `json:"record"`
	// Request is the rotate annotation this rotation carried out, if manual.
	Request string `json:"request,omitempty"`
}

// EncodeRotation renders the annotation value.
func EncodeRotation(p RotationProvenance) string {
	raw, _ := json.Marshal(p)
	return string(raw)
}

// DecodeRotation reads the annotation value; ok is false when it is
// missing or unreadable (a Secret from before it existed, or edited).
func DecodeRotation(value string) (p RotationProvenance, ok bool) {
	if value == "" || json.Unmarshal([]byte(value), &p) != nil || p.Record.NewFingerprint == "" {
		return RotationProvenance{}, false
	}
	return p, true
}
