package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
)

// Admission webhooks ride on the machinery of conversion: the webhooks of
// one Deployment share its Service, CA and serving certificate, and the
// install's admission configurations carry the Service's trust bundle as
// its CRDs do, so the one ordered CA rotation covers both.
//
// Each install has at most one ValidatingWebhookConfiguration and one
// MutatingWebhookConfiguration, both named
// desired.AdmissionConfigurationName. They are cluster-scoped, so they
// carry the owner annotation of a CRD claim instead of an owner reference,
// and are deleted by the install's finalizer, before the Deployments and
// Services they call (admission_delete.go).

// nameTakenRecheck is how often an install whose admission configuration
// name is taken looks again.
const nameTakenRecheck = 10 * time.Second

// observeAdmission reads the install's admission configurations, before
// the certificates step: a CA rotation must see the caBundles they hold.
// A configuration of the derived name that is another install's, or not
// Hookwright's at all, stops the install (NameTaken): it is never
// overwritten. A configuration of a kind the install no longer declares
// any webhook of is deleted at once: removing a webhook is always safe.
// Reads go through the label-selected cache; only a name the cache does
// not hold is read live, and only when the install needs it.
func (r *WebhookInstallReconciler) observeAdmission(ctx context.Context, s *installState) error {
	s.admission = admissionStates(s.install, s.webhooks)
	lockout := desired.DefaultLockout(r.Authority.Namespace)
	for _, a := range s.admission {
		a.excluded = desired.ExcludedNamespaces(s.install.Namespace, a.definition, lockout)
	}
	for _, kind := range admissionKinds {
		var states []*admissionState
		for _, a := range s.admission {
			if a.kind == kind {
				states = append(states, a)
			}
		}
		cfg, err := r.readAdmissionConfig(ctx, s.install, kind, len(states) > 0)
		if err != nil {
			return err
		}
		if len(states) == 0 {
			if cfg.live != nil && cfg.ours {
				if err := r.deleteAdmissionConfig(ctx, s.install, cfg, "declares no "+string(kind)+" any more"); err != nil {
					return err
				}
			}
			continue
		}
		for _, a := range states {
			a.config = cfg
		}
		if cfg.live == nil {
			continue
		}
		if !cfg.ours {
			msg := notOursMessage(s.install, cfg)
			for _, a := range states {
				a.state, a.message = v1alpha1.AdmissionFailed, msg
			}
			s.stop(v1alpha1.PhaseFailed, v1alpha1.ReasonNameTaken, msg)
			// Removing a foreign object wakes no watch of Hookwright's.
			s.retryWithin(nameTakenRecheck)
			return nil
		}
		for _, a := range states {
			if cc := cfg.clientConfig(a.name); cc != nil && cc.Service != nil && cc.Service.Namespace == s.install.Namespace && cc.Service.Name == a.webhook.Service {
				a.registered = true
				a.state, a.message = v1alpha1.AdmissionRegistered, registeredMessage(cfg)
			}
		}
	}
	return nil
}

// readAdmissionConfig reads the install's configuration of kind: from the
// cache, which holds only Hookwright's (by label); live when the cache has
// none and the install needs one (need), so a foreign object of that name
// is seen before anything is written.
func (r *WebhookInstallReconciler) readAdmissionConfig(ctx context.Context, install *v1alpha1.WebhookInstall, kind operatorsv1alpha1.WebhookAdmissionType, need bool) (*admissionConfig, error) {
	cfg := &admissionConfig{kind: kind, name: desired.AdmissionConfigurationName(install)}
	obj := newAdmissionObject(kind)
	err := r.Client.Get(ctx, client.ObjectKey{Name: cfg.name}, obj)
	if apierrors.IsNotFound(err) && need {
		obj = newAdmissionObject(kind)
		err = r.APIReader.Get(ctx, client.ObjectKey{Name: cfg.name}, obj)
	}
	switch {
	case apierrors.IsNotFound(err):
		return cfg, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s %s: %w", configKind(kind), cfg.name, err)
	}
	cfg.live = obj
	cfg.ours = ownedBy(obj, install)
	return cfg, nil
}

