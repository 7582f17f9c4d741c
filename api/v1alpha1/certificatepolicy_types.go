package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// CertificatePolicy sets how Hookwright issues the CA and serving
// certificates of each webhook Service.
//
// +kubebuilder:validation:XValidation:rule="!has(self.servingLifetime) || !has(self.caLifetime) || duration(self.servingLifetime) <= duration(self.caLifetime)",message="servingLifetime must not exceed caLifetime: a serving certificate cannot outlive its CA"
// +kubebuilder:validation:XValidation:rule="!has(self.renewBefore) || !has(self.servingLifetime) || duration(self.servingLifetime) - duration(self.renewBefore) >= duration('5s')",message="renewBefore must be shorter than servingLifetime, by at least 5s, or a renewed certificate would be due for renewal again at once"
// +kubebuilder:validation:XValidation:rule="!has(self.renewBefore) || !has(self.caLifetime) || duration(self.caLifetime) - duration(self.renewBefore) >= duration('10m')",message="renewBefore must be shorter than caLifetime by at least 10m, or a new CA would be due for renewal before its rotation finished"
type CertificatePolicy struct {
	// KeyAlgorithm of every issued key. ECDSA P-256 is the default: fast
	// handshakes, small keys, supported by every Kubernetes API server.
	// +kubebuilder:validation:Enum=ECDSA-P256;ECDSA-P384;RSA-2048;RSA-3072
	// +kubebuilder:default=ECDSA-P256
	// +optional
	KeyAlgorithm string `json:"keyAlgorithm,omitempty"`

	// CALifetime is how long each CA is valid. Default 2 years (as OLM):
	// Hookwright keeps the CA key, so serving certificates are reissued
	// without touching the trust bundle, and the CA (whose rotation needs the
	// multi-step bundle hand-over) rotates rarely. At least 1h.
	// +kubebuilder:default="17520h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1h')",message="caLifetime must be at least 1h: a CA rotation hands trust over in several verified steps"
	// +optional
	CALifetime *metav1.Duration `json:"caLifetime,omitempty"`

	// ServingLifetime is how long each serving certificate is valid.
	// Default 90 days: short enough to limit a leaked key's use, long
	// enough that renewal (a Secret update and a hot reload) is routine.
	// At least 10s.
	// +kubebuilder:default="2160h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="servingLifetime must be at least 10s"
	// +optional
	ServingLifetime *metav1.Duration `json:"servingLifetime,omitempty"`

	// RenewBefore is how long before expiry a certificate is renewed.
	// Unset: at two thirds of its lifetime (a third is left to notice and
	// fix a failed renewal; OLM's fixed 24 h leaves almost none). At least
	// 10s (a CA rotation or a rollout must fit before expiry), and at least
	// 5s shorter than servingLifetime and 10m shorter than caLifetime.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="renewBefore must be at least 10s, to leave time for a CA rotation or a rollout before expiry; leave it unset to renew at two thirds of the lifetime"
	// +optional
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`

	// TrustOverlap is how long a replaced CA stays in the CRDs' caBundle
	// after the serving certificates moved to the new CA, so that every API
	// server (an HA control plane has several) and every old pod still
	// being drained keeps a trusted path. Default 10 minutes; unlike
	// cert-manager, the old CA does not stay trusted until it expires.
	// Not negative.
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="trustOverlap must not be negative; 0s removes the old CA as soon as the new one serves and converts"
	// +optional
	TrustOverlap *metav1.Duration `json:"trustOverlap,omitempty"`
}
