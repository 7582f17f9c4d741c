package desired

import (
	"reflect"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

func TestAdmissionConfigurationName(t *testing.T) {
	named := func(ns, name string) *v1alpha1.WebhookInstall {
		return &v1alpha1.WebhookInstall{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	tests := []struct {
		name    string
		install *v1alpha1.WebhookInstall
		want    string
	}{
		{"plain", named("crontab-system", "crontab"), "hookwright.crontab-system.crontab"},
		{"dotted install name", named("ops", "crontab.v2"), "hookwright.ops.crontab.v2"},
		{"uppercase and invalid characters", named("ops", "Cron_Tab"), "hookwright.ops.cron-tab"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AdmissionConfigurationName(tt.install)
			if got != tt.want {
				t.Errorf("AdmissionConfigurationName(%s/%s) = %q, want %q", tt.install.Namespace, tt.install.Name, got, tt.want)
			}
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Errorf("%q is not a DNS-1123 subdomain: %v", got, errs)
			}
		})
	}

	t.Run("a dash in the namespace or the install name never makes two installs share a name", func(t *testing.T) {
		a, b := AdmissionConfigurationName(named("a-b", "c")), AdmissionConfigurationName(named("a", "b-c"))
		if a == b {
			t.Errorf("a-b/c and a/b-c both derive %q", a)
		}
	})

	t.Run("long names are shortened to a valid subdomain and stay distinct", func(t *testing.T) {
		ns := strings.Repeat("n", 63)
		long := strings.Repeat("install.", 30) // 240 characters
		a, b := AdmissionConfigurationName(named(ns, long+"a")), AdmissionConfigurationName(named(ns, long+"b"))
		for _, got := range []string{a, b} {
			if len(got) > 253 {
				t.Errorf("%q has %d characters, more than 253", got, len(got))
			}
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Errorf("%q is not a DNS-1123 subdomain: %v", got, errs)
			}
		}
		if a == b {
			t.Errorf("two long install names derive the same name %q", a)
		}
	})
}

func rule(groups []string, resources []string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule:       admissionregistrationv1.Rule{APIGroups: groups, APIVersions: []string{"*"}, Resources: resources},
	}
}

func TestLockoutMatches(t *testing.T) {
	create := admissionregistrationv1.Create
	all := admissionregistrationv1.OperationAll
	everything := []string{
		"apps/deployments", "apps/replicasets", "configmaps", "coordination.k8s.io/leases", "discovery.k8s.io/endpointslices",
		"endpoints", "events", "events.k8s.io/events", "operators.hookwright.dev/webhookinstalls", "pods", "secrets", "serviceaccounts", "services",
	}
	tests := []struct {
		name  string
		rules []admissionregistrationv1.RuleWithOperations
		want  []string
	}{
		{"a custom resource only", []admissionregistrationv1.RuleWithOperations{rule([]string{"stable.example.com"}, []string{"crontabs"}, create)}, nil},
		{"pods", []admissionregistrationv1.RuleWithOperations{rule([]string{""}, []string{"pods"}, create)}, []string{"pods"}},
		{"pods and deployments, all operations", []admissionregistrationv1.RuleWithOperations{
			rule([]string{""}, []string{"pods"}, all), rule([]string{"apps"}, []string{"deployments"}, all),
		}, []string{"apps/deployments", "pods"}},
		{"deployments in the wrong group match nothing", []admissionregistrationv1.RuleWithOperations{rule([]string{""}, []string{"deployments"}, create)}, nil},
		{"a subresource counts", []admissionregistrationv1.RuleWithOperations{rule([]string{""}, []string{"pods/status"}, admissionregistrationv1.Update)}, []string{"pods"}},
		{"resource/* counts", []admissionregistrationv1.RuleWithOperations{rule([]string{"apps"}, []string{"deployments/*"}, create)}, []string{"apps/deployments"}},
		{"every group, one resource name", []admissionregistrationv1.RuleWithOperations{rule([]string{"*"}, []string{"events"}, create)}, []string{"events", "events.k8s.io/events"}},
		{"one group, every resource", []admissionregistrationv1.RuleWithOperations{rule([]string{"coordination.k8s.io"}, []string{"*"}, create)}, []string{"coordination.k8s.io/leases"}},
		{"everything", []admissionregistrationv1.RuleWithOperations{rule([]string{"*"}, []string{"*"}, all)}, everything},
		{"*/* is everything", []admissionregistrationv1.RuleWithOperations{rule([]string{"*"}, []string{"*/*"}, create)}, everything},
		{"*/status is every resource's status", []admissionregistrationv1.RuleWithOperations{rule([]string{""}, []string{"*/status"}, create)}, []string{"configmaps", "endpoints", "events", "pods", "secrets", "serviceaccounts", "services"}},
		{"Hookwright's own install", []admissionregistrationv1.RuleWithOperations{rule([]string{"operators.hookwright.dev"}, []string{"webhookinstalls/status"}, admissionregistrationv1.Update)}, []string{"operators.hookwright.dev/webhookinstalls"}},
		{"a Cluster-scoped rule matches no namespaced kind", []admissionregistrationv1.RuleWithOperations{func() admissionregistrationv1.RuleWithOperations {
			r := rule([]string{"*"}, []string{"*"}, all)
			r.Scope = ptr.To(admissionregistrationv1.ClusterScope)
			return r
		}()}, nil},
		{"a Namespaced rule does", []admissionregistrationv1.RuleWithOperations{func() admissionregistrationv1.RuleWithOperations {
			r := rule([]string{""}, []string{"secrets"}, admissionregistrationv1.Delete)
			r.Scope = ptr.To(admissionregistrationv1.NamespacedScope)
			return r
		}()}, []string{"secrets"}},
		{"a rule without operations matches nothing", []admissionregistrationv1.RuleWithOperations{rule([]string{"*"}, []string{"*"})}, nil},
		{"no rules", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := LockoutMatches(tt.rules)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("LockoutMatches = %v, want %v", got, tt.want)
			}
		})
	}
}

