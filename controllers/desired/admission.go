package desired

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// LabelInstallNamespace names the namespace of the WebhookInstall a
// cluster-scoped object (an admission configuration) belongs to; with
// LabelInstall it names the install. Ownership itself is the
// v1alpha1.AnnotationOwner annotation, as on CRDs: a cluster-scoped object
// cannot have a namespaced owner reference.
const LabelInstallNamespace = "operators.hookwright.dev/install-namespace"

// NamespaceNameLabel is the label the API server sets on every namespace
// to its own name; namespaceSelectors exclude namespaces by it.
const NamespaceNameLabel = "kubernetes.io/metadata.name"

// AdmissionConfigurationName is the name of both admission configurations
// of install (one ValidatingWebhookConfiguration, one
// MutatingWebhookConfiguration: two resources, so one name serves both):
// hookwright.<namespace>.<install>. A namespace name has no dot, so two
// installs never derive the same name (with dashes instead, namespace
// "a-b" with install "c" and namespace "a" with install "b-c" would). The
// result is a DNS-1123 subdomain of at most 253 characters; longer names
// keep a hash suffix to stay distinct.
func AdmissionConfigurationName(install *v1alpha1.WebhookInstall) string {
	return dns1123Subdomain("hookwright." + install.Namespace + "." + install.Name)
}

// dns1123Subdomain lowercases name, turns characters a subdomain cannot
// hold into '-', trims each dot-separated label, and shortens it to 253
// characters with a hash suffix.
func dns1123Subdomain(name string) string {
	labels := strings.Split(strings.ToLower(name), ".")
	var kept []string
	for _, l := range labels {
		var b strings.Builder
		for _, r := range l {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
				b.WriteRune(r)
			default:
				b.WriteRune('-')
			}
		}
		if l := strings.Trim(b.String(), "-"); l != "" {
			kept = append(kept, l)
		}
	}
	out := strings.Join(kept, ".")
	const maxLen = 253
	if len(out) > maxLen {
		sum := sha256.Sum256([]byte(name))
		suffix := hex.EncodeToString(sum[:8])
		out = strings.TrimRight(out[:maxLen-1-len(suffix)], "-.") + "-" + suffix
	}
	return out
}

// LockoutPolicy is what keeps admission webhooks from locking out the
// objects that run them, or that run Hookwright.
type LockoutPolicy struct {
	// Always are namespaces no admission webhook of any install sees:
	// kube-system and Hookwright's own namespace (DefaultLockout).
	Always []string
}

// DefaultLockout excludes kube-system and Hookwright's namespace from
// every admission webhook.
func DefaultLockout(hookwrightNamespace string) LockoutPolicy {
	always := []string{"kube-system"}
	if hookwrightNamespace != "" && hookwrightNamespace != "kube-system" {
		always = append(always, hookwrightNamespace)
	}
	return LockoutPolicy{Always: always}
}

// lockoutResources are, by API group, the kinds a webhook's own pods and
// Hookwright's rollout of them depend on: a webhook whose rules match one
// of them, and is down with failurePolicy Fail, could block its own
// Deployment's rollout (pods, replicasets), its Service and endpoints, its
// certificate Secrets, its ServiceAccount, the Events and Leases of the
// controllers involved, and the install's own status.
var lockoutResources = map[string][]string{
	"":                          {"pods", "services", "endpoints", "secrets", "configmaps", "serviceaccounts", "events"},
	"apps":                      {"deployments", "replicasets"},
	"discovery.k8s.io":          {"endpointslices"},
	"coordination.k8s.io":       {"leases"},
	"events.k8s.io":             {"events"},
	v1alpha1.GroupVersion.Group: {"webhookinstalls"},
}

