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
// +kubebuilder:validation:XValidation:rule="self.type == 'ConversionWebhook'",message="only type ConversionWebhook is supported yet; ValidatingAdmissionWebhook and MutatingAdmissionWebhook are not supported yet"
// +kubebuilder:validation:XValidation:rule="self.type != 'ConversionWebhook' || (has(self.conversionCRDs) && size(self.conversionCRDs) > 0)",message="a ConversionWebhook needs at least one conversionCRDs entry"
// +kubebuilder:validation:XValidation:rule="!has(self.targetPort) || type(self.targetPort) == string || (int(self.targetPort) >= 1 && int(self.targetPort) <= 65535)",message="targetPort must be a port number from 1 to 65535 or a port name"
type WebhookDefinition struct {
	// GenerateName names the webhook; unique within the install.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	GenerateName string `json:"generateName"`

	// Type of the webhook; only ConversionWebhook is supported yet.
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

	// AdmissionReviewVersions, as in a CSV; for a ConversionWebhook they are
	// the CRD's conversionReviewVersions, so only v1 and v1beta1 are allowed.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +listType=set
	// +kubebuilder:validation:XValidation:rule="self.all(v, v == 'v1' || v == 'v1beta1')",message="admissionReviewVersions may only name v1 and v1beta1 (the ConversionReview versions the API server speaks)"
	AdmissionReviewVersions []string `json:"admissionReviewVersions"`

	// WebhookPath is the HTTP path the API server posts to; "/" when unset.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/`
	// +optional
	WebhookPath *string `json:"webhookPath,omitempty"`

	// ConversionCRDs are the CRDs (<plural>.<group>) this webhook converts.
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)+$'))",message="each conversionCRDs entry must be a CRD name, <plural>.<group> (for example crontabs.stable.example.com)"
	// +optional
	ConversionCRDs []string `json:"conversionCRDs,omitempty"`

	// The fields below are for admission webhooks, accepted so a CSV pastes
	// in unchanged; they are not used until admission webhooks are supported.

	// +optional
	Rules []admissionregistrationv1.RuleWithOperations `json:"rules,omitempty"`
	// +optional
	FailurePolicy *admissionregistrationv1.FailurePolicyType `json:"failurePolicy,omitempty"`
	// +optional
	MatchPolicy *admissionregistrationv1.MatchPolicyType `json:"matchPolicy,omitempty"`
	// +optional
	ObjectSelector *metav1.LabelSelector `json:"objectSelector,omitempty"`
	// +optional
	SideEffects *admissionregistrationv1.SideEffectClass `json:"sideEffects,omitempty"`
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
	// +optional
	ReinvocationPolicy *admissionregistrationv1.ReinvocationPolicyType `json:"reinvocationPolicy,omitempty"`
}

// ToWebhookDescription returns the operator-framework form of d.
func (d WebhookDefinition) ToWebhookDescription() operatorsv1alpha1.WebhookDescription {
	return operatorsv1alpha1.WebhookDescription{
		GenerateName: d.GenerateName, Type: d.Type, DeploymentName: d.DeploymentName,
		ContainerPort: d.ContainerPort, TargetPort: d.TargetPort, Rules: d.Rules,
		FailurePolicy: d.FailurePolicy, MatchPolicy: d.MatchPolicy, ObjectSelector: d.ObjectSelector,
		SideEffects: d.SideEffects, TimeoutSeconds: d.TimeoutSeconds,
		AdmissionReviewVersions: d.AdmissionReviewVersions, ReinvocationPolicy: d.ReinvocationPolicy,
		WebhookPath: d.WebhookPath, ConversionCRDs: d.ConversionCRDs,
	}
}

// WebhookDefinitionFrom converts an operator-framework WebhookDescription.
func WebhookDefinitionFrom(w operatorsv1alpha1.WebhookDescription) WebhookDefinition {
	return WebhookDefinition{
		GenerateName: w.GenerateName, Type: w.Type, DeploymentName: w.DeploymentName,
		ContainerPort: w.ContainerPort, TargetPort: w.TargetPort, Rules: w.Rules,
		FailurePolicy: w.FailurePolicy, MatchPolicy: w.MatchPolicy, ObjectSelector: w.ObjectSelector,
		SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds,
		AdmissionReviewVersions: w.AdmissionReviewVersions, ReinvocationPolicy: w.ReinvocationPolicy,
		WebhookPath: w.WebhookPath, ConversionCRDs: w.ConversionCRDs,
	}
}
