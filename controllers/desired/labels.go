package desired

import v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"

// Labels and annotations Hookwright puts on what it manages.
const (
	// LabelManagedBy marks every object Hookwright creates; the manager's
	// caches select on it, so foreign Secrets and Deployments are never cached.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is LabelManagedBy's value.
	ManagedByValue = "hookwright"
	// LabelInstall names the WebhookInstall an object belongs to.
	LabelInstall = "operators.hookwright.dev/install"
	// LabelService names the webhook Service a Secret belongs to.
	LabelService = "operators.hookwright.dev/service"
	// LabelDeployment on a webhook Deployment's pod template names the
	// Deployment, and its Service selects on it too: two Deployments
	// whose matchLabels overlap (an upgrade's old and new version, say)
	// would otherwise each get the other's pods behind their Service,
	// which present another Service's certificate.
	LabelDeployment = "operators.hookwright.dev/deployment"

	// AnnotationSpecHash records the hash of what Hookwright applied, so an
	// unchanged object is not written again.
	AnnotationSpecHash = "operators.hookwright.dev/spec-hash"
	// AnnotationServingCert on a pod template is the serving certificate's
	// fingerprint: a new certificate rolls the pods, which mount the new
	// Secret at start instead of waiting for kubelet to refresh the files.
	AnnotationServingCert = "operators.hookwright.dev/serving-cert-fingerprint"

	// FieldManager names every Hookwright write.
	FieldManager = "hookwright"
)

// InstallLabels are the labels of every object made for install.
func InstallLabels(install *v1alpha1.WebhookInstall) map[string]string {
	return map[string]string{LabelManagedBy: ManagedByValue, LabelInstall: install.Name}
}
