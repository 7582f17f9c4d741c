package v1alpha1

import (
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WebhookInstall declares an operator's webhooks, CSV-style: the webhook
// Deployments, the webhookdefinitions (conversion webhooks with their
// conversionCRDs, validating and mutating admission webhooks with their
// rules), and how their certificates are issued. Hookwright runs the
// Deployments, issues and rotates the certificates, points each conversion
// CRD at its webhook and registers the admission webhooks once they serve.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=whi,categories=hookwright
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="CRDs",type=string,JSONPath=`.status.conversionCRDs[*].name`
// +kubebuilder:printcolumn:name="CA-Expires",type=string,JSONPath=`.status.services[0].caNotAfter`
// +kubebuilder:printcolumn:name="Rotate-At",type=string,JSONPath=`.status.certsRotateAt`
// +kubebuilder:printcolumn:name="Serving-Expires",type=string,JSONPath=`.status.services[0].servingNotAfter`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`,priority=1
// +kubebuilder:printcolumn:name="Admission",type=string,JSONPath=`.status.admissionWebhooks[*].name`,priority=1
// +kubebuilder:printcolumn:name="Migration",type=string,JSONPath=`.status.storageMigrations[*].state`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec.replaces) || self.spec.replaces != self.metadata.name",message="spec.replaces names the install this one upgrades; it cannot be this install itself"
type WebhookInstall struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WebhookInstallSpec   `json:"spec"`
	Status WebhookInstallStatus `json:"status,omitempty"`
}

