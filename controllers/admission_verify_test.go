package controllers

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// statusErr rebuilds the error the client returns for an API server
// Status: the messages below are the API server's (kube-apiserver v1.37.2,
// the test ground), captured from dry-run creates through admission
// webhooks of each kind of configuration (internal/testcluster's admission
// host: allowing, denying, behind a wrong caBundle, a missing Service, no
// ready pod, a path it does not serve, a handler that hangs or answers
// 500) and a ValidatingAdmissionPolicy, and during a CA rotation made
// without the admission configurations' coverage; the RBAC refusal is
// constructed in the API server's format.
func statusErr(code int32, reason metav1.StatusReason, msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}}
}

var capturedAdmission = map[string]error{
	"denied": statusErr(http.StatusForbidden, metav1.StatusReasonForbidden,
		`admission webhook "vdeny.example.com" denied the request: spec.value 1 is refused here`),
	"denied by the mutating webhook": statusErr(http.StatusForbidden, metav1.StatusReasonForbidden,
		`admission webhook "mdeny.example.com" denied the request: spec.value 1 is refused by the mutator`),
	"denied without explanation": statusErr(http.StatusBadRequest, "",
		`admission webhook "vok.example.com" denied the request without explanation`),
	"x509": statusErr(http.StatusInternalServerError, metav1.StatusReasonInternalError,
		`Internal error occurred: failed calling webhook "vx509.example.com": failed to call webhook: Post "https://admission-webhook.tc-wjcmf.svc:443/validate?timeout=1s": tls: failed to verify certificate: x509: certificate signed by unknown authority`),
	"x509, a chain of another key of the CA's name": statusErr(http.StatusInternalServerError, metav1.StatusReasonInternalError,
		`Internal error occurred: failed calling webhook "vrotate.hookwright.test": failed to call webhook: Post "https://widget-webhook-service.ctl-sjtgj.svc:443/validate?timeout=10s": tls: failed to verify certificate: x509: certificate signed by unknown authority (possibly because of "x509: ECDSA verification failure" while trying to verify candidate authority certificate "widget-webhook-service.ctl-sjtgj-ca")`),
	"x509 (mutating)": statusErr(http.StatusInternalServerError, metav1.StatusReasonInternalError,
		`Internal error occurred: failed calling webhook "mx509.example.com": failed to call webhook: Post "https://admission-webhook.tc-wjcmf.svc:443/mutate?timeout=1s": tls: failed to verify certificate: x509: certificate signed by unknown authority`),
	"service not found": statusErr(http.StatusInternalServerError, metav1.StatusReasonInternalError,
		`Internal error occurred: failed calling webhook "vnosvc.example.com": failed to call webhook: Post "https://missing.tc-wjcmf.svc:443/validate?timeout=1s": service "missing" not found`),
	"no ready pod": statusErr(http.StatusInternalServerError, metav1.StatusReasonInternalError,
		`Internal error occurred: failed calling webhook "vnopod.example.com": failed to call webhook: Post "https://nobody.tc-wjcmf.svc:443/validate?timeout=1s": proxy error from /tmp/hw-905878512/egress.sock while dialing 10.0.0.149:443, code 503: 503 Service Unavailable: no ready pod serves service tc-wjcmf/nobody targetPort 9443`),
	"404": statusErr(http.StatusInternalServerError, metav1.StatusReasonInternalError,
		`Internal error occurred: failed calling webhook "v404.example.com": failed to call webhook: the server could not find the requested resource`),
	"no answer in time": statusErr(http.StatusInternalServerError, metav1.StatusReasonInternalError,
		`Internal error occurred: failed calling webhook "vhang.example.com": failed to call webhook: Post "https://admission-webhook.tc-wjcmf.svc:443/hang?timeout=1s": context deadline exceeded`),
	"500": statusErr(http.StatusInternalServerError, metav1.StatusReasonInternalError,
		`Internal error occurred: failed calling webhook "vfail.example.com": failed to call webhook: an error on the server ("boom") has prevented the request from succeeding`),
	"a ValidatingAdmissionPolicy": statusErr(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
		`widgets.tc-wjcmf.test.hookwright.dev "ok" is forbidden: ValidatingAdmissionPolicy 'tc-wjcmf-policy' with binding 'tc-wjcmf-policy' denied request: policy says no`),
	"RBAC": statusErr(http.StatusForbidden, metav1.StatusReasonForbidden,
		`widgets.tc-wjcmf.test.hookwright.dev is forbidden: User "system:serviceaccount:hookwright-system:hookwright-manager" cannot create resource "widgets" in API group "tc-wjcmf.test.hookwright.dev" in the namespace "tc-wjcmf"`),
}