// LockoutMatches lists, sorted, the kinds (resource, or group/resource)
// of lockoutResources that rules can match: any operation, any version,
// subresources included ("pods/status" matches pods), wildcards ("*" in
// apiGroups, "*" or "*/*" or "*/status" in resources) matching every kind.
// A rule scoped to Cluster matches none of them (all are namespaced). It
// is empty when the webhook cannot block what runs it.
func LockoutMatches(rules []admissionregistrationv1.RuleWithOperations) []string {
	var out []string
	for group, resources := range lockoutResources {
		for _, resource := range resources {
			for _, rule := range rules {
				if ruleMatches(rule, group, resource) {
					name := resource
					if group != "" {
						name = group + "/" + resource
					}
					if !slices.Contains(out, name) {
						out = append(out, name)
					}
					break
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func ruleMatches(rule admissionregistrationv1.RuleWithOperations, group, resource string) bool {
	if len(rule.Operations) == 0 {
		return false
	}
	if rule.Scope != nil && *rule.Scope == admissionregistrationv1.ClusterScope {
		return false
	}
	if !slices.Contains(rule.APIGroups, "*") && !slices.Contains(rule.APIGroups, group) {
		return false
	}
	for _, r := range rule.Resources {
		base, _, _ := strings.Cut(r, "/")
		if base == "*" || base == resource {
			return true
		}
	}
	return false
}

// ExcludedNamespaces are the namespaces def's namespaceSelector excludes,
// sorted: the policy's (always), and the install's own namespace when the
// webhook's rules can match what its pods or Hookwright's rollout of them
// depend on (LockoutMatches).
func ExcludedNamespaces(installNamespace string, def v1alpha1.WebhookDefinition, lockout LockoutPolicy) []string {
	out := slices.Clone(lockout.Always)
	if len(LockoutMatches(def.AdmissionRules())) > 0 && !slices.Contains(out, installNamespace) {
		out = append(out, installNamespace)
	}
	slices.Sort(out)
	return out
}

// AdmissionClientConfig is how the API server calls def's webhook through
// service in namespace, trusting caBundle: path webhookPath (default "/"),
// port containerPort (default 443).
func AdmissionClientConfig(namespace, service string, def v1alpha1.WebhookDefinition, caBundle []byte) admissionregistrationv1.WebhookClientConfig {
	port := def.ContainerPort
	if port == 0 {
		port = 443
	}
	webhookPath := "/"
	if def.WebhookPath != nil {
		webhookPath = *def.WebhookPath
	}
	return admissionregistrationv1.WebhookClientConfig{
		Service:  &admissionregistrationv1.ServiceReference{Namespace: namespace, Name: service, Path: ptr.To(webhookPath), Port: ptr.To(port)},
		CABundle: caBundle,
	}
}

// AdmissionDefinitions are install's webhookdefinitions of type kind that
// one of webhooks serves, in spec order: the API server calls mutating
// webhooks in the order of their configuration, which is the author's.
func AdmissionDefinitions(install *v1alpha1.WebhookInstall, webhooks []Webhook, kind operatorsv1alpha1.WebhookAdmissionType) []v1alpha1.WebhookDefinition {
	var out []v1alpha1.WebhookDefinition
	for _, def := range install.Spec.WebhookDefinitions {
		if def.Type != kind {
			continue
		}
		if slices.ContainsFunc(webhooks, func(w Webhook) bool { return w.Deployment == def.DeploymentName }) {
			out = append(out, def)
		}
	}
	return out
}

// ValidatingConfiguration is install's ValidatingWebhookConfiguration: one
// webhook per ValidatingAdmissionWebhook definition that webhooks serve,
// calling its deployment's Service and trusting bundle(service) (the
// caBundle the Service's CRDs carry, so one ordered CA rotation covers
// both). It is nil when there is none. Every field the API server would
// default is set, so the result compares equal to what it stores.
func ValidatingConfiguration(install *v1alpha1.WebhookInstall, webhooks []Webhook, bundle func(service string) []byte, lockout LockoutPolicy) *admissionregistrationv1.ValidatingWebhookConfiguration {
	defs := AdmissionDefinitions(install, webhooks, operatorsv1alpha1.ValidatingAdmissionWebhook)
	if len(defs) == 0 {
		return nil
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: clusterOwnedMeta(install, AdmissionConfigurationName(install)),
	}
	for _, def := range defs {
		c := common(install, def, bundle, lockout)
		cfg.Webhooks = append(cfg.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: c.name, ClientConfig: c.clientConfig, Rules: c.rules, FailurePolicy: c.failurePolicy, MatchPolicy: c.matchPolicy,
			NamespaceSelector: c.namespaceSelector, ObjectSelector: c.objectSelector, SideEffects: def.SideEffects,
			TimeoutSeconds: c.timeoutSeconds, AdmissionReviewVersions: c.reviewVersions,
		})
	}
	return cfg
}

// MutatingConfiguration is ValidatingConfiguration's mutating twin, for
// MutatingAdmissionWebhook definitions; reinvocationPolicy defaults to Never.
func MutatingConfiguration(install *v1alpha1.WebhookInstall, webhooks []Webhook, bundle func(service string) []byte, lockout LockoutPolicy) *admissionregistrationv1.MutatingWebhookConfiguration {
	defs := AdmissionDefinitions(install, webhooks, operatorsv1alpha1.MutatingAdmissionWebhook)
	if len(defs) == 0 {
		return nil
	}
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: clusterOwnedMeta(install, AdmissionConfigurationName(install)),
	}
	for _, def := range defs {
		c := common(install, def, bundle, lockout)
		cfg.Webhooks = append(cfg.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name: c.name, ClientConfig: c.clientConfig, Rules: c.rules, FailurePolicy: c.failurePolicy, MatchPolicy: c.matchPolicy,
			NamespaceSelector: c.namespaceSelector, ObjectSelector: c.objectSelector, SideEffects: def.SideEffects,
			TimeoutSeconds: c.timeoutSeconds, AdmissionReviewVersions: c.reviewVersions,
			ReinvocationPolicy: ptr.To(ptr.Deref(def.ReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy)),
		})
	}
	return cfg
}

// clusterOwnedMeta marks a cluster-scoped object as install's: the labels
// of every owned object (the manager's caches select on them) plus the
// install's namespace, and the owner annotations CRD claims use.
func clusterOwnedMeta(install *v1alpha1.WebhookInstall, name string) metav1.ObjectMeta {
	labels := InstallLabels(install)
	labels[LabelInstallNamespace] = install.Namespace
	return metav1.ObjectMeta{
		Name: name, Labels: labels,
		Annotations: map[string]string{
			v1alpha1.AnnotationOwner:    install.Namespace + "/" + install.Name,
			v1alpha1.AnnotationOwnerUID: string(install.UID),
		},
	}
}

// webhookCommon holds the fields both kinds of admission webhook share.
type webhookCommon struct {
	name              string
	clientConfig      admissionregistrationv1.WebhookClientConfig
	rules             []admissionregistrationv1.RuleWithOperations
	failurePolicy     *admissionregistrationv1.FailurePolicyType
	matchPolicy       *admissionregistrationv1.MatchPolicyType
	namespaceSelector *metav1.LabelSelector
	objectSelector    *metav1.LabelSelector
	timeoutSeconds    *int32
	reviewVersions    []string
}

func common(install *v1alpha1.WebhookInstall, def v1alpha1.WebhookDefinition, bundle func(string) []byte, lockout LockoutPolicy) webhookCommon {
	service := InstallServiceName(install, def.DeploymentName)
	rules := make([]admissionregistrationv1.RuleWithOperations, 0, len(def.Rules))
	for _, r := range def.AdmissionRules() {
		r = *r.DeepCopy()
		if r.Scope == nil {
			r.Scope = ptr.To(admissionregistrationv1.AllScopes)
		}
		rules = append(rules, r)
	}
	objectSelector := &metav1.LabelSelector{}
	if def.ObjectSelector != nil {
		objectSelector = def.ObjectSelector.ToV1().DeepCopy()
	}
	return webhookCommon{
		name:          def.GenerateName,
		clientConfig:  AdmissionClientConfig(install.Namespace, service, def, bundle(service)),
		rules:         rules,
		failurePolicy: ptr.To(ptr.Deref(def.FailurePolicy, admissionregistrationv1.Fail)),
		matchPolicy:   ptr.To(ptr.Deref(def.MatchPolicy, admissionregistrationv1.Equivalent)),
		namespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: NamespaceNameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: ExcludedNamespaces(install.Namespace, def, lockout),
		}}},
		objectSelector: objectSelector,
		timeoutSeconds: ptr.To(ptr.Deref(def.TimeoutSeconds, 10)),
		reviewVersions: slices.Clone(def.AdmissionReviewVersions),
	}
}