// WebhookInstallSpec uses the field names of a ClusterServiceVersion, so the
// relevant parts of a CSV can be pasted in.
//
// +kubebuilder:validation:XValidation:rule="self.installModes.exists(m, m.type == 'AllNamespaces' && m.supported) && self.installModes.all(m, m.type == 'AllNamespaces' || !m.supported)",message="conversion and admission webhooks serve every namespace: installModes must support AllNamespaces and no other mode"
// +kubebuilder:validation:XValidation:rule="self.webhookdefinitions.all(w, self.install.spec.deployments.exists(d, d.name == w.deploymentName))",message="every webhookdefinitions[].deploymentName must name a deployment in install.spec.deployments"
// +kubebuilder:validation:XValidation:rule="self.webhookdefinitions.all(w, !has(w.conversionCRDs) || w.conversionCRDs.all(c, has(self.customresourcedefinitions.owned) && self.customresourcedefinitions.owned.exists(o, o.name == c)))",message="every conversionCRDs entry must be listed in customresourcedefinitions.owned: an install converts only CRDs it owns"
// +kubebuilder:validation:XValidation:rule="self.webhookdefinitions.all(a, self.webhookdefinitions.all(b, a.generateName == b.generateName || !has(a.conversionCRDs) || !has(b.conversionCRDs) || !a.conversionCRDs.exists(c, c in b.conversionCRDs)))",message="a CRD has one conversion webhook: a conversionCRDs entry must not appear in two webhookdefinitions"
// +kubebuilder:validation:XValidation:rule="self.webhookdefinitions.all(a, self.webhookdefinitions.all(b, a.deploymentName == b.deploymentName || a.deploymentName.replace('.', '-') != b.deploymentName.replace('.', '-')))",message="two webhook deployment names differ only by '.' versus '-': they would share one webhook Service name (<deployment>-service with dots as dashes); rename one"
// +kubebuilder:validation:XValidation:rule="!has(self.customresourcedefinitions.owned) || self.customresourcedefinitions.owned.filter(o, self.webhookdefinitions.exists(w, has(w.conversionCRDs) && o.name in w.conversionCRDs)).size() <= 16",message="an install converts at most 16 CRDs (the admission guard checks your permission on each one); split the webhooks over several installs"
// +kubebuilder:validation:XValidation:rule="!has(self.storageMigration) || !has(self.storageMigration.crds) || self.storageMigration.crds.all(m, self.webhookdefinitions.exists(w, has(w.conversionCRDs) && m.name in w.conversionCRDs))",message="every storageMigration.crds entry must name a CRD listed in a webhookdefinition's conversionCRDs"
// +kubebuilder:validation:XValidation:rule="self.webhookdefinitions.all(w, !has(w.conversionCRDs) || w.conversionCRDs.all(c, !c.endsWith('.operators.hookwright.dev')))",message="Hookwright's own CRDs (*.operators.hookwright.dev) are never converted by a WebhookInstall"
type WebhookInstallSpec struct {
	// DisplayName is a human-readable name of the operator.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	DisplayName string `json:"displayName,omitempty"`

	// Version of the operator, in semver form (1.2.3, 1.2.3-rc.1).
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`
	Version string `json:"version"`

	// Replaces names the WebhookInstall, in the same namespace, that this one
	// upgrades. It takes over that install's CRDs once its own webhook serves.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	Replaces string `json:"replaces,omitempty"`

	// InstallModes as in a CSV. Conversion and admission webhooks are
	// cluster-wide, so AllNamespaces must be supported and every other mode
	// unsupported.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	InstallModes []operatorsv1alpha1.InstallMode `json:"installModes"`

	// CustomResourceDefinitions lists the CRDs the operator owns and needs.
	CustomResourceDefinitions CustomResourceDefinitions `json:"customresourcedefinitions"`

	// Install holds the webhook Deployments, as a CSV's install strategy.
	Install InstallStrategy `json:"install"`

	// WebhookDefinitions are the webhooks, as a CSV's webhookdefinitions.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=generateName
	WebhookDefinitions []WebhookDefinition `json:"webhookdefinitions"`

	// Certificates sets how CAs and serving certificates are issued.
	// +kubebuilder:default={}
	// +optional
	Certificates CertificatePolicy `json:"certificates,omitempty"`
	// StorageMigration sets when the conversion CRDs' stored objects are
	// rewritten in the storage version, so that older versions leave
	// status.storedVersions and can be removed from the CRD. Unset:
	// Automatic for every conversion CRD.
	// +optional
	StorageMigration StorageMigrationSpec `json:"storageMigration,omitzero"`

	// StorageMigration is omitzero, not omitempty: encoding/json never omits
	// a struct under omitempty, so every install a client writes (import-csv
	// among them) would carry an empty storageMigration: {}.
}

// CustomResourceDefinitions is a CSV's customresourcedefinitions block.
type CustomResourceDefinitions struct {
	// Owned CRDs; every conversionCRDs entry must be one of them.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Owned []CRDDescription `json:"owned,omitempty"`
	// Required CRDs, accepted for CSV compatibility; Hookwright does not act on them.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Required []CRDDescription `json:"required,omitempty"`
}

// CRDDescription is a CSV's CRD description. The descriptor lists are kept
// as given, schemaless, so a CSV pastes in unchanged (operator-framework's
// type holds json.RawMessage values that have no structural schema);
// Hookwright reads only the name, version and kind.
type CRDDescription struct {
	// Name of the CRD, <plural>.<group>.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Version of the CRD described.
	// +kubebuilder:validation:MaxLength=63
	Version string `json:"version"`
	// Kind of the CRD described.
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// +optional
	DisplayName string `json:"displayName,omitempty"`
	// +optional
	Description string `json:"description,omitempty"`
	// +optional
	Resources []apiextensionsv1.JSON `json:"resources,omitempty"`
	// +optional
	StatusDescriptors []apiextensionsv1.JSON `json:"statusDescriptors,omitempty"`
	// +optional
	SpecDescriptors []apiextensionsv1.JSON `json:"specDescriptors,omitempty"`
	// +optional
	ActionDescriptor []apiextensionsv1.JSON `json:"actionDescriptors,omitempty"`
}

// InstallStrategy is a CSV's install block. Permissions and
// clusterPermissions are not accepted: Hookwright never grants RBAC on
// anyone's behalf; a missing ServiceAccount is created bare.
type InstallStrategy struct {
	// StrategyName must be "deployment", as in a CSV.
	// +kubebuilder:validation:Enum=deployment
	// +kubebuilder:default=deployment
	StrategyName string `json:"strategy"`
	// Spec holds the Deployments.
	Spec InstallStrategySpec `json:"spec"`
}

// InstallStrategySpec lists the webhook Deployments.
type InstallStrategySpec struct {
	// Deployments to run, as a CSV's install.spec.deployments.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	Deployments []operatorsv1alpha1.StrategyDeploymentSpec `json:"deployments"`
}
