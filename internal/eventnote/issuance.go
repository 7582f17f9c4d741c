// Package eventnote owns the note that tells an install's first
// certificates (its own Event's, or the end of the phase Event's that
// tells the same pass), which `hookwright audit` reads back from the
// cluster: its writer (the controllers) and its parser (internal/audit)
// share this one definition, so they cannot drift apart.
package eventnote

import (
	"regexp"
	"strings"
)

// ReasonCertificatesIssued is the reason of the Event that tells an
// install's first certificates when they are in place and no phase Event
// tells them: they replace nothing, so there is no start anyone acts on.
const ReasonCertificatesIssued = "CertificatesIssued"

// Issued is one first certificate: its Service, its kind (CA, Serving)
// and its fingerprint.
type Issued struct {
	Service, Kind, Fingerprint string
}

// Issuance is the note of a CertificatesIssued Event: "first certificates
// issued for service a: CA <fingerprint>, Serving <fingerprint>; for
// service b: ...", Services in the order first seen.
func Issuance(issued []Issued) string {
	var services []string
	byService := map[string][]string{}
	for _, c := range issued {
		if _, seen := byService[c.Service]; !seen {
			services = append(services, c.Service)
		}
		byService[c.Service] = append(byService[c.Service], c.Kind+" "+c.Fingerprint)
	}
	parts := make([]string, 0, len(services))
	for _, svc := range services {
		parts = append(parts, "for service "+svc+": "+strings.Join(byService[svc], ", "))
	}
	return issuancePrefix + strings.Join(parts, "; ")
}

const issuancePrefix = "first certificates issued "

// noteLimit is the most bytes the API server accepts in an Event's note
// (events.k8s.io NoteLengthLimit).
const noteLimit = 1024

// issuanceSeparator joins another note and an issuance told with it.
const issuanceSeparator = "; "

// WithIssuance joins a note (an install's phase change) and the issuance
// told with it; fits is false when the two would pass an Event's note
// limit, and must then be told apart. An empty issuance leaves the note
// as it is.
func WithIssuance(note, issuance string) (joined string, fits bool) {
	if issuance == "" {
		return note, true
	}
	joined = note + issuanceSeparator + issuance
	return joined, len(joined) <= noteLimit
}

// A Service's part of the note. Fingerprints are colon-separated hex, so
// the Service's name (a DNS label) ends at the first colon.
var servicePart = regexp.MustCompile(`^for service ([^:\s]+): (.+)$`)

// ParseIssuance reads back what Issuance wrote, alone or at the end of a
// note WithIssuance joined; ok is false for any other note.
func ParseIssuance(note string) (issued []Issued, ok bool) {
	rest, found := strings.CutPrefix(note, issuancePrefix)
	if !found {
		_, rest, found = strings.Cut(note, issuanceSeparator+issuancePrefix)
	}
	if !found {
		return nil, false
	}
	for _, part := range strings.Split(rest, "; ") {
		m := servicePart.FindStringSubmatch(part)
		if m == nil {
			return nil, false
		}
		for _, cert := range strings.Split(m[2], ", ") {
			kind, fingerprint, found := strings.Cut(cert, " ")
			if !found || kind == "" || fingerprint == "" || strings.Contains(fingerprint, " ") {
				return nil, false
			}
			issued = append(issued, Issued{Service: m[1], Kind: kind, Fingerprint: fingerprint})
		}
	}
	return issued, true
}
