package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// InstallPhase follows a CSV's phases, less InstallReady: Hookwright
// claims CRDs and installs in one pass, so that state is never observable.
// +kubebuilder:validation:Enum=Pending;Installing;Succeeded;Failed;Replacing;Replaced
type InstallPhase string

const (
	// PhasePending: waiting for something outside Hookwright (a CRD to exist).
	PhasePending InstallPhase = "Pending"
	// PhaseInstalling: certificates, Deployments or conversion in progress.
	PhaseInstalling InstallPhase = "Installing"
	// PhaseSucceeded: every conversion CRD is configured and verified.
	PhaseSucceeded InstallPhase = "Succeeded"
	// PhaseFailed: needs an admin or author; status.reason says why.
	PhaseFailed InstallPhase = "Failed"
	// PhaseReplacing: a newer install names this one in spec.replaces; this
	// one keeps serving, and writes nothing, until the newer one has taken
	// over its CRDs and verified them.
	PhaseReplacing InstallPhase = "Replacing"
	// PhaseReplaced: the newer install took over; this install's
	// Deployments, Services and Secrets are removed. Delete it when
	// convenient: its claims are gone, so deleting it touches no CRD.
	PhaseReplaced InstallPhase = "Replaced"
)

// WebhookInstallStatus is what Hookwright observed and did.
type WebhookInstallStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase summarizes the install, as a CSV's phase.
	// +optional
	Phase InstallPhase `json:"phase,omitempty"`
	// Reason is a CamelCase reason for the phase (one of the Reason* constants).
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says what is happening or what to do.
	// +optional
	Message string `json:"message,omitempty"`
	// Conditions: Ready, CertificatesReady, WebhooksAvailable,
	// ConversionConfigured, ConversionVerified, ConversionContested,
	// AdmissionConfigured, AdmissionVerified, AdmissionContested.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// CertsLastUpdated is when a certificate was last issued (CSV name).
	// +optional
	CertsLastUpdated *metav1.Time `json:"certsLastUpdated,omitempty"`
	// CertsRotateAt is the earliest renewal time of any certificate (CSV name).
	// +optional
	CertsRotateAt *metav1.Time `json:"certsRotateAt,omitempty"`
	// Services lists each webhook Service and its certificates.
	// +listType=map
	// +listMapKey=name
	// +optional
	Services []ServiceStatus `json:"services,omitempty"`
	// Rotations is the audit trail of certificate issuance and rotation,
	// newest last, bounded to the last 20.
	// +kubebuilder:validation:MaxItems=20
	// +optional
	Rotations []RotationRecord `json:"rotations,omitempty"`
	// HandledRotationRequest is the last manual rotation request (the
	// value of the rotate annotation) that was carried out.
	// +optional
	HandledRotationRequest string `json:"handledRotationRequest,omitempty"`
	// ConversionCRDs lists each conversion CRD and its state.
	// +listType=map
	// +listMapKey=name
	// +optional
	ConversionCRDs []ConversionCRDStatus `json:"conversionCRDs,omitempty"`
	// StorageMigrations is, per conversion CRD with older stored versions
	// (or that had them), its last storage migration.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	StorageMigrations []StorageMigrationStatus `json:"storageMigrations,omitempty"`
	// AdmissionWebhooks lists each admission webhook (a
	// ValidatingAdmissionWebhook or MutatingAdmissionWebhook
	// webhookdefinition) and its state.
	// +listType=map
	// +listMapKey=name
	// +optional
	AdmissionWebhooks []AdmissionWebhookStatus `json:"admissionWebhooks,omitempty"`
}

// ServiceStatus describes one webhook Service's certificates. Only public
// facts: fingerprints and dates, never key material.
type ServiceStatus struct {
	// Name of the Service.
	Name string `json:"name"`
	// SecretName of the serving Secret the webhook pods mount.
	SecretName string `json:"secretName"`
	// CAFingerprint is the SHA-256 fingerprint of the current CA.
	// +optional
	CAFingerprint string `json:"caFingerprint,omitempty"`
	// CANotAfter is when the current CA expires.
	// +optional
	CANotAfter *metav1.Time `json:"caNotAfter,omitempty"`
	// ServingFingerprint is the SHA-256 fingerprint of the serving certificate.
	// +optional
	ServingFingerprint string `json:"servingFingerprint,omitempty"`
	// ServingNotAfter is when the serving certificate expires.
	// +optional
	ServingNotAfter *metav1.Time `json:"servingNotAfter,omitempty"`
}

// ConversionState is where a CRD's conversion stands.
// +kubebuilder:validation:Enum=Pending;Configured;Verified;Conflict;Failed
type ConversionState string

const (
	ConversionPending    ConversionState = "Pending"
	ConversionConfigured ConversionState = "Configured"
	ConversionVerified   ConversionState = "Verified"
	ConversionConflict   ConversionState = "Conflict"
	ConversionFailed     ConversionState = "Failed"
)

// ConversionCRDStatus is the state of one conversion CRD.
type ConversionCRDStatus struct {
	// Name of the CRD.
	Name string `json:"name"`
	// State of its conversion.
	State ConversionState `json:"state"`
	// Message explains the state.
	// +optional
	Message string `json:"message,omitempty"`
	// VerifiedSince is when the API server first converted through the
	// webhook as it is configured now: the verification that made the
	// state Verified, or the first after a write that changed where
	// conversions go. Set only while the state is Verified.
	// +optional
	VerifiedSince *metav1.Time `json:"verifiedSince,omitempty"`
	// DriftRestores counts how often Hookwright restored this CRD's
	// conversion after another field manager changed it, within the
	// current fight window (10 minutes from the first restore).
	// +optional
	DriftRestores int32 `json:"driftRestores,omitempty"`
	// LastDriftManager is the field manager that last changed the conversion.
	// +optional
	LastDriftManager string `json:"lastDriftManager,omitempty"`
	// DriftWindowStart is when the current fight window began.
	// +optional
	DriftWindowStart *metav1.Time `json:"driftWindowStart,omitempty"`
}

