package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
)

// admissionDryRunTimeout bounds one verification dry-run: the API server
// waits up to 30 s per webhook (timeoutSeconds), mutating then validating.
const admissionDryRunTimeout = 45 * time.Second

// verifyNamespaceFallback is where a namespaced dry-run goes when the
// webhook does not see the install's namespace (it exists in every cluster).
const verifyNamespaceFallback = "default"

// verifyAdmission proves, through the API server, that it calls each
// registered admission webhook through its configuration, with the
// caBundle Hookwright wrote: a server-side dry-run create that the webhook
// must see (admission_verify.go picks a resource its rules match with
// CREATE, in a namespace its namespaceSelector does not exclude, labelled
// as its objectSelector asks). The API server calls webhooks on dry runs
// only when their sideEffects is None or NoneOnDryRun; a webhook that
// leaves no safe dry-run is reported "not verified" with the reason. As
// for conversion, it runs only when something changed since the last
// verification, during a rotation, or when the last one did not verify.
func (r *WebhookInstallReconciler) verifyAdmission(ctx context.Context, s *installState) error {
	for _, a := range s.admission {
		if !a.registered || a.state != v1alpha1.AdmissionRegistered || a.written {
			continue // not registered, failed in an earlier step, or just written (verified on the next pass)
		}
		key := unconfirmedAdmissionKey(s.install, a)
		r.unconfirmed.inherit(key, admissionStatusSince(s.install, a))
		confirm := r.confirmationDue(s, key)
		if !confirm && r.admissionStillVerified(s, a) {
			a.state, a.trusted, a.message = v1alpha1.AdmissionVerified, true, previousAdmissionMessage(s.install, a)
			continue
		}
		if !confirm && admissionAwaitingRollout(s, a) {
			// Verified it stays; trust is not proven this pass.
			a.state, a.message = v1alpha1.AdmissionVerified, previousAdmissionMessage(s.install, a)
			continue
		}
		started := r.Clock.Now()
		v := r.verifyAdmissionWebhook(ctx, s, a)
		a.verifyTook = r.Clock.Since(started)
		admissionVerificationsTotal.WithLabelValues(string(a.kind), v.result()).Inc()
		a.state, a.verifyReason, a.message, a.trusted, a.unverifiable = v.state, v.reason, v.message, v.trusted, v.static || v.forbidden
		switch {
		case v.state == v1alpha1.AdmissionVerified && !admissionVerifiedBefore(s.install, a):
			// Confirmed once more: see unconfirmedVerifications. A write
			// that changed where the API server sends requests is never
			// verified in its own pass, so the status says Registered, not
			// Verified, when its first verification comes.
			a.firstVerified = true
			r.unconfirmed.add(key, s.now)
			s.retryWithin(confirmAfter)
		case v.forbidden:
			s.retryWithin(verifyForbiddenRetry) // granting RBAC wakes nothing
		case v.state == v1alpha1.AdmissionFailed:
			s.retryWithin(verifyFailedRetry) // fixing a webhook wakes nothing
		case v.state == v1alpha1.AdmissionUnverified && !v.static:
			s.retryWithin(verifyForbiddenRetry)
		}
	}
	return nil
}

// admissionVerdict is what one verification of an admission webhook showed.
type admissionVerdict struct {
	state   v1alpha1.AdmissionWebhookState
	reason  string // verifyReason: why it failed or could not be verified
	message string
	// trusted: the webhook answered through the current caBundle (what a
	// certificate rotation waits for).
	trusted bool
	// forbidden: RBAC forbids the dry run (the message says what to grant).
	forbidden bool
	// static: nothing but a change of the install can make it verifiable.
	static bool
	// admittedOnly: the dry run was admitted, which proves the webhook was
	// called only with failurePolicy Fail.
	admittedOnly bool
}

// result is the verdict's label on hookwright_admission_verifications_total.
func (v admissionVerdict) result() string {
	switch v.state {
	case v1alpha1.AdmissionVerified:
		return "success"
	case v1alpha1.AdmissionFailed:
		return "failure"
	}
	return "unverifiable"
}

func notVerified(reason, message string) admissionVerdict {
	return admissionVerdict{state: v1alpha1.AdmissionUnverified, reason: reason, message: "not verified: " + message}
}

