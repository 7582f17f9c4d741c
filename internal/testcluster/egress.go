package testcluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeEgressSelectorConfig makes the API server send all traffic for the
// "cluster" network (Services, webhooks) through our CONNECT proxy on a unix
// socket. A unix socket needs no TLS; a tcp transport with an http:// URL
// crashes the API server at start.
func writeEgressSelectorConfig(dir, socketPath string) (string, error) {
	cfg := fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`, socketPath)
	path := filepath.Join(dir, "egress-selector.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return "", fmt.Errorf("writing egress selector config: %w", err)
	}
	return path, nil
}