// AdmissionWebhookState is where an admission webhook stands.
// +kubebuilder:validation:Enum=Pending;Registered;Verified;Unverified;Failed
type AdmissionWebhookState string

const (
	// AdmissionPending: not registered yet (its Deployment is not
	// available yet, or an earlier step stopped the install).
	AdmissionPending AdmissionWebhookState = "Pending"
	// AdmissionRegistered: its configuration calls its Service with the
	// current caBundle; not verified (yet) through the API server.
	AdmissionRegistered AdmissionWebhookState = "Registered"
	// AdmissionVerified: the API server called it through its
	// configuration and trusted its serving certificate.
	AdmissionVerified AdmissionWebhookState = "Verified"
	// AdmissionUnverified: registered, but no request could exercise it
	// (the message says why).
	AdmissionUnverified AdmissionWebhookState = "Unverified"
	// AdmissionFailed: it could not be registered, or the API server could
	// not call it (verifyReason says why).
	AdmissionFailed AdmissionWebhookState = "Failed"
)

// AdmissionWebhookStatus is the state of one admission webhook.
type AdmissionWebhookStatus struct {
	// Name of the webhook (its generateName), as in its configuration.
	Name string `json:"name"`
	// Type: ValidatingAdmissionWebhook or MutatingAdmissionWebhook.
	// +kubebuilder:validation:Enum=ValidatingAdmissionWebhook;MutatingAdmissionWebhook
	Type string `json:"type"`
	// Configuration is the name of the ValidatingWebhookConfiguration or
	// MutatingWebhookConfiguration that registers it.
	Configuration string `json:"configuration"`
	// State of the webhook.
	State AdmissionWebhookState `json:"state"`
	// Message explains the state.
	// +optional
	Message string `json:"message,omitempty"`
	// VerifyReason is why verification failed or could not run (a Reason
	// constant), when it did.
	// +optional
	VerifyReason string `json:"verifyReason,omitempty"`
	// VerifiedSince is when the API server first called the webhook
	// through its current registration: the verification that made the
	// state Verified. Set only while the state is Verified.
	// +optional
	VerifiedSince *metav1.Time `json:"verifiedSince,omitempty"`
	// ExcludedNamespaces are the namespaces its namespaceSelector excludes
	// so that it never locks out what runs it or Hookwright: kube-system and
	// Hookwright's namespace always, and the install's namespace when its
	// rules match a kind the webhook's pods depend on.
	// +optional
	ExcludedNamespaces []string `json:"excludedNamespaces,omitempty"`
	// DriftRestores counts how often Hookwright restored this webhook's
	// clientConfig (caBundle, service) after another field manager changed
	// it, within the current fight window (10 minutes from the first restore).
	// +optional
	DriftRestores int32 `json:"driftRestores,omitempty"`
	// LastDriftManager is the field manager that last changed it.
	// +optional
	LastDriftManager string `json:"lastDriftManager,omitempty"`
	// DriftWindowStart is when the current fight window began.
	// +optional
	DriftWindowStart *metav1.Time `json:"driftWindowStart,omitempty"`
}

// RotationKind says which certificate rotated.
// +kubebuilder:validation:Enum=CA;Serving
type RotationKind string

const (
	RotationCA      RotationKind = "CA"
	RotationServing RotationKind = "Serving"
)

// RotationOutcome is where a rotation stands.
// +kubebuilder:validation:Enum=InProgress;Succeeded;Failed
type RotationOutcome string

const (
	RotationInProgress RotationOutcome = "InProgress"
	RotationSucceeded  RotationOutcome = "Succeeded"
	RotationFailed     RotationOutcome = "Failed"
)

// RotationRecord is one entry of the rotation audit trail. Fingerprints
// are SHA-256 of the certificates; no key material is ever recorded.
type RotationRecord struct {
	// Service whose certificate rotated.
	Service string `json:"service"`
	// Kind of certificate.
	Kind RotationKind `json:"kind"`
	// Reason: Initial, Expiring, Manual, Missing, Invalid, PolicyChanged,
	// NamesChanged, CAChanged, CARotation (the serving certificate
	// reissued from the new CA when a CA rotation promotes it), or
	// CAExpired (the CA expired while Hookwright was down: reissued from
	// scratch).
	Reason string `json:"reason"`
	// Message gives the details (for Manual: the admin's request).
	// +optional
	Message string `json:"message,omitempty"`
	// Started is when the rotation began.
	Started metav1.Time `json:"started"`
	// Completed is when it finished (the new certificate served and, for a
	// CA, the old one pruned).
	// +optional
	Completed *metav1.Time `json:"completed,omitempty"`
	// OldFingerprint of the certificate replaced; empty when Initial.
	// +optional
	OldFingerprint string `json:"oldFingerprint,omitempty"`
	// NewFingerprint of the certificate issued.
	NewFingerprint string `json:"newFingerprint"`
	// Outcome of the rotation.
	Outcome RotationOutcome `json:"outcome"`
}
