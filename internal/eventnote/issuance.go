// Package eventnote owns the note of the Event that tells an install's
// first certificates, which `hookwright audit` reads back from the
// cluster: its writer (the controllers) and its parser (internal/audit)
// share this one definition, so they cannot drift apart.
package eventnote

import (
	"regexp"
	"strings"
)

// ReasonCertificatesIssued is the reason of the one Event an install's
// first certificates get, when they are in place: they replace nothing,
// so there is no start anyone acts on.
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

// A Service's part of the note. Fingerprints are colon-separated hex, so
// the Service's name (a DNS label) ends at the first colon.
var servicePart = regexp.MustCompile(`^for service ([^:\s]+): (.+)$`)

// ParseIssuance reads back what Issuance wrote; ok is false for any other
// note.
func ParseIssuance(note string) (issued []Issued, ok bool) {
	rest, found := strings.CutPrefix(note, issuancePrefix)
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
