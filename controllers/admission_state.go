package controllers

import (
	"bytes"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

// admissionKind is a webhookdefinition type Hookwright registers in an
// admission configuration.
type admissionKind = operatorsv1alpha1.WebhookAdmissionType

// admissionKinds are the two webhook types Hookwright registers in
// admission configurations, in the order it handles them.
var admissionKinds = []operatorsv1alpha1.WebhookAdmissionType{
	operatorsv1alpha1.ValidatingAdmissionWebhook, operatorsv1alpha1.MutatingAdmissionWebhook,
}

// admissionState is one admission webhook (a ValidatingAdmissionWebhook or
// MutatingAdmissionWebhook webhookdefinition) as seen this pass. Steps fill
// it in order: readAdmission (the live configuration), configureAdmission
// (registration), the verification step (state, message, verifyReason,
// trusted); the status is computed from it.
type admissionState struct {
	name       string // the webhook's name in its configuration (generateName)
	kind       operatorsv1alpha1.WebhookAdmissionType
	definition v1alpha1.WebhookDefinition
	webhook    desired.Webhook // the Deployment and Service that serve it
	configName string          // the configuration that registers it
	// config is the install's live configuration of this webhook's kind
	// (shared by the webhooks of that kind), read before the certificates
	// step; nil when it does not exist.
	config *admissionConfig

	// registered: the live configuration has this webhook calling its
	// Service with the current caBundle (after configureAdmission: written
	// this pass, or found so).
	registered bool
	// written: the configuration was written this pass; verification waits
	// for the API server to load it (as for a CRD's conversion).
	written bool
	// excluded are the namespaces its namespaceSelector excludes.
	excluded []string

	state   v1alpha1.AdmissionWebhookState
	message string
	// verifyReason is why verification failed (state Failed) or could not
	// run (state Unverified), a Reason constant.
	verifyReason string
	// verifyTook is how long this pass's verification request through the
	// API server took (unanswered.go).
	verifyTook time.Duration
	// trusted: this pass, the API server reached the webhook through its
	// configuration and trusted its serving certificate with the current
	// caBundle. What a certificate rotation waits for, as crdState.trusted.
	trusted bool
	// unverifiable: Hookwright cannot verify the webhook: RBAC forbids its
	// dry run, or no dry run can reach it (its sideEffects, or no resource
	// its rules match).
	unverifiable bool
	// firstVerified: this pass's verification succeeded and the status
	// did not say Verified, so it is confirmed once more (verify_confirm.go).
	firstVerified bool
	// driftManager: another field manager changed this webhook's
	// clientConfig that Hookwright had configured, and it was restored.
	driftManager string
}

// admissionConfig is the install's configuration of one kind, live.
type admissionConfig struct {
	kind operatorsv1alpha1.WebhookAdmissionType
	name string
	// live is the stored configuration: a
	// *admissionregistrationv1.ValidatingWebhookConfiguration or
	// *admissionregistrationv1.MutatingWebhookConfiguration; nil when absent.
	live client.Object
	// ours: live carries this install's owner annotation.
	ours bool
}

// ownedBy: obj is Hookwright's (label) and install's (owner annotation).
func ownedBy(obj client.Object, install *v1alpha1.WebhookInstall) bool {
	return obj.GetLabels()[desired.LabelManagedBy] == desired.ManagedByValue &&
		obj.GetAnnotations()[v1alpha1.AnnotationOwner] == installRef(install)
}

// clientConfig is the live clientConfig of the webhook named name, or nil.
func (c *admissionConfig) clientConfig(name string) *admissionregistrationv1.WebhookClientConfig {
	switch cfg := c.live.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range cfg.Webhooks {
			if cfg.Webhooks[i].Name == name {
				return &cfg.Webhooks[i].ClientConfig
			}
		}
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range cfg.Webhooks {
			if cfg.Webhooks[i].Name == name {
				return &cfg.Webhooks[i].ClientConfig
			}
		}
	}
	return nil
}

// appliedAt is when Hookwright last applied the live configuration (from
// its managedFields, which keep whole seconds: taken to be the end of
// that second), or zero.
func (c *admissionConfig) appliedAt() time.Time {
	if c == nil || c.live == nil {
		return time.Time{}
	}
	var at time.Time
	for _, mf := range c.live.GetManagedFields() {
		if mf.Manager == desired.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Time != nil {
			at = mf.Time.Time.Truncate(time.Second).Add(time.Second)
		}
	}
	return at
}

// liveCABundle is the caBundle with which the API server calls this
// webhook now: that of its entry in the live configuration when the entry
// calls this webhook's Service, else nil. The rotation's knownTrust and
// trustedFor read it, as they read the CRDs' caBundles.
func (a *admissionState) liveCABundle(namespace string) []byte {
	if a.config == nil || !a.config.ours {
		return nil
	}
	cc := a.config.clientConfig(a.name)
	if cc == nil || cc.Service == nil || cc.Service.Namespace != namespace || cc.Service.Name != a.webhook.Service {
		return nil
	}
	return cc.CABundle
}

// appliedAt is when Hookwright last applied this webhook's configuration,
// or zero (see admissionConfig.appliedAt).
func (a *admissionState) appliedAt() time.Time {
	if a.config == nil || !a.config.ours {
		return time.Time{}
	}
	return a.config.appliedAt()
}

// clientConfigWith is how the API server calls this webhook with caBundle
// (for a trust probe through the webhook's own path and port).
func (a *admissionState) clientConfigWith(namespace string, caBundle []byte) admissionregistrationv1.WebhookClientConfig {
	return desired.AdmissionClientConfig(namespace, a.webhook.Service, a.definition, caBundle)
}

// callsWith: the live entry calls this webhook's Service, path and port
// with exactly caBundle.
func (a *admissionState) callsWith(namespace string, caBundle []byte) bool {
	if a.config == nil || !a.config.ours {
		return false
	}
	have := a.config.clientConfig(a.name)
	if have == nil {
		return false
	}
	want := a.clientConfigWith(namespace, caBundle)
	return clientConfigEqual(*have, want)
}

func clientConfigEqual(have, want admissionregistrationv1.WebhookClientConfig) bool {
	if have.URL != nil || have.Service == nil || want.Service == nil {
		return false
	}
	h, w := have.Service, want.Service
	return h.Namespace == w.Namespace && h.Name == w.Name && ptr.Deref(h.Path, "") == ptr.Deref(w.Path, "") &&
		ptr.Deref(h.Port, 443) == ptr.Deref(w.Port, 443) && bytes.Equal(have.CABundle, want.CABundle)
}

// admissionStates lists the install's admission webhooks served by
// webhooks, in spec order, Pending, without their live configurations.
func admissionStates(install *v1alpha1.WebhookInstall, webhooks []desired.Webhook) []*admissionState {
	name := desired.AdmissionConfigurationName(install)
	var out []*admissionState
	for _, kind := range admissionKinds {
		for _, def := range desired.AdmissionDefinitions(install, webhooks, kind) {
			a := &admissionState{name: def.GenerateName, kind: kind, definition: def, configName: name, state: v1alpha1.AdmissionPending}
			for _, w := range webhooks {
				if w.Deployment == def.DeploymentName {
					a.webhook = w
				}
			}
			out = append(out, a)
		}
	}
	return out
}

// admissionOfService lists the admission webhooks served by service.
func (s *installState) admissionOfService(service string) []*admissionState {
	var out []*admissionState
	for _, a := range s.admission {
		if a.webhook.Service == service {
			out = append(out, a)
		}
	}
	return out
}