// notOursMessage says whose the configuration of the install's derived
// name is, and what to do.
func notOursMessage(install *v1alpha1.WebhookInstall, cfg *admissionConfig) string {
	if owner := cfg.live.GetAnnotations()[v1alpha1.AnnotationOwner]; cfg.live.GetLabels()[desired.LabelManagedBy] == desired.ManagedByValue && owner != "" {
		return fmt.Sprintf("%s %s, this install's admission configuration name, belongs to WebhookInstall %s; two installs cannot share it: "+
			"delete that install's configuration if it is left over, or rename one of the installs", configKind(cfg.kind), cfg.name, owner)
	}
	return fmt.Sprintf("%s %s exists and is not managed by Hookwright; Hookwright never overwrites it: "+
		"rename or delete it (it is the admission configuration name of WebhookInstall %s), or rename this install", configKind(cfg.kind), cfg.name, installRef(install))
}

func registeredMessage(cfg *admissionConfig) string {
	return fmt.Sprintf("registered in %s %s", configKind(cfg.kind), cfg.name)
}

// configureAdmission registers the install's admission webhooks: for each
// kind it builds the configuration (desired.ValidatingConfiguration,
// desired.MutatingConfiguration) and writes it with server-side apply only
// when it differs from the stored one. It runs after configureConversion,
// so only once every webhook Deployment is available: a configuration is
// never created or pointed at a Service without a ready backend, whatever
// its failurePolicy. A new registration waits while the admission guard is
// not in force, as a new CRD claim does.
func (r *WebhookInstallReconciler) configureAdmission(ctx context.Context, s *installState) error {
	lockout := desired.DefaultLockout(r.Authority.Namespace)
	bundle := func(service string) []byte { return s.services[service].bundle() }
	for _, kind := range admissionKinds {
		var states []*admissionState
		for _, a := range s.admission {
			if a.kind == kind {
				states = append(states, a)
			}
		}
		if len(states) == 0 {
			continue
		}
		cfg := states[0].config
		var want client.Object
		if kind == operatorsv1alpha1.ValidatingAdmissionWebhook {
			want = desired.ValidatingConfiguration(s.install, s.webhooks, bundle, lockout)
		} else {
			want = desired.MutatingConfiguration(s.install, s.webhooks, bundle, lockout)
		}
		if cfg.live != nil && admissionConfigEqual(cfg.live, want) {
			for _, a := range states {
				a.registered = true
				if a.state == v1alpha1.AdmissionPending {
					a.state, a.message = v1alpha1.AdmissionRegistered, registeredMessage(cfg)
				}
			}
			continue
		}
		if refused, err := r.refuseRegistrationWithoutGuard(ctx, s, cfg, states); refused || err != nil {
			return err
		}
		restored := r.noteAdmissionDrift(s, cfg, want, states)
		if err := r.apply(ctx, want); err != nil {
			for _, a := range states {
				a.state, a.message = v1alpha1.AdmissionFailed, err.Error()
			}
			return r.componentFailed(s, err)
		}
		cfg.live, cfg.ours = want, true
		var names, services []string
		for _, a := range states {
			a.registered, a.written = true, true
			a.state, a.message = v1alpha1.AdmissionRegistered, registeredMessage(cfg)+"; verification follows once the API server has loaded it"
			names = append(names, a.name)
			if !slices.Contains(services, a.webhook.Service) {
				services = append(services, a.webhook.Service)
			}
		}
		var trusting []string
		for _, svc := range services {
			trusting = append(trusting, fmt.Sprintf("service %s/%s trusting CA %s", s.install.Namespace, svc, certs.Fingerprint(s.services[svc].ca.Cert)))
		}
		if restored {
			admissionDriftRestores.WithLabelValues(string(kind)).Inc()
		}
		r.Recorder.Eventf(s.install, want, corev1.EventTypeNormal, "ConfiguredAdmission", "Configure",
			"Registered %s %v in %s %s, calling %s; excluded namespaces: %s", kind, names, configKind(kind), cfg.name,
			strings.Join(trusting, ", "), excludedSummary(states))
		s.retryWithin(verifyDelay)
	}
	return nil
}

