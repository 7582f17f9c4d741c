package v1alpha1

import (
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// WebhookDefinition is operator-framework's WebhookDescription with the
// same JSON fields, plus the validation (bounds, enums, patterns) that the
// admission rules need: without bounds, the API server rejects the CEL
// rules as too costly. ToWebhookDescription converts it losslessly.
//
// For the two admission types the rules refuse what
// admissionregistration.k8s.io/v1 would refuse later in the
// ValidatingWebhookConfiguration or MutatingWebhookConfiguration Hookwright
// writes, so a mistake is reported when the install is applied, not when
// Hookwright registers the webhook.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'ConversionWebhook' || (has(self.conversionCRDs) && size(self.conversionCRDs) > 0)",message="a ConversionWebhook needs at least one conversionCRDs entry"
// +kubebuilder:validation:XValidation:rule="self.type == 'ConversionWebhook' || !has(self.conversionCRDs) || size(self.conversionCRDs) == 0",message="conversionCRDs applies only to ConversionWebhook: an admission webhook says what it sees in rules; move the CRDs to a ConversionWebhook entry or remove them"
// +kubebuilder:validation:XValidation:rule="self.type == 'ConversionWebhook' || (has(self.rules) && size(self.rules) > 0)",message="an admission webhook needs at least one rule: add rules[] with the operations, apiGroups, apiVersions and resources whose requests it sees"
// +kubebuilder:validation:XValidation:rule="self.type == 'ConversionWebhook' || (has(self.sideEffects) && (self.sideEffects == 'None' || self.sideEffects == 'NoneOnDryRun'))",message="an admission webhook needs sideEffects None or NoneOnDryRun: admissionregistration.k8s.io/v1 refuses Some and Unknown, and Hookwright verifies every admission webhook with a server-side dry-run request, which the API server sends only to webhooks without side effects on dry run"
// +kubebuilder:validation:XValidation:rule="self.type == 'MutatingAdmissionWebhook' || !has(self.reinvocationPolicy)",message="reinvocationPolicy applies only to MutatingAdmissionWebhook: remove it from this webhook"
// +kubebuilder:validation:XValidation:rule="self.type == 'ConversionWebhook' || self.generateName.matches('^[^.]+[.][^.]+[.]')",message="an admission webhook's generateName is its webhook name, which the API server requires to be a fully qualified name: it needs at least three DNS segments (for example vcrontab.kb.io)"
// +kubebuilder:validation:XValidation:rule="!has(self.targetPort) || type(self.targetPort) == string || (int(self.targetPort) >= 1 && int(self.targetPort) <= 65535)",message="targetPort must be a port number from 1 to 65535 or a port name"
type WebhookDefinition struct {
	// GenerateName names the webhook; unique within the install. For an
	// admission webhook it is the webhook's name in its configuration, a
	// name of at least three DNS segments (vcrontab.kb.io).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	GenerateName string `json:"generateName"`

	// Type of the webhook: ConversionWebhook (a CRD's spec.conversion),
	// ValidatingAdmissionWebhook or MutatingAdmissionWebhook (a webhook in
	// the install's ValidatingWebhookConfiguration or
	// MutatingWebhookConfiguration).
	// +kubebuilder:validation:Enum=ValidatingAdmissionWebhook;MutatingAdmissionWebhook;ConversionWebhook
	Type operatorsv1alpha1.WebhookAdmissionType `json:"type"`

	// DeploymentName names the install deployment serving this webhook: a
	// Deployment name (DNS-1123 subdomain), from which Hookwright derives
	// valid Service and Secret names (controllers/desired/names.go). The
	// deployments' own names are checked through it: every webhook names one.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="deploymentName must be a Deployment name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit); rename the deployment in install.spec.deployments too"
	DeploymentName string `json:"deploymentName"`

	// ContainerPort is the Service port the API server calls.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=443
	// +optional
	ContainerPort int32 `json:"containerPort,omitempty"`

	// TargetPort is the pod port behind the Service; defaults to ContainerPort.
	// +optional
	TargetPort *intstr.IntOrString `json:"targetPort,omitempty"`

	// AdmissionReviewVersions, as in a CSV: the AdmissionReview versions an
	// admission webhook speaks, and for a ConversionWebhook the CRD's
	// conversionReviewVersions. The API server speaks v1 and v1beta1 only.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +listType=set
	// +kubebuilder:validation:XValidation:rule="self.all(v, v == 'v1' || v == 'v1beta1')",message="admissionReviewVersions may only name v1 and v1beta1 (the AdmissionReview and ConversionReview versions the API server speaks)"
	AdmissionReviewVersions []string `json:"admissionReviewVersions"`

	// WebhookPath is the HTTP path the API server posts to; "/" when unset.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/`
	// +kubebuilder:validation:XValidation:rule="self.matches('^(/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*)*/?$')",message="each segment of webhookPath must be a DNS subdomain (lowercase letters, digits, '-' and '.'), as the API server requires of a webhook service path: for example /convert or /validate-stable-example-com-v1-crontab"
	// +optional
	WebhookPath *string `json:"webhookPath,omitempty"`

	// ConversionCRDs are the CRDs (<plural>.<group>) this webhook converts;
	// ConversionWebhook only.
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)+$'))",message="each conversionCRDs entry must be a CRD name, <plural>.<group> (for example crontabs.stable.example.com)"
	// +optional
	ConversionCRDs []string `json:"conversionCRDs,omitempty"`

	// The fields below are an admission webhook's, as in a ValidatingWebhook
	// or MutatingWebhook of admissionregistration.k8s.io/v1. A
	// ConversionWebhook ignores them (except reinvocationPolicy, refused).

	// Rules say which requests the webhook sees; at least one for an
	// admission webhook.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	Rules []AdmissionRule `json:"rules,omitempty"`
	// FailurePolicy: what the API server does when the webhook cannot be
	// called (Fail, the API server's default, or Ignore).
	// +kubebuilder:validation:Enum=Ignore;Fail
	// +optional
	FailurePolicy *admissionregistrationv1.FailurePolicyType `json:"failurePolicy,omitempty"`
	// MatchPolicy: Exact, or Equivalent (the API server's default) to see a
	// request through another version of a matched resource too.
	// +kubebuilder:validation:Enum=Exact;Equivalent
	// +optional
	MatchPolicy *admissionregistrationv1.MatchPolicyType `json:"matchPolicy,omitempty"`
	// ObjectSelector limits the webhook to objects with these labels.
	// +optional
	ObjectSelector *ObjectSelector `json:"objectSelector,omitempty"`
	// SideEffects: None or NoneOnDryRun for an admission webhook (Some and
	// Unknown are refused by admissionregistration.k8s.io/v1).
	// +kubebuilder:validation:Enum=None;NoneOnDryRun;Some;Unknown
	// +optional
	SideEffects *admissionregistrationv1.SideEffectClass `json:"sideEffects,omitempty"`
	// TimeoutSeconds the API server waits for the webhook, 1 to 30 (10 when
	// unset).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=30
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
	// ReinvocationPolicy of a MutatingAdmissionWebhook: Never (the API
	// server's default) or IfNeeded.
	// +kubebuilder:validation:Enum=Never;IfNeeded
	// +optional
	ReinvocationPolicy *admissionregistrationv1.ReinvocationPolicyType `json:"reinvocationPolicy,omitempty"`
}

