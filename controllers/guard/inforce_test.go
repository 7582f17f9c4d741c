package guard

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// defaulted is what the API server stores for the shipped objects.
func defaulted() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	p, b := Policy(), Binding()
	p.Spec.MatchConstraints.MatchPolicy = ptr.To(admissionregistrationv1.Equivalent)
	p.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{}
	p.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{}
	p.Spec.MatchConstraints.ResourceRules[0].Scope = ptr.To(admissionregistrationv1.AllScopes)
	b.Spec.MatchResources = &admissionregistrationv1.MatchResources{
		MatchPolicy: ptr.To(admissionregistrationv1.Equivalent), NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{},
	}
	p.Labels["team"], b.Annotations = "platform", map[string]string{"note": "kept"}
	return p, b
}

func TestNotInForce(t *testing.T) {
	cases := []struct {
		name   string
		change func(*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		want   string // substring of the explanation; "" means in force
	}{
		{"as shipped, with the API server's defaults and extra metadata", nil, ""},
		{"policy deleted", func(_ *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			return nil, b
		}, "ValidatingAdmissionPolicy hookwright-install-authority does not exist"},
		{"binding deleted", func(p *admissionregistrationv1.ValidatingAdmissionPolicy, _ *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			return p, nil
		}, "Binding hookwright-install-authority does not exist"},
		{"failurePolicy Ignore", func(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
			return p, b
		}, "failurePolicy Ignore"},
		{"a CRD check dropped", func(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			p.Spec.Validations = p.Spec.Validations[1:]
			return p, b
		}, "validations"},
		{"an admission configuration check dropped", func(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			p.Spec.Validations = p.Spec.Validations[:len(p.Spec.Validations)-1]
			return p, b
		}, "validations"},
		{"a check weakened", func(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			p.Spec.Validations[0].Expression = "true"
			return p, b
		}, "validations"},
		{"match condition changed", func(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			p.Spec.MatchConditions[0].Expression = "false"
			return p, b
		}, "matchConditions"},
		{"policy limited to some namespaces", func(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			p.Spec.MatchConstraints.NamespaceSelector.MatchLabels = map[string]string{"guarded": "yes"}
			return p, b
		}, "matchConstraints"},
		{"updates no longer matched", func(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			p.Spec.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
			return p, b
		}, "matchConstraints"},
		{"binding warns only", func(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit}
			return p, b
		}, "does not Deny"},
		{"binding narrowed to a namespace", func(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.MatchResources.NamespaceSelector.MatchLabels = map[string]string{"kubernetes.io/metadata.name": "nobody"}
			return p, b
		}, "narrowed"},
		{"binding points at another policy", func(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.PolicyName = "allow-all"
			return p, b
		}, `binds policy "allow-all"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, b := defaulted()
			if tc.change != nil {
				p, b = tc.change(p, b)
			}
			got := NotInForce(p, b)
			if tc.want == "" && got != "" {
				t.Fatalf("NotInForce = %q, want in force", got)
			}
			if tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("NotInForce = %q, want it to contain %q", got, tc.want)
			}
		})
	}
}

func TestPolicyChecksEveryCRDSlot(t *testing.T) {
	// One authorization check per validation: the API server's CEL cost
	// allows at most two per expression.
	p := Policy()
	for i, v := range p.Spec.Validations {
		if n := strings.Count(v.Expression, ".check("); n != 1 {
			t.Errorf("validation %d makes %d authorization checks, want 1: %s", i, n, v.Expression)
		}
	}
	if got, want := len(p.Spec.Validations), MaxConversionCRDs+2+4; got != want {
		t.Fatalf("%d validations, want one per CRD slot (%d) plus Deployments and Services plus create and patch on the two admission configuration kinds", got, MaxConversionCRDs)
	}
	// The API server's runtime budget per policy evaluation allows about
	// 28 authorization checks (10M cost units, 350k each).
	if n := strings.Count(strings.Join(expressions(p), "\n"), ".check("); n > 26 {
		t.Fatalf("an evaluation may make %d authorization checks; the API server's budget allows about 28", n)
	}
}

func expressions(p *admissionregistrationv1.ValidatingAdmissionPolicy) []string {
	var out []string
	for _, v := range p.Spec.Validations {
		out = append(out, v.Expression)
	}
	return out
}

// TestPolicyChecksAdmissionConfigurations: an install with an admission
// webhook needs create and patch on its kind of configuration, checked
// only when it has one, each named in its message.
func TestPolicyChecksAdmissionConfigurations(t *testing.T) {
	p := Policy()
	for _, kind := range []struct{ webhookType, resource string }{
		{"ValidatingAdmissionWebhook", "validatingwebhookconfigurations"},
		{"MutatingAdmissionWebhook", "mutatingwebhookconfigurations"},
	} {
		for _, verb := range []string{"create", "patch"} {
			check := "authorizer.group('admissionregistration.k8s.io').resource('" + kind.resource + "').check('" + verb + "').allowed()"
			found := 0
			for _, v := range p.Spec.Validations {
				if !strings.Contains(v.Expression, check) {
					continue
				}
				found++
				if !strings.HasPrefix(v.Expression, "!object.spec.webhookdefinitions.exists(w, w.type == '"+kind.webhookType+"') || ") {
					t.Errorf("%s %s is checked unconditionally or on the wrong type: %s", verb, kind.resource, v.Expression)
				}
				for _, want := range []string{"request.userInfo.username", "may not " + verb + " " + kind.resource + ".admissionregistration.k8s.io", "Ask a cluster admin for create and patch"} {
					if !strings.Contains(v.MessageExpression, want) {
						t.Errorf("the message for %s %s lacks %q: %s", verb, kind.resource, want, v.MessageExpression)
					}
				}
				if v.Reason == nil || *v.Reason != metav1.StatusReasonForbidden {
					t.Errorf("%s %s: reason %v, want Forbidden", verb, kind.resource, v.Reason)
				}
			}
			if found != 1 {
				t.Errorf("%d validations check %s on %s, want 1", found, verb, kind.resource)
			}
		}
	}
}