// admissionDefinition is an admission webhook definition of kind served
// by deployment, with rules.
func admissionDefinition(kind operatorsv1alpha1.WebhookAdmissionType, generateName, deployment string, rules ...admissionregistrationv1.RuleWithOperations) v1alpha1.WebhookDefinition {
	def := v1alpha1.WebhookDefinition{
		GenerateName: generateName, Type: kind, DeploymentName: deployment,
		AdmissionReviewVersions: []string{"v1"}, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
	}
	for _, r := range rules {
		def.Rules = append(def.Rules, v1alpha1.AdmissionRule{Operations: r.Operations, APIGroups: r.APIGroups, APIVersions: r.APIVersions, Resources: r.Resources, Scope: r.Scope})
	}
	return def
}

func TestExcludedNamespaces(t *testing.T) {
	crontabs := rule([]string{"stable.example.com"}, []string{"crontabs"}, admissionregistrationv1.Create)
	pods := rule([]string{""}, []string{"pods"}, admissionregistrationv1.Create)
	tests := []struct {
		name      string
		namespace string
		rules     []admissionregistrationv1.RuleWithOperations
		want      []string
	}{
		{"custom resources: kube-system and Hookwright's namespace", "crontab-system", []admissionregistrationv1.RuleWithOperations{crontabs}, []string{"hookwright-system", "kube-system"}},
		{"pods: the install's namespace too", "crontab-system", []admissionregistrationv1.RuleWithOperations{crontabs, pods}, []string{"crontab-system", "hookwright-system", "kube-system"}},
		{"an install in Hookwright's namespace is listed once", "hookwright-system", []admissionregistrationv1.RuleWithOperations{pods}, []string{"hookwright-system", "kube-system"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := admissionDefinition(operatorsv1alpha1.ValidatingAdmissionWebhook, "v.example.com", "manager", tt.rules...)
			got := ExcludedNamespaces(tt.namespace, def, DefaultLockout("hookwright-system"))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ExcludedNamespaces = %v, want %v", got, tt.want)
			}
		})
	}
	if got := DefaultLockout("kube-system").Always; !reflect.DeepEqual(got, []string{"kube-system"}) {
		t.Errorf("DefaultLockout(kube-system) = %v, want [kube-system]", got)
	}
}