func excludedSummary(states []*admissionState) string {
	var parts []string
	for _, a := range states {
		parts = append(parts, fmt.Sprintf("%s: %v", a.name, a.excluded))
	}
	return strings.Join(parts, "; ")
}

// refuseRegistrationWithoutGuard stops the install before it registers an
// admission webhook that is not registered yet while the admission guard
// is not in force: the guard is what checks that the install's creator may
// register admission webhooks. Registered webhooks keep being maintained.
func (r *WebhookInstallReconciler) refuseRegistrationWithoutGuard(ctx context.Context, s *installState, cfg *admissionConfig, states []*admissionState) (bool, error) {
	var unregistered []string
	for _, a := range states {
		if cfg.live == nil || cfg.clientConfig(a.name) == nil {
			unregistered = append(unregistered, a.name)
		}
	}
	if len(unregistered) == 0 {
		return false, nil
	}
	why, err := r.guardNotInForce(ctx)
	if err != nil || why == "" {
		return false, err
	}
	msg := fmt.Sprintf("not registering admission webhooks %s: %s, so Hookwright cannot tell whether this install's creator may register them. "+
		"Reapply the guard (kubectl apply --server-side --force-conflicts -k config/guard, or reinstall Hookwright's bundle)", strings.Join(unregistered, ", "), why)
	for _, a := range states {
		if slices.Contains(unregistered, a.name) {
			a.state, a.message = v1alpha1.AdmissionPending, msg
		}
	}
	s.stop(v1alpha1.PhaseFailed, v1alpha1.ReasonAdmissionGuardNotInForce, msg)
	s.retryWithin(guardRecheck)
	return true, nil
}

// noteAdmissionDrift records, before a write that restores them, the
// webhooks whose fields another field manager changed after Hookwright had
// configured them (read from the stored configuration's managedFields, as
// for a CRD's conversion), with a Warning on the configuration. It reports
// whether any was restored.
func (r *WebhookInstallReconciler) noteAdmissionDrift(s *installState, cfg *admissionConfig, want client.Object, states []*admissionState) bool {
	if cfg.live == nil || !cfg.ours {
		return false
	}
	restored := false
	for _, a := range states {
		if !ownsWebhookField(cfg.live.GetManagedFields(), a.name, func(m metav1.ManagedFieldsEntry) bool {
			return m.Manager == desired.FieldManager && m.Operation == metav1.ManagedFieldsOperationApply
		}) {
			continue // not configured by Hookwright yet: a first registration
		}
		var others []string
		for _, mf := range cfg.live.GetManagedFields() {
			if mf.Manager != desired.FieldManager && !slices.Contains(others, mf.Manager) &&
				ownsWebhookField([]metav1.ManagedFieldsEntry{mf}, a.name, func(metav1.ManagedFieldsEntry) bool { return true }) {
				others = append(others, mf.Manager)
			}
		}
		if len(others) == 0 {
			continue
		}
		sort.Strings(others)
		a.driftManager = strings.Join(others, ",")
		restored = true
		r.Recorder.Eventf(cfg.live, s.install, corev1.EventTypeWarning, "AdmissionDriftRestored", "Restore",
			"Webhook %s of %s %s was changed by field manager %q; Hookwright restored it (owner: WebhookInstall %s)",
			a.name, configKind(cfg.kind), cfg.name, a.driftManager, installRef(s.install))
	}
	return restored
}

// ownsWebhookField: an entry that match accepts owns a field of the
// webhook named name (the entry's own "." and its name key alone are no
// field).
func ownsWebhookField(entries []metav1.ManagedFieldsEntry, name string, match func(metav1.ManagedFieldsEntry) bool) bool {
	for _, mf := range entries {
		if mf.FieldsV1 == nil || !match(mf) {
			continue
		}
		var fields struct {
			Webhooks map[string]map[string]json.RawMessage `json:"f:webhooks"`
		}
		if json.Unmarshal(mf.FieldsV1.Raw, &fields) != nil {
			continue
		}
		for key, sub := range fields.Webhooks {
			var k struct {
				Name string `json:"name"`
			}
			raw, isKey := strings.CutPrefix(key, "k:")
			if !isKey || json.Unmarshal([]byte(raw), &k) != nil || k.Name != name {
				continue
			}
			for field := range sub {
				if field != "." && field != "f:name" {
					return true
				}
			}
		}
	}
	return false
}

