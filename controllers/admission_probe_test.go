package controllers

import (
	"crypto/x509"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/controllers/rotation"
)

// The probe configurations must never see anything but Hookwright's own
// labelled dry-run TrustProbes of their kind (trustprobe.go).
func TestAdmissionProbeConfigurationSeesOnlyItsTrustProbes(t *testing.T) {
	r := &WebhookInstallReconciler{Authority: Authority{Namespace: "hookwright-system"}}
	for _, kind := range admissionKinds {
		target := newAdmissionProbeTarget(kind, admissionregistrationv1.WebhookClientConfig{
			Service:  &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc", Path: ptr.To("/validate"), Port: ptr.To[int32](8443)},
			CABundle: []byte("bundle"),
		}, []string{"v1"})
		if target.host != "svc.ns.svc:8443" {
			t.Errorf("%s: host %q", kind, target.host)
		}
		obj := admissionProbeConfiguration(target)
		if obj.GetName() != admissionProbeName || obj.GetLabels()[desired.LabelManagedBy] != desired.ManagedByValue {
			t.Errorf("%s: metadata %s %v", kind, obj.GetName(), obj.GetLabels())
		}
		var name string
		var cc admissionregistrationv1.WebhookClientConfig
		var rules []admissionregistrationv1.RuleWithOperations
		var failure *admissionregistrationv1.FailurePolicyType
		var match *admissionregistrationv1.MatchPolicyType
		var objectSelector *metav1.LabelSelector
		var sideEffects *admissionregistrationv1.SideEffectClass
		switch cfg := obj.(type) {
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			if kind != operatorsv1alpha1.ValidatingAdmissionWebhook || len(cfg.Webhooks) != 1 {
				t.Fatalf("%s: %T with %d webhooks", kind, obj, len(cfg.Webhooks))
			}
			w := cfg.Webhooks[0]
			name, cc, rules, failure, match, objectSelector, sideEffects = w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.ObjectSelector, w.SideEffects
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			if kind != operatorsv1alpha1.MutatingAdmissionWebhook || len(cfg.Webhooks) != 1 {
				t.Fatalf("%s: %T with %d webhooks", kind, obj, len(cfg.Webhooks))
			}
			w := cfg.Webhooks[0]
			name, cc, rules, failure, match, objectSelector, sideEffects = w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.ObjectSelector, w.SideEffects
		}
		if name != admissionProbeWebhook(kind) || string(cc.CABundle) != "bundle" || *cc.Service.Path != "/validate" || *cc.Service.Port != 8443 {
			t.Errorf("%s: webhook %s calls %+v", kind, name, cc)
		}
		if len(rules) != 1 || len(rules[0].Operations) != 1 || rules[0].Operations[0] != admissionregistrationv1.Create ||
			len(rules[0].APIGroups) != 1 || rules[0].APIGroups[0] != v1alpha1.GroupVersion.Group ||
			len(rules[0].APIVersions) != 1 || rules[0].APIVersions[0] != admissionProbeVersion ||
			len(rules[0].Resources) != 1 || rules[0].Resources[0] != "trustprobes" || *rules[0].Scope != admissionregistrationv1.ClusterScope {
			t.Errorf("%s: rules %+v match more than CREATE of trustprobes at %s", kind, rules, admissionProbeVersion)
		}
		if *match != admissionregistrationv1.Exact || *failure != admissionregistrationv1.Fail || *sideEffects != admissionregistrationv1.SideEffectClassNone {
			t.Errorf("%s: matchPolicy %s failurePolicy %s sideEffects %s", kind, *match, *failure, *sideEffects)
		}
		if len(objectSelector.MatchLabels) != 1 || objectSelector.MatchLabels[admissionProbeLabel] != admissionProbeLabelValue(kind) || len(objectSelector.MatchExpressions) != 0 {
			t.Errorf("%s: objectSelector %+v", kind, objectSelector)
		}
		if !admissionProbeCalls(obj, target) || admissionProbeCalls(obj, r.idleAdmissionProbe(kind)) {
			t.Errorf("%s: admissionProbeCalls does not tell target from idle", kind)
		}
	}
	if admissionProbeLabelValue(operatorsv1alpha1.ValidatingAdmissionWebhook) == admissionProbeLabelValue(operatorsv1alpha1.MutatingAdmissionWebhook) {
		t.Error("the two kinds' probes must not see each other's TrustProbes")
	}
}

