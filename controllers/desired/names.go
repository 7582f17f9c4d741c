package desired

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// ServiceName derives the webhook Service name from a deployment name. The
// same name is used for the Service and in every CRD (OLM derives them in
// two ways that disagree when the deployment name has a dot). The result
// is a DNS-1035 label: lowercase, dots to dashes, starting with a letter,
// at most 63 characters (long names keep a hash suffix to stay unique).
func ServiceName(deployment string) string {
	return dns1035(serviceBase(deployment), newHashBytes)
}

func serviceBase(deployment string) string {
	return strings.ReplaceAll(deployment, ".", "-") + "-service"
}

// Releases up to 77796ec (hack/previous-release) cut long names with a
// 32-bit hash suffix, later ones with 64 bits. The Services, Secrets and
// CRD conversions those releases created keep their names: renaming them
// on upgrade would issue new certificates, re-point every CRD and roll the
// webhook (and leave the old CA's key behind). An install keeps the names
// its status records.
const (
	legacyHashBytes = 4
	newHashBytes    = 8
)

// InstallServiceName is the Service of deployment for install: the name an
// earlier release gave it when the install's status records that name,
// else ServiceName.
func InstallServiceName(install *v1alpha1.WebhookInstall, deployment string) string {
	current, legacy := ServiceName(deployment), dns1035(serviceBase(deployment), legacyHashBytes)
	if legacy != current && slices.ContainsFunc(install.Status.Services, func(s v1alpha1.ServiceStatus) bool { return s.Name == legacy }) {
		return legacy
	}
	return current
}

// IsServiceOf reports whether service is a name deployment's Service has,
// as this release or an earlier one derives it.
func IsServiceOf(deployment, service string) bool {
	return service == ServiceName(deployment) || service == dns1035(serviceBase(deployment), legacyHashBytes)
}

// ServingSecretName is the Secret the webhook pods mount: tls.crt, tls.key
// and ca.crt, never the CA key.
func ServingSecretName(service string) string { return dns1035(service+"-cert", hashBytesOf(service)) }

// CASecretName is the Secret holding the CA key; no pod mounts it.
func CASecretName(service string) string { return dns1035(service+"-ca", hashBytesOf(service)) }

// hashBytesOf: a Service named by an earlier release has its Secrets named
// the same way. A Service name is "<deployment>-service" unless it was
// cut, and a cut name ends in "-" and the hash: 8 hex digits for 32 bits,
// 16 for 64 (whose 9th character from the end is a hex digit, not "-").
func hashBytesOf(service string) int {
	if strings.HasSuffix(service, "-service") || len(service) < 9 || service[len(service)-9] != '-' {
		return newHashBytes
	}
	for _, r := range service[len(service)-8:] {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return newHashBytes
		}
	}
	return legacyHashBytes
}

func dns1035(name string, hashBytes int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" || out[0] < 'a' || out[0] > 'z' {
		out = "w-" + out
	}
	if len(out) > 63 {
		// 64 bits of hash: distinct long names never share a Service.
		sum := sha256.Sum256([]byte(name))
		suffix := hex.EncodeToString(sum[:hashBytes])
		out = strings.TrimRight(out[:63-1-len(suffix)], "-") + "-" + suffix
	}
	return out
}