// verifyAdmissionWebhook dry-run creates an object the webhook must see
// and classifies the API server's answer. With failurePolicy Ignore the
// API server admits a request whose call failed, so an admitted dry run
// (or one another webhook refused) proves nothing there: the trust probe
// then calls the webhook at its path with the same caBundle and
// failurePolicy Fail.
func (r *WebhookInstallReconciler) verifyAdmissionWebhook(ctx context.Context, s *installState, a *admissionState) admissionVerdict {
	def := a.definition
	if se := ptr.Deref(def.SideEffects, ""); se != admissionregistrationv1.SideEffectClassNone && se != admissionregistrationv1.SideEffectClassNoneOnDryRun {
		v := notVerified(v1alpha1.ReasonAdmissionNotVerified, fmt.Sprintf("sideEffects is %q: the API server calls a webhook on a dry-run request only when its sideEffects is None or NoneOnDryRun, "+
			"and Hookwright makes no real request to verify one; declare sideEffects None or NoneOnDryRun if the webhook has no side effects on dry run", se))
		v.static = true
		return v
	}
	candidates, why := admissionDryRunCandidates(def, r.Client.RESTMapper(), r.crdStorageVersion(ctx), verifyNamespaces(s.install.Namespace, a.excluded))
	if len(candidates) == 0 {
		v := notVerified(v1alpha1.ReasonAdmissionNotVerified, why)
		v.static = true
		return v
	}
	var target *admissionDryRun
	var refused string
	for _, c := range candidates {
		allowed, denied := r.mayCreate(ctx, c)
		if allowed {
			target = c
			break
		}
		if refused == "" {
			refused = denied
		}
	}
	if target == nil {
		return forbiddenDryRun(candidates[0], refused)
	}
	dctx, cancel := context.WithTimeout(ctx, admissionDryRunTimeout)
	defer cancel()
	err := r.Client.Create(dctx, target.object(), client.DryRunAll)
	v := classifyAdmissionDryRun(err, a.name, target)
	inconclusive := v.admittedOnly || (v.state == v1alpha1.AdmissionUnverified && !v.forbidden && !v.static)
	if !inconclusive || ptr.Deref(def.FailurePolicy, admissionregistrationv1.Fail) == admissionregistrationv1.Fail {
		return v
	}
	svc := s.services[a.webhook.Service]
	if svc == nil {
		return notVerified(v1alpha1.ReasonAdmissionNotVerified, "failurePolicy Ignore: an admitted dry run does not show that the webhook answered, and the Service's certificates are not known yet")
	}
	res := r.probeAdmissionTrust(ctx, newAdmissionProbeTarget(a.kind, a.clientConfigWith(s.install.Namespace, svc.bundle()), def.AdmissionReviewVersions))
	trustProbesTotal.WithLabelValues("verify", string(res.verdict)).Inc()
	outcome := "admitted"
	if err != nil {
		outcome = "refused by another webhook, a policy or validation: " + err.Error()
	}
	ignore := fmt.Sprintf("with failurePolicy Ignore the API server admits a request whose call failed, so a dry-run create of %s (%s) shows nothing; "+
		"Hookwright's trust probe called the webhook at its path with the same caBundle and failurePolicy Fail", target, outcome)
	switch res.verdict {
	case trustProven:
		// The probe's answer may be a 404 or an error status: the webhook
		// is trusted, and as broken as with failurePolicy Fail.
		switch c := classifyAdmissionError(res.message, admissionProbeWebhook(a.kind)); c.reason {
		case v1alpha1.ReasonWebhookPathNotFound:
			return admissionVerdict{state: v1alpha1.AdmissionFailed, reason: c.reason, trusted: true,
				message: ignore + ": it answered 404 Not Found, so every call fails open: the install's webhookPath must name the path the webhook serves " +
					"(the API server trusted its certificate, so certificate rotations go on): " + res.message}
		case v1alpha1.ReasonWebhookErrored:
			return admissionVerdict{state: v1alpha1.AdmissionFailed, reason: c.reason, trusted: true,
				message: ignore + ": it answered with an error instead of an admission review, so every call fails open " +
					"(the API server trusted its certificate, so certificate rotations go on): " + res.message}
		}
		return admissionVerdict{state: v1alpha1.AdmissionVerified, trusted: true, message: ignore + ": it answered"}
	case trustUntrusted:
		return admissionVerdict{state: v1alpha1.AdmissionFailed, reason: v1alpha1.ReasonWebhookUntrusted,
			message: ignore + ": the API server does not trust its serving certificate through the caBundle, so every call fails open: " + res.message}
	case trustUnreachable:
		return admissionVerdict{state: v1alpha1.AdmissionFailed, reason: v1alpha1.ReasonWebhookUnreachable,
			message: ignore + ": the API server could not reach it (no ready pod, connection refused or timed out), so every call fails open: " + res.message}
	}
	return notVerified(v1alpha1.ReasonAdmissionNotVerified, ignore+", which could not run: "+res.message)
}