// admissionInstall declares deployments manager and other, a conversion
// webhook, and the given admission webhooks.
func admissionInstall(defs ...v1alpha1.WebhookDefinition) *v1alpha1.WebhookInstall {
	return newInstall([]operatorsv1alpha1.StrategyDeploymentSpec{newDeploymentSpec("manager"), newDeploymentSpec("other")},
		append([]v1alpha1.WebhookDefinition{newDefinition("convert", "manager")}, defs...)...)
}

func bundleOf(service string) []byte { return []byte("bundle of " + service) }

func TestValidatingConfiguration(t *testing.T) {
	crontabs := rule([]string{"stable.example.com"}, []string{"crontabs"}, admissionregistrationv1.Create, admissionregistrationv1.Update)
	pods := rule([]string{""}, []string{"pods"}, admissionregistrationv1.OperationAll)
	first := admissionDefinition(operatorsv1alpha1.ValidatingAdmissionWebhook, "vcrontab.example.com", "manager", crontabs)
	first.WebhookPath = ptr.To("/validate-crontab")
	first.ContainerPort = 9443
	second := admissionDefinition(operatorsv1alpha1.ValidatingAdmissionWebhook, "vpod.example.com", "other", pods)
	second.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	second.MatchPolicy = ptr.To(admissionregistrationv1.Exact)
	second.TimeoutSeconds = ptr.To[int32](5)
	second.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun)
	second.ObjectSelector = &v1alpha1.ObjectSelector{MatchLabels: map[string]string{"team": "a"}}
	second.AdmissionReviewVersions = []string{"v1", "v1beta1"}
	mutating := admissionDefinition(operatorsv1alpha1.MutatingAdmissionWebhook, "mcrontab.example.com", "manager", crontabs)
	install := admissionInstall(second, mutating, first) // spec order: second, then first
	webhooks := Webhooks(install)

	cfg := ValidatingConfiguration(install, webhooks, bundleOf, DefaultLockout("hookwright-system"))
	if cfg == nil {
		t.Fatal("ValidatingConfiguration = nil, want a configuration")
	}
	if cfg.Name != "hookwright.ns.whi" || cfg.Namespace != "" {
		t.Errorf("name = %q in namespace %q, want hookwright.ns.whi, cluster-scoped", cfg.Name, cfg.Namespace)
	}
	if cfg.APIVersion != "admissionregistration.k8s.io/v1" || cfg.Kind != "ValidatingWebhookConfiguration" {
		t.Errorf("type = %s %s", cfg.APIVersion, cfg.Kind)
	}
	if len(cfg.OwnerReferences) != 0 {
		t.Errorf("owner references %v: a cluster-scoped object cannot have a namespaced owner", cfg.OwnerReferences)
	}
	wantLabels := map[string]string{"app.kubernetes.io/managed-by": "hookwright", "operators.hookwright.dev/install": "whi", "operators.hookwright.dev/install-namespace": "ns"}
	if !reflect.DeepEqual(cfg.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", cfg.Labels, wantLabels)
	}
	wantAnnotations := map[string]string{"operators.hookwright.dev/owner": "ns/whi", "operators.hookwright.dev/owner-uid": string(testUID)}
	if !reflect.DeepEqual(cfg.Annotations, wantAnnotations) {
		t.Errorf("annotations = %v, want %v", cfg.Annotations, wantAnnotations)
	}

	scope := ptr.To(admissionregistrationv1.AllScopes)
	withScope := func(r admissionregistrationv1.RuleWithOperations) admissionregistrationv1.RuleWithOperations {
		r.Scope = scope
		return r
	}
	notIn := func(namespaces ...string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: namespaces}}}
	}
	want := []admissionregistrationv1.ValidatingWebhook{{
		Name: "vpod.example.com",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service:  &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "other-service", Path: ptr.To("/"), Port: ptr.To[int32](443)},
			CABundle: []byte("bundle of other-service"),
		},
		Rules:                   []admissionregistrationv1.RuleWithOperations{withScope(pods)},
		FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
		MatchPolicy:             ptr.To(admissionregistrationv1.Exact),
		NamespaceSelector:       notIn("hookwright-system", "kube-system", "ns"),
		ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun),
		TimeoutSeconds:          ptr.To[int32](5),
		AdmissionReviewVersions: []string{"v1", "v1beta1"},
	}, {
		Name: "vcrontab.example.com",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service:  &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "manager-service", Path: ptr.To("/validate-crontab"), Port: ptr.To[int32](9443)},
			CABundle: []byte("bundle of manager-service"),
		},
		Rules:                   []admissionregistrationv1.RuleWithOperations{withScope(crontabs)},
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		NamespaceSelector:       notIn("hookwright-system", "kube-system"),
		ObjectSelector:          &metav1.LabelSelector{},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To[int32](10),
		AdmissionReviewVersions: []string{"v1"},
	}}
	if !reflect.DeepEqual(cfg.Webhooks, want) {
		t.Errorf("webhooks =\n%+v\nwant\n%+v", cfg.Webhooks, want)
	}
	if install.Spec.WebhookDefinitions[1].Rules[0].Scope != nil {
		t.Error("the builder defaulted the install's own rule: it must copy")
	}

	t.Run("only webhooks of served deployments", func(t *testing.T) {
		served := []Webhook{webhooks[0]} // manager only
		cfg := ValidatingConfiguration(install, served, bundleOf, DefaultLockout("hookwright-system"))
		if cfg == nil || len(cfg.Webhooks) != 1 || cfg.Webhooks[0].Name != "vcrontab.example.com" {
			t.Errorf("webhooks = %+v, want vcrontab.example.com only", cfg)
		}
	})
	t.Run("nil without validating webhooks", func(t *testing.T) {
		install := admissionInstall(mutating)
		if cfg := ValidatingConfiguration(install, Webhooks(install), bundleOf, DefaultLockout("hookwright-system")); cfg != nil {
			t.Errorf("ValidatingConfiguration = %+v, want nil", cfg)
		}
	})
}

