// Package v1alpha1 holds the WebhookInstall API of operators.hookwright.dev.
// +kubebuilder:object:generate=true
// +groupName=operators.hookwright.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "operators.hookwright.dev", Version: "v1alpha1"}

	// SchemeBuilder registers this package's types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
