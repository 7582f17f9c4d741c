package desired

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// ServiceName derives the webhook Service name from a deployment name. The
// same name is used for the Service and in every CRD (OLM derives them in
// two ways that disagree when the deployment name has a dot). The result
// is a DNS-1035 label: lowercase, dots to dashes, starting with a letter,
// at most 63 characters (long names keep a hash suffix to stay unique).
func ServiceName(deployment string) string {
	return dns1035(strings.ReplaceAll(deployment, ".", "-") + "-service")
}

// ServingSecretName is the Secret the webhook pods mount: tls.crt, tls.key
// and ca.crt, never the CA key.
func ServingSecretName(service string) string { return dns1035(service + "-cert") }

// CASecretName is the Secret holding the CA key; no pod mounts it.
func CASecretName(service string) string { return dns1035(service + "-ca") }

func dns1035(name string) string {
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
		suffix := hex.EncodeToString(sum[:8])
		out = strings.TrimRight(out[:63-1-len(suffix)], "-") + "-" + suffix
	}
	return out
}