func TestMutatingConfiguration(t *testing.T) {
	crontabs := rule([]string{"stable.example.com"}, []string{"crontabs"}, admissionregistrationv1.Create)
	deployments := rule([]string{"apps"}, []string{"deployments"}, admissionregistrationv1.Create)
	a := admissionDefinition(operatorsv1alpha1.MutatingAdmissionWebhook, "b-default.example.com", "manager", crontabs)
	b := admissionDefinition(operatorsv1alpha1.MutatingAdmissionWebhook, "a-default.example.com", "other", deployments)
	b.ReinvocationPolicy = ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy)
	validating := admissionDefinition(operatorsv1alpha1.ValidatingAdmissionWebhook, "vcrontab.example.com", "manager", crontabs)
	install := admissionInstall(a, validating, b)

	cfg := MutatingConfiguration(install, Webhooks(install), bundleOf, DefaultLockout("hookwright-system"))
	if cfg == nil {
		t.Fatal("MutatingConfiguration = nil")
	}
	if cfg.Name != AdmissionConfigurationName(install) || cfg.Kind != "MutatingWebhookConfiguration" {
		t.Errorf("%s %s, want MutatingWebhookConfiguration %s", cfg.Kind, cfg.Name, AdmissionConfigurationName(install))
	}
	var names []string
	for _, w := range cfg.Webhooks {
		names = append(names, w.Name)
	}
	if !reflect.DeepEqual(names, []string{"b-default.example.com", "a-default.example.com"}) {
		t.Errorf("webhooks %v: want the spec's order (the API server calls mutating webhooks in order)", names)
	}
	if got := *cfg.Webhooks[0].ReinvocationPolicy; got != admissionregistrationv1.NeverReinvocationPolicy {
		t.Errorf("default reinvocationPolicy = %s, want Never", got)
	}
	if got := *cfg.Webhooks[1].ReinvocationPolicy; got != admissionregistrationv1.IfNeededReinvocationPolicy {
		t.Errorf("reinvocationPolicy = %s, want IfNeeded", got)
	}
	if got := cfg.Webhooks[1].NamespaceSelector.MatchExpressions[0].Values; !reflect.DeepEqual(got, []string{"hookwright-system", "kube-system", "ns"}) {
		t.Errorf("deployments webhook excludes %v, want its own namespace too", got)
	}
	if got := string(cfg.Webhooks[1].ClientConfig.CABundle); got != "bundle of other-service" {
		t.Errorf("caBundle = %q, want the bundle of other-service", got)
	}
	if install := admissionInstall(validating); MutatingConfiguration(install, Webhooks(install), bundleOf, DefaultLockout("")) != nil {
		t.Error("MutatingConfiguration without mutating webhooks: want nil")
	}
}