// classifyAdmissionDryRun turns the API server's answer to a dry-run
// create of target into a verdict for the webhook named webhook. Only an
// answer naming that webhook proves anything about it: a denial by
// another webhook, a ValidatingAdmissionPolicy or a quota, RBAC, or an
// object rejected before the webhook was called leave it unverified.
func classifyAdmissionDryRun(err error, webhook string, target *admissionDryRun) admissionVerdict {
	if err == nil {
		return admissionVerdict{state: v1alpha1.AdmissionVerified, trusted: true, admittedOnly: true,
			message: fmt.Sprintf("the API server called the webhook on a dry-run create of %s, and admitted it", target)}
	}
	msg := err.Error()
	c := classifyAdmissionError(msg, webhook)
	switch {
	case c.denied:
		return admissionVerdict{state: v1alpha1.AdmissionVerified, trusted: true,
			message: fmt.Sprintf("the API server called the webhook on a dry-run create of %s, and the webhook denied Hookwright's minimal object (%s): it answers through the caBundle", target, msg)}
	case c.reason == v1alpha1.ReasonWebhookUntrusted:
		return admissionVerdict{state: v1alpha1.AdmissionFailed, reason: c.reason,
			message: fmt.Sprintf("the API server does not trust the webhook's serving certificate through the caBundle, so it could not call it on a dry-run create of %s: %s", target, msg)}
	case c.reason == v1alpha1.ReasonWebhookUnreachable:
		return admissionVerdict{state: v1alpha1.AdmissionFailed, reason: c.reason,
			message: fmt.Sprintf("the API server could not reach the webhook (no ready pod, connection refused or timed out) on a dry-run create of %s: %s", target, msg)}
	case c.reason == v1alpha1.ReasonWebhookPathNotFound:
		return admissionVerdict{state: v1alpha1.AdmissionFailed, reason: c.reason, trusted: true,
			message: fmt.Sprintf("the webhook answered 404 Not Found to a dry-run create of %s: the install's webhookPath must name the path the webhook serves "+
				"(the API server trusted its certificate, so certificate rotations go on): %s", target, msg)}
	case c.reason == v1alpha1.ReasonWebhookErrored:
		return admissionVerdict{state: v1alpha1.AdmissionFailed, reason: c.reason, trusted: true,
			message: fmt.Sprintf("the webhook answered a dry-run create of %s with an error instead of an admission review "+
				"(the API server trusted its certificate, so certificate rotations go on): %s", target, msg)}
	case c.ours:
		v := notVerified(v1alpha1.ReasonAdmissionNotVerified, msg+": the API server calls a webhook on a dry-run request only when its sideEffects is None or NoneOnDryRun")
		v.static = true
		return v
	case apierrors.IsForbidden(err) && strings.Contains(msg, "cannot create resource"):
		return forbiddenDryRun(target, msg)
	}
	return notVerified(v1alpha1.ReasonAdmissionNotVerified, fmt.Sprintf("the API server refused a dry-run create of %s without an answer of webhook %s "+
		"(another webhook or policy, or the object's validation, came first): %s; verification runs again", target, webhook, msg))
}

// forbiddenDryRun: RBAC forbids Hookwright the dry run; the message says
// what to grant.
func forbiddenDryRun(target *admissionDryRun, cause string) admissionVerdict {
	return admissionVerdict{state: v1alpha1.AdmissionUnverified, reason: v1alpha1.ReasonVerificationForbidden, forbidden: true,
		message: fmt.Sprintf("registered, but Hookwright may not dry-run create %s (%s) to verify it through the API server (%s). "+
			"Grant its ServiceAccount the verb create on %s with a ClusterRole and ClusterRoleBinding (as examples/crontab/verifier-rbac.yaml does)",
			target.resource, target, cause, target.resource)}
}

