// Package guard builds the admission guard that keeps a WebhookInstall from
// making Hookwright do what its creator could not do, and tells whether a
// cluster's live copy of it is in force.
//
// The guard is a ValidatingAdmissionPolicy and its binding, enforced by the
// API server itself: creating or changing an install's spec requires that
// the requesting user may patch every CRD the install converts (pointing
// spec.conversion at a webhook hands it every object of that type, so it is
// worth exactly that permission), may create the Deployments and Services
// it asks Hookwright to create, and, for an install with a validating or
// mutating admission webhook, may create and patch
// ValidatingWebhookConfigurations or MutatingWebhookConfigurations
// (registering an admission webhook hands it every request its rules
// match, cluster-wide). It is Kubernetes' own RBAC escalation rule: nobody
// grants through Hookwright what they do not hold.
//
// config/guard is generated from this file (`make manifests`), so the
// manifests and the operator's in-force check cannot disagree.
package guard

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Name of the ValidatingAdmissionPolicy and of its binding.
const Name = "hookwright-install-authority"

// MaxConversionCRDs bounds the CRDs one install converts. The API server
// gives an authorization check a fixed CEL cost that allows one or two per
// expression and about 28 per policy evaluation, so the guard checks each
// CRD in its own validation and the install's CRD rule caps their number.
// With the two workload checks and the four admission configuration checks
// an evaluation makes at most 22.
const MaxConversionCRDs = 16

// admissionVerbs are what a user needs on the admission configurations an
// install registers webhooks in: Hookwright creates each configuration and
// patches it on every change and CA rotation.
var admissionVerbs = []string{"create", "patch"}

// crdsVariable lists the CRDs the install converts: its owned CRDs that a
// webhookdefinition names (the CRD's schema requires every conversion CRD
// to be owned, so nothing is missed).
const crdsVariable = `has(object.spec.customresourcedefinitions.owned) ? ` +
	`object.spec.customresourcedefinitions.owned.map(o, o.name).filter(n, ` +
	`object.spec.webhookdefinitions.exists(w, has(w.conversionCRDs) && n in w.conversionCRDs)) : []`

// authorityRequested: the request creates an install, or changes what it
// converts (webhookdefinitions, the owned CRDs), what it runs (install) or
// whose CRDs it takes over (replaces).
const authorityRequested = `request.operation == 'CREATE' || ` +
	`object.spec.webhookdefinitions != oldObject.spec.webhookdefinitions || ` +
	`object.spec.customresourcedefinitions != oldObject.spec.customresourcedefinitions || ` +
	`object.spec.install != oldObject.spec.install || ` +
	`object.spec.?replaces.orValue('') != oldObject.spec.?replaces.orValue('')`

// Policy is the guard's ValidatingAdmissionPolicy.
func Policy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	validations := make([]admissionregistrationv1.Validation, 0, MaxConversionCRDs+2+2*len(admissionVerbs))
	for i := range MaxConversionCRDs {
		crd := fmt.Sprintf("variables.conversionCRDs[%d]", i)
		validations = append(validations, admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("size(variables.conversionCRDs) <= %d || "+
				"authorizer.group('apiextensions.k8s.io').resource('customresourcedefinitions').name(%s).check('patch').allowed()", i, crd),
			MessageExpression: fmt.Sprintf("'a WebhookInstall that converts CRD ' + %[1]s + ' points its spec.conversion at a webhook that sees every object of that type, so it needs the permission to patch that CRD: ' + "+
				"request.userInfo.username + ' may not patch customresourcedefinitions.apiextensions.k8s.io ' + %[1]s + '. Ask a cluster admin for patch on it (resourceNames: [' + %[1]s + '])'", crd),
			Reason: ptr.To(metav1.StatusReasonForbidden),
		})
	}
	for _, workload := range []struct{ group, resource, kind string }{
		{"apps", "deployments", "Deployments"},
		{"", "services", "Services"},
	} {
		qualified := workload.resource
		if workload.group != "" {
			qualified += "." + workload.group
		}
		validations = append(validations, admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("authorizer.group('%s').resource('%s').namespace(request.namespace).check('create').allowed()", workload.group, workload.resource),
			MessageExpression: fmt.Sprintf("'a WebhookInstall makes Hookwright create its webhook %s in namespace ' + request.namespace + ': ' + "+
				"request.userInfo.username + ' may not create %s there. Ask for create on %s in that namespace (the edit role has it)'", workload.kind, qualified, qualified),
			Reason: ptr.To(metav1.StatusReasonForbidden),
		})
	}
	// An install with an admission webhook of a kind makes Hookwright
	// create and patch that kind's configuration: one check per
	// validation, so each message names the one missing permission.
	for _, kind := range []struct{ webhookType, resource, kind string }{
		{"ValidatingAdmissionWebhook", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration"},
		{"MutatingAdmissionWebhook", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration"},
	} {
		qualified := kind.resource + ".admissionregistration.k8s.io"
		for _, verb := range admissionVerbs {
			validations = append(validations, admissionregistrationv1.Validation{
				Expression: fmt.Sprintf("!object.spec.webhookdefinitions.exists(w, w.type == '%s') || "+
					"authorizer.group('admissionregistration.k8s.io').resource('%s').check('%s').allowed()", kind.webhookType, kind.resource, verb),
				MessageExpression: fmt.Sprintf("'a WebhookInstall with a %s makes Hookwright register it in a %s, where it sees every request its rules match, cluster-wide, "+
					"so it needs the permission to create and patch those: ' + request.userInfo.username + ' may not %s %s. "+
					"Ask a cluster admin for create and patch on %s'", kind.webhookType, kind.kind, verb, qualified, qualified),
				Reason: ptr.To(metav1.StatusReasonForbidden),
			})
		}
	}
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: map[string]string{"app.kubernetes.io/name": "hookwright"}},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups:   []string{"operators.hookwright.dev"},
							APIVersions: []string{"*"},
							Resources:   []string{"webhookinstalls"},
						},
					},
				}},
			},
			// Only a write to what carries authority asks Hookwright for
			// something: finalizer, label and other metadata updates
			// (Hookwright's own among them) pass, status is a subresource
			// the rule does not match, and so do the certificate policy,
			// version and display name, which grant nothing (and which a
			// Go client re-serializes: "10m" comes back as "10m0s"). A new
			// spec field that names something to run, convert or register
			// must be added here (admission webhooks are in
			// webhookdefinitions, which is).
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "authority-requested",
				Expression: authorityRequested,
			}},
			Variables:   []admissionregistrationv1.Variable{{Name: "conversionCRDs", Expression: crdsVariable}},
			Validations: validations,
		},
	}
}

// Binding enforces Policy on every WebhookInstall in every namespace.
func Binding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: map[string]string{"app.kubernetes.io/name": "hookwright"}},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
}