// AdmissionRule is admissionregistration.k8s.io/v1's RuleWithOperations
// with the same JSON fields, bounded so its CEL rules are cheap enough for
// the API server, and checked as the API server checks a webhook's rules.
//
// +kubebuilder:validation:XValidation:rule="has(self.operations) && size(self.operations) > 0",message="a rule needs at least one operation: CREATE, UPDATE, DELETE, CONNECT, or '*' alone for all of them"
// +kubebuilder:validation:XValidation:rule="has(self.apiGroups) && size(self.apiGroups) > 0",message="a rule needs apiGroups: the API groups of the resources it matches (an empty string for the core group, '*' alone for every group)"
// +kubebuilder:validation:XValidation:rule="has(self.apiVersions) && size(self.apiVersions) > 0",message="a rule needs apiVersions: the versions of the resources it matches ('*' alone for every version)"
// +kubebuilder:validation:XValidation:rule="has(self.resources) && size(self.resources) > 0",message="a rule needs resources: the resources it matches (for example crontabs, pods/status, or '*')"
type AdmissionRule struct {
	// Operations the rule matches: CREATE, UPDATE, DELETE, CONNECT, or '*'.
	// +kubebuilder:validation:MaxItems=5
	// +kubebuilder:validation:items:Enum="*";CREATE;UPDATE;DELETE;CONNECT
	// +kubebuilder:validation:XValidation:rule="size(self) <= 1 || !self.exists(o, o == '*')",message="'*' in operations means every operation: list it alone"
	// +listType=atomic
	// +optional
	Operations []admissionregistrationv1.OperationType `json:"operations,omitempty"`
	// APIGroups the rule matches; an empty string is the core group, '*' all groups.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="size(self) <= 1 || !self.exists(g, g == '*')",message="'*' in apiGroups means every group: list it alone"
	// +listType=atomic
	// +optional
	APIGroups []string `json:"apiGroups,omitempty"`
	// APIVersions the rule matches; '*' all versions.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="size(self) <= 1 || !self.exists(v, v == '*')",message="'*' in apiVersions means every version: list it alone"
	// +listType=atomic
	// +optional
	APIVersions []string `json:"apiVersions,omitempty"`
	// Resources the rule matches: a resource, resource/subresource, or
	// '*', '*/*', '*/subresource', 'resource/*'.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=127
	// +kubebuilder:validation:XValidation:rule="size(self) <= 1 || !self.exists(r, r == '*/*')",message="'*/*' in resources means every resource and subresource: list it alone"
	// +kubebuilder:validation:XValidation:rule="!self.exists(r, r == '*') || self.all(r, r == '*' || r.contains('/'))",message="'*' in resources means every resource: list no other resource without a subresource next to it (entries such as pods/status may stay)"
	// +kubebuilder:validation:XValidation:rule="self.all(a, !a.endsWith('/*') || a == '*/*' || self.all(b, b.endsWith('/*') || !b.startsWith(a.substring(0, size(a) - 1))))",message="'x/*' in resources covers every subresource of x: list no other x/subresource next to it"
	// +kubebuilder:validation:XValidation:rule="self.all(a, !a.startsWith('*/') || a == '*/*' || self.all(b, b.startsWith('*/') || !b.endsWith(a.substring(1))))",message="'*/y' in resources covers subresource y of every resource: list no other resource/y next to it"
	// +listType=atomic
	// +optional
	Resources []string `json:"resources,omitempty"`
	// Scope: Cluster, Namespaced or '*' (the API server's default).
	// +kubebuilder:validation:Enum="*";Cluster;Namespaced
	// +optional
	Scope *admissionregistrationv1.ScopeType `json:"scope,omitempty"`
}

