package controllers

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The messages are the API server's (kube-apiserver v1.37.2, the test
// ground), captured while dry-run creating TrustProbes through each kind
// of configuration of the probe CRD; the refusal and the 404 are
// constructed from the verification classifier's cases.
func TestClassifyProbe(t *testing.T) {
	const idle = "hookwright-trust-probe-idle.hookwright-system.svc:443"
	tests := []struct {
		name     string
		err      error
		answered bool
		host     string
		verdict  trustVerdict
		final    bool
	}{
		{"the webhook converted the probe", nil, true, "", "", false},
		{"idle: the Service does not exist", errors.New(`conversion webhook for operators.hookwright.dev/v2, Kind=TrustProbe failed: Post "https://hookwright-trust-probe-idle.hookwright-system.svc:443/?timeout=30s": service "hookwright-trust-probe-idle" not found`),
			false, idle, trustUnreachable, false},
		{"the probed caBundle does not trust the pod's chain", errors.New(`conversion webhook for operators.hookwright.dev/v2, Kind=TrustProbe failed: Post "https://svc.probe-ns.svc:443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate signed by unknown authority`),
			false, "svc.probe-ns.svc:443", trustUntrusted, false},
		{"no ready pod", errors.New(`conversion webhook for operators.hookwright.dev/v2, Kind=TrustProbe failed: Post "https://svc.probe-ns.svc:443/convert?timeout=30s": proxy error from /tmp/hw-1/egress.sock while dialing 10.0.0.181:443, code 503: 503 Service Unavailable: no ready pod serves service probe-ns/svc targetPort 9443`),
			false, "svc.probe-ns.svc:443", trustUnreachable, false},
		{"the webhook refused the TrustProbe (it converts another kind)", errors.New(`conversion webhook for operators.hookwright.dev/v2, Kind=TrustProbe returned failure: unsupported: operators.hookwright.dev/v2, Kind=TrustProbe is not a kind this webhook converts`),
			true, "", "", false},
		{"the webhook answered 404", errors.New(`conversion webhook for operators.hookwright.dev/v2, Kind=TrustProbe failed: the server could not find the requested resource`),
			true, "", "", false},
		{"RBAC forbids the probe", apierrors.NewForbidden(schema.GroupResource{Group: "operators.hookwright.dev", Resource: "trustprobes"}, "", errors.New("no RBAC")),
			false, "", trustUnavailable, true},
		{"the probe CRD is not served", apierrors.NewNotFound(schema.GroupResource{Group: "operators.hookwright.dev", Resource: "trustprobes"}, ""),
			false, "", trustUnavailable, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := classifyProbe(tt.err, idle)
			if o.answered != tt.answered || o.host != tt.host || (!tt.answered && o.verdict != tt.verdict) || o.final != tt.final {
				t.Errorf("classifyProbe = %+v, want answered=%v host=%q verdict=%q final=%v", o, tt.answered, tt.host, tt.verdict, tt.final)
			}
			if tt.answered && o.result().verdict != trustProven {
				t.Errorf("an answer must prove trust, got %q", o.result().verdict)
			}
		})
	}
}