// mayCreate asks the API server, with a SubjectAccessReview for
// Hookwright's own ServiceAccount (Authority), whether Hookwright may
// create what target names, so that a verification RBAC forbids makes no
// request the API server refuses (a 403 in the audit log is what admins
// alert on). With no known identity, or when the review itself fails, it
// answers yes: the dry run tells. denied says why not.
func (r *WebhookInstallReconciler) mayCreate(ctx context.Context, target *admissionDryRun) (allowed bool, denied string) {
	where := "at the cluster scope"
	if target.namespace != "" {
		where = "in namespace " + target.namespace
	}
	return r.mayDo(ctx, authorizationv1.ResourceAttributes{
		Verb: "create", Group: target.gvk.Group, Version: target.gvk.Version, Resource: target.plural, Namespace: target.namespace,
	}, target.resource+" "+where)
}

// mayDo asks the API server whether Hookwright's ServiceAccount may do
// what attrs says (what names it in denied), as mayCreate does.
func (r *WebhookInstallReconciler) mayDo(ctx context.Context, attrs authorizationv1.ResourceAttributes, what string) (allowed bool, denied string) {
	if r.Authority.Namespace == "" || r.Authority.ServiceAccount == "" {
		return true, ""
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + r.Authority.Namespace + ":" + r.Authority.ServiceAccount,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + r.Authority.Namespace, "system:authenticated"},
		ResourceAttributes: &attrs,
	}}
	if err := r.Client.Create(ctx, sar); err != nil {
		return true, ""
	}
	if sar.Status.Allowed {
		return true, ""
	}
	denied = fmt.Sprintf("RBAC does not allow ServiceAccount %s/%s to %s %s", r.Authority.Namespace, r.Authority.ServiceAccount, attrs.Verb, what)
	if sar.Status.Reason != "" {
		denied += ": " + sar.Status.Reason
	}
	return false, denied
}

// admissionStillVerified: the status says verified for this generation
// and CA, nothing was written since, and no rotation is under way.
func (r *WebhookInstallReconciler) admissionStillVerified(s *installState, a *admissionState) bool {
	st := s.install.Status
	svc := s.services[a.webhook.Service]
	if st.ObservedGeneration != s.install.Generation || s.issuedCerts || svc == nil || rotating(s, a.webhook.Service) {
		return false
	}
	fingerprint := certs.Fingerprint(svc.ca.Cert)
	for _, status := range st.Services {
		if status.Name == a.webhook.Service && status.CAFingerprint != fingerprint {
			return false
		}
	}
	return admissionVerifiedBefore(s.install, a)
}

// admissionAwaitingRollout is awaitingRollout (step_verify.go) for an
// admission webhook: a rotation of its Service is under way, the status
// says the webhook is verified for this spec, and the Service's Deployment
// has not yet rolled the rotation's serving certificate out to every
// replica. Such a pass proves nothing the rotation waits for: it is done
// only once a pass finds the rollout done and proves trust then
// (serviceVerified), and its gates probe the webhooks themselves
// (probeAdmissionService). Each rollout step wakes a pass; each cost a dry
// run per webhook, and a trust probe of the probe configuration for one
// with failurePolicy Ignore.
func admissionAwaitingRollout(s *installState, a *admissionState) bool {
	svc := s.services[a.webhook.Service]
	return svc != nil && !svc.rolledOut && rotating(s, a.webhook.Service) &&
		s.install.Status.ObservedGeneration == s.install.Generation && admissionVerifiedBefore(s.install, a)
}

// admissionStatusSince is the VerifiedSince the install's status gives
// the webhook.
func admissionStatusSince(install *v1alpha1.WebhookInstall, a *admissionState) *metav1.Time {
	for _, prev := range install.Status.AdmissionWebhooks {
		if prev.Name == a.name && prev.Type == string(a.kind) && prev.State == v1alpha1.AdmissionVerified {
			return prev.VerifiedSince
		}
	}
	return nil
}

// admissionVerifiedBefore: the install's status says the webhook is
// verified.
func admissionVerifiedBefore(install *v1alpha1.WebhookInstall, a *admissionState) bool {
	for _, prev := range install.Status.AdmissionWebhooks {
		if prev.Name == a.name && prev.Type == string(a.kind) {
			return prev.State == v1alpha1.AdmissionVerified
		}
	}
	return false
}