func TestClassifyAdmissionError(t *testing.T) {
	tests := []struct {
		name, err, webhook string
		want               admissionCall
	}{
		{"the webhook's denial", "denied", "vdeny.example.com", admissionCall{ours: true, trusted: true, denied: true}},
		{"the mutating webhook's denial", "denied by the mutating webhook", "mdeny.example.com", admissionCall{ours: true, trusted: true, denied: true}},
		{"a denial without a message", "denied without explanation", "vok.example.com", admissionCall{ours: true, trusted: true, denied: true}},
		{"another webhook's denial proves nothing", "denied", "vcrontab.example.com", admissionCall{}},
		{"x509", "x509", "vx509.example.com", admissionCall{ours: true, reason: v1alpha1.ReasonWebhookUntrusted,
			postURL: "https://admission-webhook.tc-wjcmf.svc:443/validate?timeout=1s", cause: "tls: failed to verify certificate: x509: certificate signed by unknown authority"}},
		{"x509 of a mutating webhook", "x509 (mutating)", "mx509.example.com", admissionCall{ours: true, reason: v1alpha1.ReasonWebhookUntrusted,
			postURL: "https://admission-webhook.tc-wjcmf.svc:443/mutate?timeout=1s", cause: "tls: failed to verify certificate: x509: certificate signed by unknown authority"}},
		{"x509 after a rotation without coverage (CA promoted while the configuration lacked it)", "x509, a chain of another key of the CA's name", "vrotate.hookwright.test", admissionCall{ours: true, reason: v1alpha1.ReasonWebhookUntrusted,
			postURL: "https://widget-webhook-service.ctl-sjtgj.svc:443/validate?timeout=10s",
			cause:   `tls: failed to verify certificate: x509: certificate signed by unknown authority (possibly because of "x509: ECDSA verification failure" while trying to verify candidate authority certificate "widget-webhook-service.ctl-sjtgj-ca")`}},
		{"another webhook's x509 proves nothing", "x509", "vcrontab.example.com", admissionCall{}},
		{"service not found", "service not found", "vnosvc.example.com", admissionCall{ours: true, reason: v1alpha1.ReasonWebhookUnreachable,
			postURL: "https://missing.tc-wjcmf.svc:443/validate?timeout=1s", cause: `service "missing" not found`}},
		{"no ready pod", "no ready pod", "vnopod.example.com", admissionCall{ours: true, reason: v1alpha1.ReasonWebhookUnreachable,
			postURL: "https://nobody.tc-wjcmf.svc:443/validate?timeout=1s", cause: "proxy error from /tmp/hw-905878512/egress.sock while dialing 10.0.0.149:443, code 503: 503 Service Unavailable: no ready pod serves service tc-wjcmf/nobody targetPort 9443"}},
		{"no answer in time", "no answer in time", "vhang.example.com", admissionCall{ours: true, reason: v1alpha1.ReasonWebhookUnreachable,
			postURL: "https://admission-webhook.tc-wjcmf.svc:443/hang?timeout=1s", cause: "context deadline exceeded"}},
		{"404", "404", "v404.example.com", admissionCall{ours: true, trusted: true, reason: v1alpha1.ReasonWebhookPathNotFound}},
		{"500", "500", "vfail.example.com", admissionCall{ours: true, trusted: true, reason: v1alpha1.ReasonWebhookErrored}},
		{"a ValidatingAdmissionPolicy", "a ValidatingAdmissionPolicy", "vok.example.com", admissionCall{}},
		{"RBAC", "RBAC", "vok.example.com", admissionCall{}},
		{"dry run unsupported (constructed)", "", "vse.example.com", admissionCall{ours: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := `admission webhook "vse.example.com" does not support dry run`
			if tt.err != "" {
				msg = capturedAdmission[tt.err].Error()
			}
			if got := classifyAdmissionError(msg, tt.webhook); got != tt.want {
				t.Errorf("classifyAdmissionError = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestClassifyAdmissionDryRun(t *testing.T) {
	target := &admissionDryRun{gvk: schema.GroupVersionKind{Group: "stable.example.com", Version: "v1", Kind: "CronTab"}, resource: "crontabs.stable.example.com", namespace: "crontab-system"}
	tests := []struct {
		name, err, webhook string
		state              v1alpha1.AdmissionWebhookState
		reason             string
		trusted, forbidden bool
		admittedOnly       bool
		message            string
	}{
		{"admitted", "", "vok.example.com", v1alpha1.AdmissionVerified, "", true, false, true, "admitted"},
		{"the webhook denied Hookwright's object", "denied", "vdeny.example.com", v1alpha1.AdmissionVerified, "", true, false, false, "spec.value 1 is refused here"},
		{"x509", "x509", "vx509.example.com", v1alpha1.AdmissionFailed, v1alpha1.ReasonWebhookUntrusted, false, false, false, "x509: certificate signed by unknown authority"},
		{"no ready pod", "no ready pod", "vnopod.example.com", v1alpha1.AdmissionFailed, v1alpha1.ReasonWebhookUnreachable, false, false, false, "no ready pod serves service"},
		{"service not found", "service not found", "vnosvc.example.com", v1alpha1.AdmissionFailed, v1alpha1.ReasonWebhookUnreachable, false, false, false, `service "missing" not found`},
		{"no answer in time", "no answer in time", "vhang.example.com", v1alpha1.AdmissionFailed, v1alpha1.ReasonWebhookUnreachable, false, false, false, "context deadline exceeded"},
		{"404", "404", "v404.example.com", v1alpha1.AdmissionFailed, v1alpha1.ReasonWebhookPathNotFound, true, false, false, "404 Not Found"},
		{"500", "500", "vfail.example.com", v1alpha1.AdmissionFailed, v1alpha1.ReasonWebhookErrored, true, false, false, `("boom")`},
		{"denied by another webhook", "denied", "vcrontab.example.com", v1alpha1.AdmissionUnverified, v1alpha1.ReasonAdmissionNotVerified, false, false, false, "not verified: "},
		{"another webhook's x509", "x509", "vcrontab.example.com", v1alpha1.AdmissionUnverified, v1alpha1.ReasonAdmissionNotVerified, false, false, false, "not verified: "},
		{"a ValidatingAdmissionPolicy's denial", "a ValidatingAdmissionPolicy", "vcrontab.example.com", v1alpha1.AdmissionUnverified, v1alpha1.ReasonAdmissionNotVerified, false, false, false, "policy says no"},
		{"RBAC", "RBAC", "vcrontab.example.com", v1alpha1.AdmissionUnverified, v1alpha1.ReasonVerificationForbidden, false, true, false, "Grant its ServiceAccount the verb create on crontabs.stable.example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.err != "" {
				err = capturedAdmission[tt.err]
			}
			v := classifyAdmissionDryRun(err, tt.webhook, target)
			if v.state != tt.state || v.reason != tt.reason || v.trusted != tt.trusted || v.forbidden != tt.forbidden || v.admittedOnly != tt.admittedOnly {
				t.Errorf("classifyAdmissionDryRun = %+v, want state %s reason %q trusted %v forbidden %v admittedOnly %v", v, tt.state, tt.reason, tt.trusted, tt.forbidden, tt.admittedOnly)
			}
			if !strings.Contains(v.message, tt.message) {
				t.Errorf("message %q does not contain %q", v.message, tt.message)
			}
			if !strings.Contains(v.message, "stable.example.com/v1 CronTab") {
				t.Errorf("message %q does not name what was dry-run created", v.message)
			}
		})
	}
}

func TestClassifyAdmissionProbe(t *testing.T) {
	const idle = "hookwright-trust-probe-idle.hookwright-system.svc:443"
	const webhook = "validating.trust-probe.operators.hookwright.dev"
	probeErr := func(host, cause string) error {
		return statusErr(http.StatusInternalServerError, metav1.StatusReasonInternalError,
			`Internal error occurred: failed calling webhook "`+webhook+`": failed to call webhook: Post "https://`+host+`/validate?timeout=5s": `+cause)
	}
	tests := []struct {
		name     string
		err      error
		answered bool
		host     string
		verdict  trustVerdict
		final    bool
	}{
		{"allowed", nil, true, "", "", false},
		{"idle", probeErr(idle, `service "hookwright-trust-probe-idle" not found`), false, idle, trustUnreachable, false},
		{"untrusted", probeErr("svc.ns.svc:443", "tls: failed to verify certificate: x509: certificate signed by unknown authority"), false, "svc.ns.svc:443", trustUntrusted, false},
		{"no ready pod", probeErr("svc.ns.svc:443", "proxy error: 503 Service Unavailable: no ready pod serves service ns/svc targetPort 9443"), false, "svc.ns.svc:443", trustUnreachable, false},
		{"denied", statusErr(http.StatusBadRequest, "", `admission webhook "`+webhook+`" denied the request: no kind "TrustProbe" is registered`), true, "", "", false},
		{"404", statusErr(http.StatusInternalServerError, metav1.StatusReasonInternalError,
			`Internal error occurred: failed calling webhook "`+webhook+`": failed to call webhook: the server could not find the requested resource`), true, "", "", false},
		{"denied by someone else's webhook", statusErr(http.StatusForbidden, metav1.StatusReasonForbidden, `admission webhook "deny-all.example.com" denied the request: no`), false, "", trustInconclusive, true},
		{"RBAC", apierrors.NewForbidden(schema.GroupResource{Group: "operators.hookwright.dev", Resource: "trustprobes"}, "", errors.New("no RBAC")), false, "", trustUnavailable, true},
		{"the probe CRD is not served", apierrors.NewNotFound(schema.GroupResource{Group: "operators.hookwright.dev", Resource: "trustprobes"}, ""), false, "", trustUnavailable, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := classifyAdmissionProbe(tt.err, webhook, idle)
			if o.answered != tt.answered || o.host != tt.host || (!tt.answered && o.verdict != tt.verdict) || o.final != tt.final {
				t.Errorf("classifyAdmissionProbe = %+v, want answered=%v host=%q verdict=%q final=%v", o, tt.answered, tt.host, tt.verdict, tt.final)
			}
		})
	}
}

func TestAdmissionDryRunCandidates(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	mapper.Add(schema.GroupVersionKind{Group: "stable.example.com", Version: "v1", Kind: "CronTab"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "stable.example.com", Version: "v2", Kind: "CronTab"}, meta.RESTScopeNamespace)
	storage := func(group, resource string) string {
		if group == "stable.example.com" && resource == "crontabs" {
			return "v2"
		}
		return ""
	}
	rule := func(ops []admissionregistrationv1.OperationType, group, version string, resources ...string) v1alpha1.AdmissionRule {
		return v1alpha1.AdmissionRule{Operations: ops, APIGroups: []string{group}, APIVersions: []string{version}, Resources: resources}
	}
	create := []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	all := []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
	update := []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
	tests := []struct {
		name       string
		def        v1alpha1.WebhookDefinition
		namespaces []string
		want       *admissionDryRun
		why        string
	}{
		{"a CRD: its storage version, in the install's namespace",
			v1alpha1.WebhookDefinition{Rules: []v1alpha1.AdmissionRule{rule(create, "stable.example.com", "v1", "crontabs")}},
			[]string{"crontab-system", "default"},
			&admissionDryRun{gvk: schema.GroupVersionKind{Group: "stable.example.com", Version: "v2", Kind: "CronTab"}, resource: "crontabs.stable.example.com", namespace: "crontab-system"}, ""},
		{"matchPolicy Exact: the rule's version",
			v1alpha1.WebhookDefinition{Rules: []v1alpha1.AdmissionRule{rule(all, "stable.example.com", "v1", "crontabs")}, MatchPolicy: ptr.To(admissionregistrationv1.Exact)},
			[]string{"crontab-system"},
			&admissionDryRun{gvk: schema.GroupVersionKind{Group: "stable.example.com", Version: "v1", Kind: "CronTab"}, resource: "crontabs.stable.example.com", namespace: "crontab-system"}, ""},
		{"pods, the install's namespace excluded: default, with the objectSelector's labels",
			v1alpha1.WebhookDefinition{Rules: []v1alpha1.AdmissionRule{rule(create, "", "v1", "pods")},
				ObjectSelector: &v1alpha1.ObjectSelector{MatchLabels: map[string]string{"app": "x"}, MatchExpressions: []v1alpha1.LabelSelectorRequirement{
					{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "db"}}, {Key: "team", Operator: metav1.LabelSelectorOpExists},
					{Key: "legacy", Operator: metav1.LabelSelectorOpDoesNotExist}}}},
			[]string{"default"},
			&admissionDryRun{gvk: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, resource: "pods", namespace: "default",
				labels: map[string]string{"app": "x", "tier": "web", "team": "hookwright-verify"}}, ""},
		{"namespaced first",
			v1alpha1.WebhookDefinition{Rules: []v1alpha1.AdmissionRule{rule(create, "", "*", "namespaces", "configmaps")}},
			[]string{"default"},
			&admissionDryRun{gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, resource: "configmaps", namespace: "default"}, ""},
		{"cluster-scoped when nothing else",
			v1alpha1.WebhookDefinition{Rules: []v1alpha1.AdmissionRule{rule(create, "", "*", "namespaces", "configmaps")}},
			nil,
			&admissionDryRun{gvk: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, resource: "namespaces"}, ""},
		{"a rule scoped to Cluster skips namespaced resources",
			v1alpha1.WebhookDefinition{Rules: []v1alpha1.AdmissionRule{{Operations: create, APIGroups: []string{""}, APIVersions: []string{"v1"},
				Resources: []string{"configmaps"}, Scope: ptr.To(admissionregistrationv1.ClusterScope)}}},
			[]string{"default"}, nil, "configmaps (namespaced, and the rule matches cluster-scoped resources only)"},
		{"no CREATE", v1alpha1.WebhookDefinition{Rules: []v1alpha1.AdmissionRule{rule(update, "", "v1", "configmaps")}},
			[]string{"default"}, nil, "no rule matches CREATE"},
		{"wildcards and subresources only", v1alpha1.WebhookDefinition{Rules: []v1alpha1.AdmissionRule{rule(create, "*", "*", "*"), rule(create, "", "v1", "pods/status")}},
			[]string{"default"}, nil, "* (not one concrete resource), pods/status (not one concrete resource)"},
		{"not served", v1alpha1.WebhookDefinition{Rules: []v1alpha1.AdmissionRule{rule(create, "other.example.com", "v1", "gadgets")}},
			[]string{"default"}, nil, "gadgets.other.example.com (not served"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			candidates, why := admissionDryRunCandidates(tt.def, mapper, storage, tt.namespaces)
			var got *admissionDryRun
			if len(candidates) > 0 {
				got = candidates[0]
			}
			switch {
			case tt.want == nil && got != nil:
				t.Fatalf("chose %+v, want none (%s)", got, tt.why)
			case tt.want != nil && (got == nil || got.gvk != tt.want.gvk || got.resource != tt.want.resource || got.namespace != tt.want.namespace || !mapsEqual(got.labels, tt.want.labels)):
				t.Fatalf("chose %+v (%s), want %+v", got, why, tt.want)
			case got != nil && got.resource != got.plural && !strings.HasPrefix(got.resource, got.plural+"."):
				t.Errorf("resource %q and plural %q disagree", got.resource, got.plural)
			case !strings.Contains(why, tt.why):
				t.Errorf("why = %q, want it to contain %q", why, tt.why)
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestVerifyNamespaces(t *testing.T) {
	if got := verifyNamespaces("crontab-system", []string{"hookwright-system", "kube-system"}); strings.Join(got, ",") != "crontab-system,default" {
		t.Errorf("got %v", got)
	}
	if got := verifyNamespaces("crontab-system", []string{"crontab-system", "hookwright-system", "kube-system"}); strings.Join(got, ",") != "default" {
		t.Errorf("got %v", got)
	}
	if got := verifyNamespaces("default", []string{"default"}); len(got) != 0 {
		t.Errorf("got %v", got)
	}
}
