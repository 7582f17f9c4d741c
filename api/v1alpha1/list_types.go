package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// WebhookInstallList is a list of WebhookInstalls.
//
// +kubebuilder:object:root=true
type WebhookInstallList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WebhookInstall `json:"items"`
}

func init() {
	SchemeBuilder.Register(&WebhookInstall{}, &WebhookInstallList{})
}
