package guard

import (
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// NotInForce explains why the live policy and binding (nil when missing)
// do not enforce the guard, or returns "" when they do. Only what decides
// enforcement is compared, so the API server's defaults and added labels
// or annotations never count as a change; anything that could let an
// install through (a narrower match, a selector, a dropped or edited
// check, a warn-only binding) does.
func NotInForce(policy *admissionregistrationv1.ValidatingAdmissionPolicy, binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding) string {
	if policy == nil {
		return fmt.Sprintf("ValidatingAdmissionPolicy %s does not exist", Name)
	}
	if binding == nil {
		return fmt.Sprintf("ValidatingAdmissionPolicyBinding %s does not exist", Name)
	}
	want := Policy().Spec
	have := policy.Spec
	switch {
	case ptr.Deref(have.FailurePolicy, admissionregistrationv1.Fail) != admissionregistrationv1.Fail:
		return fmt.Sprintf("ValidatingAdmissionPolicy %s has failurePolicy %s, not Fail", Name, *have.FailurePolicy)
	case have.ParamKind != nil:
		return fmt.Sprintf("ValidatingAdmissionPolicy %s was given a paramKind", Name)
	case !sameMatch(have.MatchConstraints, want.MatchConstraints):
		return fmt.Sprintf("ValidatingAdmissionPolicy %s matches other requests than the ones Hookwright ships (matchConstraints changed)", Name)
	case !equality.Semantic.DeepEqual(have.MatchConditions, want.MatchConditions):
		return fmt.Sprintf("ValidatingAdmissionPolicy %s has changed matchConditions", Name)
	case !equality.Semantic.DeepEqual(have.Variables, want.Variables) || !equality.Semantic.DeepEqual(have.Validations, want.Validations):
		return fmt.Sprintf("ValidatingAdmissionPolicy %s has changed variables or validations", Name)
	}
	b := binding.Spec
	switch {
	case b.PolicyName != Name:
		return fmt.Sprintf("ValidatingAdmissionPolicyBinding %s binds policy %q, not %s", Name, b.PolicyName, Name)
	case !slices.Contains(b.ValidationActions, admissionregistrationv1.Deny):
		return fmt.Sprintf("ValidatingAdmissionPolicyBinding %s does not Deny (validationActions %v)", Name, b.ValidationActions)
	case b.ParamRef != nil:
		return fmt.Sprintf("ValidatingAdmissionPolicyBinding %s was given a paramRef", Name)
	case !matchesEverything(b.MatchResources):
		return fmt.Sprintf("ValidatingAdmissionPolicyBinding %s was narrowed by matchResources", Name)
	}
	return ""
}

// sameMatch compares match constraints with the API server's defaults
// (matchPolicy Equivalent, empty selectors, scope "*") filled in.
func sameMatch(have, want *admissionregistrationv1.MatchResources) bool {
	if have == nil || !matchesEverything(&admissionregistrationv1.MatchResources{
		NamespaceSelector: have.NamespaceSelector, ObjectSelector: have.ObjectSelector,
		ExcludeResourceRules: have.ExcludeResourceRules, MatchPolicy: have.MatchPolicy,
	}) {
		return false
	}
	if len(have.ResourceRules) != len(want.ResourceRules) {
		return false
	}
	for i, rule := range have.ResourceRules {
		rule, wanted := rule.DeepCopy(), want.ResourceRules[i].DeepCopy()
		for _, r := range []*admissionregistrationv1.NamedRuleWithOperations{rule, wanted} {
			if r.Scope == nil {
				r.Scope = ptr.To(admissionregistrationv1.AllScopes)
			}
		}
		if !equality.Semantic.DeepEqual(rule, wanted) {
			return false
		}
	}
	return true
}

// matchesEverything: no selector, rule or exclusion narrows what is matched.
func matchesEverything(m *admissionregistrationv1.MatchResources) bool {
	if m == nil {
		return true
	}
	return emptySelector(m.NamespaceSelector) && emptySelector(m.ObjectSelector) &&
		len(m.ResourceRules) == 0 && len(m.ExcludeResourceRules) == 0 &&
		ptr.Deref(m.MatchPolicy, admissionregistrationv1.Equivalent) == admissionregistrationv1.Equivalent
}

func emptySelector(s *metav1.LabelSelector) bool {
	return s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0)
}
