package controllers

import (
	"testing"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/rotation"
)

// The messages are the API server's, captured from the API-server suites
// (controllers/verify_test.go, test/e2e/crontab_test.go): what a LIST, a
// GET or a dry-run create at a converted version returned; two marked
// cases are constructed.
func TestClassifyConversionError(t *testing.T) {
	tests := []struct {
		name        string
		err         string
		wantReason  string
		wantTrusted bool
	}{
		{"the caBundle does not trust the serving certificate (dry-run create)",
			`conversion webhook for ctl-8bc5n.hookwright.test/v2, Kind=Widget failed: Post "https://widget-webhook-service.ctl-8bc5n.svc:443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate signed by unknown authority`,
			v1alpha1.ReasonWebhookUntrusted, false},
		{"no ready pod behind the Service (dry-run create through the egress proxy)",
			`conversion webhook for ctl-9gc8z.hookwright.test/v2, Kind=Widget failed: Post "https://widget-webhook-service.ctl-9gc8z.svc:443/convert?timeout=30s": proxy error from /tmp/hw-3170238275/egress.sock while dialing 10.0.0.181:443, code 503: 503 Service Unavailable: no ready pod serves service ctl-9gc8z/widget-webhook-service targetPort 9443`,
			v1alpha1.ReasonWebhookUnreachable, false},
		{"the pod went away under a pooled connection (GET)",
			`conversion webhook for ctl-9gc8z.hookwright.test/v1, Kind=Widget failed: Post "https://widget-webhook-service.ctl-9gc8z.svc:443/convert?timeout=30s": EOF`,
			v1alpha1.ReasonWebhookUnreachable, false},
		{"webhookPath not served: the webhook's 404 (LIST)",
			`conversion webhook for ctl-6t9wr.hookwright.test/v1, Kind=Widget failed: the server could not find the requested resource`,
			v1alpha1.ReasonWebhookPathNotFound, true},
		{"the webhook refused an object, with its message (LIST)",
			`conversion webhook for ctl-bxvll.hookwright.test/v1, Kind=Widget failed: converting ctl-bxvll/a-refused: spec.value 1 is not for v2`,
			v1alpha1.ReasonConversionRefused, true},
		{"the CronTab example's webhook refused a stored object (LIST, test/e2e)",
			`conversion webhook for stable.example.com/v1, Kind=CronTab failed: converting stable.example.com/v1 CronTab default/broken-schedule (uid 124ee5e3-74bd-4f6f-be8a-b4b09f903cec) to v2: invalid spec string, needs five parts: "* *"`,
			v1alpha1.ReasonConversionRefused, true},
		{"a webhook's message quoting an x509 error is still its answer (constructed)",
			`conversion webhook for ctl-bxvll.hookwright.test/v1, Kind=Widget failed: converting ctl-bxvll/a: spec.caPEM: x509: malformed certificate`,
			v1alpha1.ReasonConversionRefused, true},
		{"not a conversion error: RBAC (constructed in the API server's format)",
			`widgets.ctl-x.hookwright.test is forbidden: User "system:serviceaccount:hookwright-system:hookwright-manager" cannot list resource "widgets" in API group "ctl-x.hookwright.test" at the cluster scope`,
			"", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, trusted := classifyConversionError(tt.err)
			if reason != tt.wantReason || trusted != tt.wantTrusted {
				t.Errorf("classifyConversionError = %q, trusted %v; want %q, trusted %v", reason, trusted, tt.wantReason, tt.wantTrusted)
			}
		})
	}
}

func TestRotationRewrite(t *testing.T) {
	const svc, crd = "hooks", "widgets.example.com"
	verifiedStatus := func(state v1alpha1.ConversionState, reasons ...string) v1alpha1.WebhookInstallStatus {
		st := v1alpha1.WebhookInstallStatus{ObservedGeneration: 3, Phase: v1alpha1.PhaseSucceeded,
			ConversionCRDs: []v1alpha1.ConversionCRDStatus{{Name: crd, State: state}}}
		for _, reason := range reasons {
			st.Rotations = append(st.Rotations, v1alpha1.RotationRecord{Service: svc, Kind: v1alpha1.RotationCA, Reason: reason, Outcome: v1alpha1.RotationInProgress})
		}
		return st
	}
	for _, tc := range []struct {
		name   string
		status v1alpha1.WebhookInstallStatus
		crd    crdState
		want   bool
	}{
		{"a CA rotation's caBundle write on a verified CRD", verifiedStatus(v1alpha1.ConversionVerified, rotation.ReasonManual),
			crdState{bundleOnly: true}, true},
		{"a write that changed more than the caBundle", verifiedStatus(v1alpha1.ConversionVerified, rotation.ReasonManual),
			crdState{}, false},
		{"no rotation under way (a caBundle someone else changed)", verifiedStatus(v1alpha1.ConversionVerified),
			crdState{bundleOnly: true}, false},
		{"a CRD not verified before", verifiedStatus(v1alpha1.ConversionFailed, rotation.ReasonManual),
			crdState{bundleOnly: true}, false},
		{"a drift restored", verifiedStatus(v1alpha1.ConversionVerified, rotation.ReasonManual),
			crdState{bundleOnly: true, driftManager: "kubectl"}, false},
		{"a CRD taken over", verifiedStatus(v1alpha1.ConversionVerified, rotation.ReasonManual),
			crdState{bundleOnly: true, handover: true}, false},
		{"a CA issued from scratch after the old one expired", verifiedStatus(v1alpha1.ConversionVerified, rotation.ReasonCAExpired),
			crdState{bundleOnly: true}, false},
		{"an install's first certificates", verifiedStatus(v1alpha1.ConversionVerified, rotation.ReasonInitial),
			crdState{bundleOnly: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			install := &v1alpha1.WebhookInstall{Status: tc.status}
			install.Generation = 3
			c := tc.crd
			c.name, c.webhook.Service, c.written = crd, svc, true
			if got := rotationRewrite(&installState{install: install}, &c); got != tc.want {
				t.Errorf("rotationRewrite = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("a spec changed since the status", func(t *testing.T) {
		install := &v1alpha1.WebhookInstall{Status: verifiedStatus(v1alpha1.ConversionVerified, rotation.ReasonManual)}
		install.Generation = 4
		c := crdState{name: crd, bundleOnly: true, written: true}
		c.webhook.Service = svc
		if rotationRewrite(&installState{install: install}, &c) {
			t.Error("rotationRewrite = true for a status of an older generation")
		}
	})
}