func previousAdmissionMessage(install *v1alpha1.WebhookInstall, a *admissionState) string {
	for _, prev := range install.Status.AdmissionWebhooks {
		if prev.Name == a.name && prev.Type == string(a.kind) {
			return prev.Message
		}
	}
	return ""
}

// verifyNamespaces are the namespaces a namespaced dry run may use, in
// order: the install's, then default, less those the webhook's
// namespaceSelector excludes.
func verifyNamespaces(installNamespace string, excluded []string) []string {
	var out []string
	for _, ns := range []string{installNamespace, verifyNamespaceFallback} {
		if ns != "" && !slices.Contains(excluded, ns) && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// crdStorageVersion returns a lookup of the storage version of a CRD's
// resource (live reads, once each per pass), "" for a resource that is
// not a CRD's.
func (r *WebhookInstallReconciler) crdStorageVersion(ctx context.Context) func(group, resource string) string {
	seen := map[string]string{}
	return func(group, resource string) string {
		if group == "" || !strings.Contains(group, ".") {
			return "" // a built-in group
		}
		name := resource + "." + group
		if v, ok := seen[name]; ok {
			return v
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		version := ""
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, crd); err == nil {
			for _, v := range crd.Spec.Versions {
				if v.Storage {
					version = v.Name
				}
			}
		}
		seen[name] = version
		return version
	}
}

// admissionDryRun is what a verification dry-run creates.
type admissionDryRun struct {
	gvk       schema.GroupVersionKind
	plural    string // the resource
	resource  string // <plural>.<group>, or <plural> in the core group
	namespace string // "" for a cluster-scoped resource
	labels    map[string]string
}

func (t *admissionDryRun) String() string {
	if t.namespace == "" {
		return fmt.Sprintf("%s %s", t.gvk.GroupVersion(), t.gvk.Kind)
	}
	return fmt.Sprintf("%s %s in namespace %s", t.gvk.GroupVersion(), t.gvk.Kind, t.namespace)
}

// object is the minimal object: apiVersion, kind, a generated name, the
// namespace and the labels the webhook's objectSelector asks for.
func (t *admissionDryRun) object() *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(t.gvk)
	obj.SetGenerateName("hookwright-verify-")
	obj.SetNamespace(t.namespace)
	if len(t.labels) > 0 {
		obj.SetLabels(maps.Clone(t.labels))
	}
	return obj
}

// admissionDryRunCandidates lists, best first, what to dry-run create so
// that def's webhook sees the request: resources its rules match with
// CREATE (or '*'), named concretely (no wildcard group or resource, no
// subresource) and served (resolved through mapper), namespaced ones
// first, in the first of namespaces (those the webhook's namespaceSelector
// does not exclude), then cluster-scoped ones; for a CRD's resource, at
// its storage version when the rule matches it (no conversion involved).
// It says why when there is none.
func admissionDryRunCandidates(def v1alpha1.WebhookDefinition, mapper meta.RESTMapper, storageVersion func(group, resource string) string, namespaces []string) ([]*admissionDryRun, string) {
	var namespaced, clusterScoped []*admissionDryRun
	var skipped []string
	creates := false
	for _, rule := range def.AdmissionRules() {
		if !slices.ContainsFunc(rule.Operations, func(op admissionregistrationv1.OperationType) bool {
			return op == admissionregistrationv1.Create || op == admissionregistrationv1.OperationAll
		}) {
			continue
		}
		creates = true
		for _, group := range rule.APIGroups {
			for _, resource := range rule.Resources {
				name := resource
				if group != "" {
					name = resource + "." + group
				}
				if group == "*" || strings.Contains(resource, "*") || strings.Contains(resource, "/") {
					skipped = append(skipped, name+" (not one concrete resource)")
					continue
				}
				gvk, isNamespaced, err := resolveRuleResource(mapper, rule, group, resource, storageVersion(group, resource), ptr.Deref(def.MatchPolicy, admissionregistrationv1.Equivalent))
				if err != nil {
					skipped = append(skipped, fmt.Sprintf("%s (%v)", name, err))
					continue
				}
				t := &admissionDryRun{gvk: gvk, plural: resource, resource: name, labels: selectorLabels(def.ObjectSelector)}
				switch {
				case !isNamespaced:
					clusterScoped = append(clusterScoped, t)
				case len(namespaces) == 0:
					skipped = append(skipped, name+" (its namespaceSelector excludes every namespace Hookwright would use)")
				default:
					t.namespace = namespaces[0]
					namespaced = append(namespaced, t)
				}
			}
		}
	}
	if candidates := append(namespaced, clusterScoped...); len(candidates) > 0 {
		return candidates, ""
	}
	if !creates {
		return nil, "no rule matches CREATE, the only operation Hookwright can dry-run without an object of someone's to change; verify the webhook with a dry-run request of your own"
	}
	return nil, "no rule with CREATE names a resource Hookwright can dry-run create: " + strings.Join(skipped, ", ")
}

// resolveRuleResource finds the kind and scope of group/resource as rule
// matches it: at the CRD's storage version when the rule matches it (or
// matchPolicy Equivalent lets it), else at the rule's first version (the
// served preferred one for '*').
func resolveRuleResource(mapper meta.RESTMapper, rule admissionregistrationv1.RuleWithOperations, group, resource, storage string, matchPolicy admissionregistrationv1.MatchPolicyType) (schema.GroupVersionKind, bool, error) {
	anyVersion := slices.Contains(rule.APIVersions, "*")
	version := ""
	switch {
	case storage != "" && (anyVersion || slices.Contains(rule.APIVersions, storage) || matchPolicy == admissionregistrationv1.Equivalent):
		version = storage
	case !anyVersion && len(rule.APIVersions) > 0:
		version = rule.APIVersions[0]
	}
	gvk, err := mapper.KindFor(schema.GroupVersionResource{Group: group, Version: version, Resource: resource})
	if err != nil {
		var ambiguous *meta.AmbiguousResourceError
		kinds, kerr := mapper.KindsFor(schema.GroupVersionResource{Group: group, Version: version, Resource: resource})
		if !errors.As(err, &ambiguous) || kerr != nil || len(kinds) == 0 {
			return schema.GroupVersionKind{}, false, fmt.Errorf("not served: %w", err)
		}
		gvk = kinds[0]
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionKind{}, false, fmt.Errorf("not served: %w", err)
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	switch ptr.Deref(rule.Scope, admissionregistrationv1.AllScopes) {
	case admissionregistrationv1.ClusterScope:
		if namespaced {
			return schema.GroupVersionKind{}, false, errors.New("namespaced, and the rule matches cluster-scoped resources only")
		}
	case admissionregistrationv1.NamespacedScope:
		if !namespaced {
			return schema.GroupVersionKind{}, false, errors.New("cluster-scoped, and the rule matches namespaced resources only")
		}
	}
	return gvk, namespaced, nil
}

// selectorLabels are labels an object needs for sel to select it:
// matchLabels, the first value of each In, a value for each Exists.
func selectorLabels(sel *v1alpha1.ObjectSelector) map[string]string {
	if sel == nil {
		return nil
	}
	out := maps.Clone(sel.MatchLabels)
	if out == nil {
		out = map[string]string{}
	}
	for _, e := range sel.MatchExpressions {
		if _, set := out[e.Key]; set {
			continue
		}
		switch e.Operator {
		case "In":
			if len(e.Values) > 0 {
				out[e.Key] = e.Values[0]
			}
		case "Exists":
			out[e.Key] = "hookwright-verify"
		}
	}
	return out
}

// verifyAdmissionService is the rotation gates' fallback without the trust
// probe (fallbackGate): a dry run through each admission webhook
// registered calling service. It fails when the API server could not
// call one (untrusted or unreachable); a webhook it cannot verify (RBAC,
// no safe dry run) leaves the rotation to the settle time, as for CRDs.
func (r *WebhookInstallReconciler) verifyAdmissionService(ctx context.Context, s *installState, service string) error {
	for _, a := range s.admissionOfService(service) {
		if a.liveCABundle(s.install.Namespace) == nil {
			continue
		}
		v := r.verifyAdmissionWebhook(ctx, s, a)
		admissionVerificationsTotal.WithLabelValues(string(a.kind), v.result()).Inc()
		if v.state == v1alpha1.AdmissionFailed && !v.trusted {
			return fmt.Errorf("admission webhook %s: %s", a.name, v.message)
		}
	}
	return nil
}
