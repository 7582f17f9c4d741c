package controllers

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

// The admission trust probe: the trust probe (trustprobe.go) for the
// caBundles of admission configurations. Its design, safety and RBAC are
// described with the conversion probe's in trustprobe.go; this file holds
// the configurations and the classification of the API server's answers.

const (
	// admissionProbeName names Hookwright's two probe configurations, one
	// ValidatingWebhookConfiguration and one MutatingWebhookConfiguration.
	admissionProbeName = "hookwright-trust-probe"
	// admissionProbeLabel is set on the dry-run TrustProbe, with the kind
	// probed as its value: each probe configuration's objectSelector
	// requires it, so neither ever sees another object, nor the other
	// kind's probe, nor the conversion probe's TrustProbes.
	admissionProbeLabel = "operators.hookwright.dev/trust-probe"
	// admissionProbeVersion is the probe CRD's storage version: a
	// TrustProbe created at it needs no conversion, so the probe CRD's own
	// conversion (the conversion probe's) plays no part.
	admissionProbeVersion = "v1"
	// admissionProbeWebhookTimeout is the probe webhook's timeoutSeconds:
	// the API server gives up on a webhook that accepts and never answers
	// before the dry-run's own deadline (trustProbeCallTimeout).
	admissionProbeWebhookTimeout int32 = 5
)

// admissionProbeSlot serializes admission probes: they share the probe
// configurations (the conversion probe has its own CRD and slot).
var admissionProbeSlot = newProbeSlot()

// admissionProbeWebhook is the name of the probe configuration's only
// webhook; the API server names it in every answer.
func admissionProbeWebhook(kind admissionKind) string {
	if kind == operatorsv1alpha1.MutatingAdmissionWebhook {
		return "mutating.trust-probe.operators.hookwright.dev"
	}
	return "validating.trust-probe.operators.hookwright.dev"
}

func admissionProbeLabelValue(kind admissionKind) string {
	if kind == operatorsv1alpha1.MutatingAdmissionWebhook {
		return "mutating"
	}
	return "validating"
}

// admissionProbeTarget is one admission configuration to probe: how the
// API server calls a webhook (service, path, port) with the caBundle under
// test, through a webhook of kind.
type admissionProbeTarget struct {
	kind           admissionKind
	clientConfig   admissionregistrationv1.WebhookClientConfig
	reviewVersions []string
	host           string // <service>.<namespace>.svc:<port>, as the API server names it in errors
}

func newAdmissionProbeTarget(kind admissionKind, cc admissionregistrationv1.WebhookClientConfig, reviewVersions []string) admissionProbeTarget {
	ref := cc.Service
	return admissionProbeTarget{kind: kind, clientConfig: cc, reviewVersions: reviewVersions,
		host: fmt.Sprintf("%s.%s.svc:%d", ref.Name, ref.Namespace, ptr.Deref(ref.Port, 443))}
}

// idleAdmissionProbe is a probe configuration's target between probes: a
// Service that does not exist in Hookwright's namespace.
func (r *WebhookInstallReconciler) idleAdmissionProbe(kind admissionKind) admissionProbeTarget {
	ns := r.Authority.Namespace
	if ns == "" {
		ns = "default"
	}
	return newAdmissionProbeTarget(kind, admissionregistrationv1.WebhookClientConfig{
		Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: trustProbeIdleService, Path: ptr.To("/"), Port: ptr.To[int32](443)},
	}, []string{"v1"})
}