// A configuration that does not carry the new CA holds the rotation: the
// planner sees no trust time (trustedFor), the gate's live check names it
// (lackingCAs), and a CA the configuration trusts is kept on loss
// (knownTrust).
func TestAdmissionConfigurationsHoldTheRotation(t *testing.T) {
	now := time.Now()
	active, _ := certs.NewCA("active", certs.ECDSAP256, time.Hour, now)
	next, _ := certs.NewCA("next", certs.ECDSAP256, time.Hour, now)
	install := &v1alpha1.WebhookInstall{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w"}}
	service := "hook-service"
	config := func(bundle []byte, appliedAgo time.Duration) *admissionConfig {
		applied := metav1.NewTime(now.Add(-appliedAgo))
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "hookwright.ns.w", ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: desired.FieldManager, Operation: metav1.ManagedFieldsOperationApply, Time: &applied}}},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "vhook.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service:  &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: service, Path: ptr.To("/validate"), Port: ptr.To[int32](443)},
				CABundle: bundle,
			}}},
		}
		return &admissionConfig{kind: operatorsv1alpha1.ValidatingAdmissionWebhook, name: cfg.Name, live: cfg, ours: true}
	}
	state := func(cfg *admissionConfig) (*installState, *admissionState) {
		a := &admissionState{name: "vhook.example.com", kind: operatorsv1alpha1.ValidatingAdmissionWebhook, configName: "hookwright.ns.w",
			webhook: desired.Webhook{Service: service}, config: cfg}
		return &installState{install: install, now: now, admission: []*admissionState{a}}, a
	}
	r := &WebhookInstallReconciler{}
	both := rotation.Bundle(active, next)

	s, a := state(config(active.Pair.CertPEM, time.Minute))
	if d := r.trustedFor(s, service, next.Cert); d != 0 {
		t.Errorf("trustedFor(next) = %s while the configuration lacks it, want 0", d)
	}
	if d := r.trustedFor(s, service, active.Cert); d < 59*time.Second {
		t.Errorf("trustedFor(active) = %s, want about a minute", d)
	}
	if missing := lackingCAs(a.config, a, "ns", []*x509.Certificate{active.Cert, next.Cert}); len(missing) != 1 || missing[0] != next.Cert {
		t.Errorf("lackingCAs = %v, want the next CA", missing)
	}
	if known := knownTrust(s, service); len(known) != 1 || !known[0].Equal(active.Cert) {
		t.Errorf("knownTrust = %v, want the active CA", known)
	}

	s, a = state(config(both, 3*time.Second))
	if d := r.trustedFor(s, service, next.Cert); d < rotation.SettleTime {
		t.Errorf("trustedFor(next) = %s once the configuration has carried it for 3 s, want at least %s", d, rotation.SettleTime)
	}
	if missing := lackingCAs(a.config, a, "ns", []*x509.Certificate{active.Cert, next.Cert}); len(missing) != 0 {
		t.Errorf("lackingCAs = %v, want none", missing)
	}

	// A webhook not registered, or registered calling another Service, is
	// no caller to wait for.
	s, a = state(nil)
	if d := r.trustedFor(s, service, next.Cert); d != 0 {
		t.Errorf("trustedFor with no configuration and no CRD = %s, want 0 (nothing trusts it)", d)
	}
	if missing := lackingCAs(a.config, a, "ns", []*x509.Certificate{next.Cert}); len(missing) != 0 {
		t.Errorf("lackingCAs of an unregistered webhook = %v", missing)
	}
	other := config(active.Pair.CertPEM, time.Minute)
	other.live.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks[0].ClientConfig.Service.Name = "someone-else"
	s, a = state(other)
	if missing := lackingCAs(a.config, a, "ns", []*x509.Certificate{next.Cert}); len(missing) != 0 {
		t.Errorf("lackingCAs of a webhook calling another Service = %v", missing)
	}
	if known := knownTrust(s, service); len(known) != 0 {
		t.Errorf("knownTrust from a webhook calling another Service = %v", known)
	}
}