// ToV1 returns r as admissionregistration.k8s.io/v1 has it.
func (r AdmissionRule) ToV1() admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: r.Operations,
		Rule: admissionregistrationv1.Rule{
			APIGroups: r.APIGroups, APIVersions: r.APIVersions, Resources: r.Resources, Scope: r.Scope,
		},
	}
}

// ObjectSelector is a metav1.LabelSelector with the same JSON fields,
// bounded, and checked as the API server checks a webhook's objectSelector.
type ObjectSelector struct {
	// MatchLabels: label key to value (the API server checks their form
	// when Hookwright registers the webhook).
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
	// MatchExpressions: requirements on labels, all of which must hold.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is metav1.LabelSelectorRequirement, bounded and
// checked.
//
// +kubebuilder:validation:XValidation:rule="!(self.operator == 'In' || self.operator == 'NotIn') || (has(self.values) && size(self.values) > 0)",message="operators In and NotIn need at least one value"
// +kubebuilder:validation:XValidation:rule="!(self.operator == 'Exists' || self.operator == 'DoesNotExist') || !has(self.values) || size(self.values) == 0",message="operators Exists and DoesNotExist take no values: remove values"
type LabelSelectorRequirement struct {
	// Key is the label key.
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$')",message="key must be a label key: [prefix/]name, the name at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
	Key string `json:"key"`
	// Operator: In, NotIn, Exists or DoesNotExist.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator metav1.LabelSelectorOperator `json:"operator"`
	// Values for In and NotIn; none for Exists and DoesNotExist.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// ToV1 returns s as a metav1.LabelSelector (nil for nil).
func (s *ObjectSelector) ToV1() *metav1.LabelSelector {
	if s == nil {
		return nil
	}
	out := &metav1.LabelSelector{MatchLabels: s.MatchLabels}
	if s.MatchExpressions != nil {
		out.MatchExpressions = make([]metav1.LabelSelectorRequirement, len(s.MatchExpressions))
		for i, e := range s.MatchExpressions {
			out.MatchExpressions[i] = metav1.LabelSelectorRequirement{Key: e.Key, Operator: e.Operator, Values: e.Values}
		}
	}
	return out
}

// AdmissionRules returns d's rules as admissionregistration.k8s.io/v1 has
// them.
func (d WebhookDefinition) AdmissionRules() []admissionregistrationv1.RuleWithOperations {
	if d.Rules == nil {
		return nil
	}
	out := make([]admissionregistrationv1.RuleWithOperations, len(d.Rules))
	for i, r := range d.Rules {
		out[i] = r.ToV1()
	}
	return out
}

func rulesFrom(rules []admissionregistrationv1.RuleWithOperations) []AdmissionRule {
	if rules == nil {
		return nil
	}
	out := make([]AdmissionRule, len(rules))
	for i, r := range rules {
		out[i] = AdmissionRule{Operations: r.Operations, APIGroups: r.APIGroups, APIVersions: r.APIVersions, Resources: r.Resources, Scope: r.Scope}
	}
	return out
}

func selectorFrom(s *metav1.LabelSelector) *ObjectSelector {
	if s == nil {
		return nil
	}
	out := &ObjectSelector{MatchLabels: s.MatchLabels}
	if s.MatchExpressions != nil {
		out.MatchExpressions = make([]LabelSelectorRequirement, len(s.MatchExpressions))
		for i, e := range s.MatchExpressions {
			out.MatchExpressions[i] = LabelSelectorRequirement{Key: e.Key, Operator: e.Operator, Values: e.Values}
		}
	}
	return out
}

// ToWebhookDescription returns the operator-framework form of d.
func (d WebhookDefinition) ToWebhookDescription() operatorsv1alpha1.WebhookDescription {
	return operatorsv1alpha1.WebhookDescription{
		GenerateName: d.GenerateName, Type: d.Type, DeploymentName: d.DeploymentName,
		ContainerPort: d.ContainerPort, TargetPort: d.TargetPort, Rules: d.AdmissionRules(),
		FailurePolicy: d.FailurePolicy, MatchPolicy: d.MatchPolicy, ObjectSelector: d.ObjectSelector.ToV1(),
		SideEffects: d.SideEffects, TimeoutSeconds: d.TimeoutSeconds,
		AdmissionReviewVersions: d.AdmissionReviewVersions, ReinvocationPolicy: d.ReinvocationPolicy,
		WebhookPath: d.WebhookPath, ConversionCRDs: d.ConversionCRDs,
	}
}

// WebhookDefinitionFrom converts an operator-framework WebhookDescription.
func WebhookDefinitionFrom(w operatorsv1alpha1.WebhookDescription) WebhookDefinition {
	return WebhookDefinition{
		GenerateName: w.GenerateName, Type: w.Type, DeploymentName: w.DeploymentName,
		ContainerPort: w.ContainerPort, TargetPort: w.TargetPort, Rules: rulesFrom(w.Rules),
		FailurePolicy: w.FailurePolicy, MatchPolicy: w.MatchPolicy, ObjectSelector: selectorFrom(w.ObjectSelector),
		SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds,
		AdmissionReviewVersions: w.AdmissionReviewVersions, ReinvocationPolicy: w.ReinvocationPolicy,
		WebhookPath: w.WebhookPath, ConversionCRDs: w.ConversionCRDs,
	}
}