// admissionProbeConfiguration is the probe configuration of target's kind
// pointing at target. Its only webhook matches CREATE of TrustProbes at the
// probe CRD's storage version (matchPolicy Exact), cluster-scoped, carrying
// admissionProbeLabel with its kind's value: nothing but Hookwright's own
// dry-run TrustProbes. sideEffects None (the API server calls it on dry
// run), failurePolicy Fail (a failed call shows).
func admissionProbeConfiguration(target admissionProbeTarget) client.Object {
	meta := metav1.ObjectMeta{Name: admissionProbeName, Labels: map[string]string{desired.LabelManagedBy: desired.ManagedByValue}}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{v1alpha1.GroupVersion.Group}, APIVersions: []string{admissionProbeVersion},
			Resources: []string{"trustprobes"}, Scope: ptr.To(admissionregistrationv1.ClusterScope),
		},
	}}
	objectSelector := &metav1.LabelSelector{MatchLabels: map[string]string{admissionProbeLabel: admissionProbeLabelValue(target.kind)}}
	cc := *target.clientConfig.DeepCopy()
	if target.kind == operatorsv1alpha1.MutatingAdmissionWebhook {
		return &admissionregistrationv1.MutatingWebhookConfiguration{
			TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingWebhookConfiguration"},
			ObjectMeta: meta,
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: admissionProbeWebhook(target.kind), ClientConfig: cc, Rules: rules,
				FailurePolicy: ptr.To(admissionregistrationv1.Fail), MatchPolicy: ptr.To(admissionregistrationv1.Exact),
				NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: objectSelector,
				SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), TimeoutSeconds: ptr.To(admissionProbeWebhookTimeout),
				AdmissionReviewVersions: target.reviewVersions, ReinvocationPolicy: ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
			}},
		}
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: meta,
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: admissionProbeWebhook(target.kind), ClientConfig: cc, Rules: rules,
			FailurePolicy: ptr.To(admissionregistrationv1.Fail), MatchPolicy: ptr.To(admissionregistrationv1.Exact),
			NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: objectSelector,
			SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), TimeoutSeconds: ptr.To(admissionProbeWebhookTimeout),
			AdmissionReviewVersions: target.reviewVersions,
		}},
	}
}

// probeAdmissionTrust makes the API server call the webhook of target with
// target's caBundle, through the probe configuration of target's kind,
// and says what it found. As the conversion probe, it first waits until
// the API server answers through the idle Service (so every later answer
// that names another comes through target's configuration), and the
// answer through target is also a barrier: the API server loads the
// configurations of one kind through one watch, in resourceVersion order,
// so it has loaded every earlier write of that kind, the install's
// configuration included.
func (r *WebhookInstallReconciler) probeAdmissionTrust(ctx context.Context, target admissionProbeTarget) trustResult {
	release, busy := admissionProbeSlot.acquire(ctx)
	if busy != nil {
		return *busy
	}
	defer release()
	idle := r.idleAdmissionProbe(target.kind)
	webhook := admissionProbeWebhook(target.kind)

	live := newAdmissionObject(target.kind)
	err := r.APIReader.Get(ctx, client.ObjectKey{Name: admissionProbeName}, live)
	switch {
	case apierrors.IsForbidden(err):
		return trustResult{trustUnavailable, err.Error()}
	case err != nil && !apierrors.IsNotFound(err):
		return trustResult{trustInconclusive, fmt.Sprintf("reading %s %s: %v", configKind(target.kind), admissionProbeName, err)}
	case err != nil || !admissionProbeCalls(live, idle):
		if _, res, ok := r.writeAdmissionProbe(ctx, idle); !ok {
			return res
		}
	}
	// Until the API server answers through idle, an answer may come from
	// an earlier probe of any Service, or from no configuration at all.
	if res, o := r.awaitAdmissionProbe(ctx, target.kind, idle, func(o probeOutcome) bool { return o.host == idle.host }); o == nil {
		return res
	}
	written, res, ok := r.writeAdmissionProbe(ctx, target)
	if !ok {
		return res
	}
	res, o := r.awaitAdmissionProbe(ctx, target.kind, idle, func(o probeOutcome) bool {
		return o.host != idle.host && (o.answered || o.host == target.host)
	})
	if o == nil {
		return res
	}
	// A write by someone else in between would make the answer nobody's.
	live = newAdmissionObject(target.kind)
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: admissionProbeName}, live); err != nil {
		return trustResult{trustInconclusive, fmt.Sprintf("reading %s %s: %v", configKind(target.kind), admissionProbeName, err)}
	}
	if live.GetResourceVersion() != written {
		return trustResult{trustInconclusive, configKind(target.kind) + " " + admissionProbeName + " changed during the probe"}
	}
	// Back to idle, so the configuration names no install's Service
	// between probes (the next probe would write it first anyway).
	_, _, _ = r.writeAdmissionProbe(ctx, idle)
	res = o.result()
	if res.verdict == trustProven && o.message == "" {
		res.message = fmt.Sprintf("the webhook answered admission probe %s", webhook)
	}
	return res
}