// admissionConfigEqual: the stored configuration has what want asks for:
// its labels and annotations, and exactly its webhooks (defaults applied
// to both, so a field the API server filled in is no difference).
func admissionConfigEqual(live, want client.Object) bool {
	for k, v := range want.GetLabels() {
		if live.GetLabels()[k] != v {
			return false
		}
	}
	for k, v := range want.GetAnnotations() {
		if live.GetAnnotations()[k] != v {
			return false
		}
	}
	switch w := want.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		l, ok := live.(*admissionregistrationv1.ValidatingWebhookConfiguration)
		return ok && equality.Semantic.DeepEqual(normalizedValidating(l.Webhooks), normalizedValidating(w.Webhooks))
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		l, ok := live.(*admissionregistrationv1.MutatingWebhookConfiguration)
		return ok && equality.Semantic.DeepEqual(normalizedMutating(l.Webhooks), normalizedMutating(w.Webhooks))
	}
	return false
}

func normalizedValidating(in []admissionregistrationv1.ValidatingWebhook) []admissionregistrationv1.ValidatingWebhook {
	out := make([]admissionregistrationv1.ValidatingWebhook, len(in))
	for i := range in {
		w := in[i].DeepCopy()
		normalizeCommon(&w.ClientConfig, w.Rules, &w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds)
		out[i] = *w
	}
	return out
}

func normalizedMutating(in []admissionregistrationv1.MutatingWebhook) []admissionregistrationv1.MutatingWebhook {
	out := make([]admissionregistrationv1.MutatingWebhook, len(in))
	for i := range in {
		w := in[i].DeepCopy()
		normalizeCommon(&w.ClientConfig, w.Rules, &w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds)
		w.ReinvocationPolicy = ptr.To(ptr.Deref(w.ReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy))
		out[i] = *w
	}
	return out
}

// normalizeCommon applies the API server's defaults of admissionregistration/v1.
func normalizeCommon(cc *admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations,
	failurePolicy **admissionregistrationv1.FailurePolicyType, matchPolicy **admissionregistrationv1.MatchPolicyType,
	namespaceSelector, objectSelector **metav1.LabelSelector, timeout **int32) {
	if cc.Service != nil && cc.Service.Port == nil {
		cc.Service.Port = ptr.To[int32](443)
	}
	for i := range rules {
		if rules[i].Scope == nil {
			rules[i].Scope = ptr.To(admissionregistrationv1.AllScopes)
		}
	}
	*failurePolicy = ptr.To(ptr.Deref(*failurePolicy, admissionregistrationv1.Fail))
	*matchPolicy = ptr.To(ptr.Deref(*matchPolicy, admissionregistrationv1.Equivalent))
	if *namespaceSelector == nil {
		*namespaceSelector = &metav1.LabelSelector{}
	}
	if *objectSelector == nil {
		*objectSelector = &metav1.LabelSelector{}
	}
	*timeout = ptr.To(ptr.Deref(*timeout, 10))
}

func newAdmissionObject(kind operatorsv1alpha1.WebhookAdmissionType) client.Object {
	if kind == operatorsv1alpha1.ValidatingAdmissionWebhook {
		return &admissionregistrationv1.ValidatingWebhookConfiguration{}
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{}
}

// configKind names the configuration resource of an admission webhook type.
func configKind(kind operatorsv1alpha1.WebhookAdmissionType) string {
	if kind == operatorsv1alpha1.ValidatingAdmissionWebhook {
		return "ValidatingWebhookConfiguration"
	}
	return "MutatingWebhookConfiguration"
}