// admissionProbeCalls: the live probe configuration is the one target asks
// for (defaults applied).
func admissionProbeCalls(live client.Object, target admissionProbeTarget) bool {
	return admissionConfigEqual(live, admissionProbeConfiguration(target))
}

// writeAdmissionProbe applies the probe configuration for target and
// returns its new resourceVersion.
func (r *WebhookInstallReconciler) writeAdmissionProbe(ctx context.Context, target admissionProbeTarget) (string, trustResult, bool) {
	obj := admissionProbeConfiguration(target)
	if err := r.apply(ctx, obj); err != nil {
		if apierrors.IsForbidden(err) {
			return "", trustResult{trustUnavailable, err.Error()}, false
		}
		return "", trustResult{trustInconclusive, err.Error()}, false
	}
	return obj.GetResourceVersion(), trustResult{}, true
}

// awaitAdmissionProbe dry-runs TrustProbes until want holds for what the
// API server answered (o non-nil), or says why it gave up (o nil).
func (r *WebhookInstallReconciler) awaitAdmissionProbe(ctx context.Context, kind admissionKind, idle admissionProbeTarget, want func(probeOutcome) bool) (trustResult, *probeOutcome) {
	deadline := time.Now().Add(trustProbeLoadTimeout)
	pause := 5 * time.Millisecond
	for {
		o := classifyAdmissionProbe(r.dryRunAdmissionProbe(ctx, kind), admissionProbeWebhook(kind), idle.host)
		switch {
		case o.final:
			return o.result(), nil
		case want(o):
			return trustResult{}, &o
		case time.Now().After(deadline):
			return trustResult{trustInconclusive, fmt.Sprintf("the API server did not load the admission probe's configuration within %s (last answer: %s)", trustProbeLoadTimeout, o.message)}, nil
		}
		select {
		case <-ctx.Done():
			return trustResult{trustInconclusive, ctx.Err().Error()}, nil
		case <-time.After(pause):
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}

// dryRunAdmissionProbe dry-run creates a TrustProbe that only the probe
// configuration of kind matches.
func (r *WebhookInstallReconciler) dryRunAdmissionProbe(ctx context.Context, kind admissionKind) error {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(v1alpha1.GroupVersion.Group + "/" + admissionProbeVersion)
	obj.SetKind(trustProbeKind)
	obj.SetGenerateName("hookwright-")
	obj.SetLabels(map[string]string{admissionProbeLabel: admissionProbeLabelValue(kind)})
	ctx, cancel := context.WithTimeout(ctx, trustProbeCallTimeout)
	defer cancel()
	return r.Client.Create(ctx, obj, client.DryRunAll)
}

// classifyAdmissionProbe reads an admission probe's dry-run, with the
// classifier of admission verification (classifyAdmissionError): an
// answer of the probe's webhook proves trust, an x509 error disproves it.
// No error at all is an answer too once a probe configuration is loaded
// (the webhook allowed the TrustProbe); before, it is no answer of
// anyone's, and nothing the caller waits for (host is empty, and
// awaitAdmissionProbe waits for the idle host first).
func classifyAdmissionProbe(err error, webhook, idleHost string) probeOutcome {
	if err == nil {
		return probeOutcome{answered: true}
	}
	msg := err.Error()
	c := classifyAdmissionError(msg, webhook)
	switch {
	case c.postURL != "":
		host := c.postURL
		if u, perr := url.Parse(c.postURL); perr == nil {
			host = u.Host
		}
		o := probeOutcome{host: host, verdict: trustUnreachable, message: c.cause}
		if host != idleHost && c.reason == v1alpha1.ReasonWebhookUntrusted {
			o.verdict = trustUntrusted
		}
		return o
	case c.ours && c.trusted:
		return probeOutcome{answered: true, message: "the webhook answered: " + msg}
	case c.ours || admissionDenied.MatchString(msg):
		// Not an answer about trust, or another webhook's denial (a
		// webhook matching every resource): asking again would not help.
		return probeOutcome{verdict: trustInconclusive, message: msg, final: true}
	case apierrors.IsForbidden(err):
		return probeOutcome{verdict: trustUnavailable, message: msg, final: true}
	case apierrors.IsNotFound(err):
		return probeOutcome{verdict: trustUnavailable, message: "the TrustProbe resource is not served: " + msg, final: true}
	case apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || strings.Contains(msg, "context deadline exceeded"):
		return probeOutcome{verdict: trustUnreachable, message: "no answer in time: " + msg, final: true}
	}
	return probeOutcome{verdict: trustInconclusive, message: msg, final: true}
}

// admissionCall is what an API server error says about one admission
// webhook (classifyAdmissionError).
type admissionCall struct {
	// ours: the message is about the webhook asked about (by name).
	ours bool
	// trusted: the webhook answered (a denial, a 404, an error status or
	// an unreadable review): the API server trusted its certificate.
	trusted bool
	// denied: the webhook's own denial.
	denied bool
	// reason: WebhookUntrusted, WebhookUnreachable, WebhookPathNotFound or
	// v1alpha1.ReasonWebhookErrored when the call failed; "" for a denial, or for
	// a message not about the webhook.
	reason string
	// postURL and cause: a call that failed before any answer,
	// `Post "<url>": <cause>`.
	postURL, cause string
}

// The API server reports an admission webhook's failure as
// `failed calling webhook "<name>": <reason>`, wrapped in an internal
// error; a call that got no answer as `failed to call webhook: Post
// "<url>": <error>` (the transport's url.Error), a 404 with the REST
// client's message. A webhook's denial is `admission webhook "<name>"
// denied the request: <message>` (or `... without explanation`), and a
// webhook with side effects is `admission webhook "<name>" does not
// support dry run` (k8s.io/apiserver admission/plugin/webhook).
var (
	admissionCallFailed = regexp.MustCompile(`failed calling webhook "([^"]*)": (.*)`)
	admissionPostFailed = regexp.MustCompile(`^failed to call webhook: Post "([^"]*)": (.*)`)
	admissionDenied     = regexp.MustCompile(`admission webhook "([^"]*)" denied the request`)
	admissionNoDryRun   = regexp.MustCompile(`admission webhook "([^"]*)" does not support dry run`)
)

// classifyAdmissionError tells, from the API server's error message, what
// happened to the call to the admission webhook named webhook. Another
// webhook's denial or failure, a ValidatingAdmissionPolicy's denial, RBAC
// or a rejected object are not about it: ours is false, and nothing is
// proven.
func classifyAdmissionError(msg, webhook string) admissionCall {
	if m := admissionCallFailed.FindStringSubmatch(msg); m != nil {
		if m[1] != webhook {
			return admissionCall{}
		}
		if p := admissionPostFailed.FindStringSubmatch(m[2]); p != nil {
			c := admissionCall{ours: true, reason: v1alpha1.ReasonWebhookUnreachable, postURL: p[1], cause: p[2]}
			if strings.Contains(p[2], "x509: ") {
				c.reason = v1alpha1.ReasonWebhookUntrusted
			}
			return c
		}
		if strings.Contains(m[2], "the server could not find the requested resource") {
			return admissionCall{ours: true, trusted: true, reason: v1alpha1.ReasonWebhookPathNotFound}
		}
		return admissionCall{ours: true, trusted: true, reason: v1alpha1.ReasonWebhookErrored}
	}
	if m := admissionDenied.FindStringSubmatch(msg); m != nil {
		return admissionCall{ours: m[1] == webhook, trusted: m[1] == webhook, denied: m[1] == webhook}
	}
	if m := admissionNoDryRun.FindStringSubmatch(msg); m != nil && m[1] == webhook {
		return admissionCall{ours: true}
	}
	return admissionCall{}
}
