package controllers

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// The trust probe: a check, through the API server, that fails when the
// API server does not trust what a webhook Service's pods serve under a
// given caBundle, without changing the caBundle any reader uses.
//
// Hookwright ships CRDs of its own, trustprobes.operators.hookwright.dev
// and four like it (config/crd, probe_pool.go), that no one reads. To
// probe, it points one CRD's conversion at the webhook Service (same port and path as the install's
// CRDs) with the caBundle to test, and dry-run creates a TrustProbe at a
// version that is not the storage version: the API server converts it
// through the webhook, verifying the pod's serving chain against that
// caBundle alone and the name <service>.<namespace>.svc, over its own
// network path, exactly as for the install's CRDs. Any answer of the
// webhook (a conversion, a refusal, a 404) proves trust; an x509 error
// proves the contrary. The webhook sees one conversion request of kind
// TrustProbe, which it may refuse.
//
// The API server loads a CRD change asynchronously, so an answer right
// after the write may come through the previous configuration. The probe
// therefore reads answers only once the API server has answered through a
// later CRD write: a barrier round's, which points the barrier CRD at a
// Service that does not exist under a new name and waits for an error
// naming it (probe_barrier.go), or another probe's.
//
// That wait is a barrier. The API server applies CRD changes in the
// order of one watch, and drops a CRD's cached conversion configuration
// when it applies a change to it; so once it answers through a probe
// CRD's new configuration, it has applied every CRD write made before,
// the probe's own and the install's caBundle writes included. A CA
// rotation uses that before it moves the serving certificate to a new CA
// (see step_rotation.go), and every probe records it for the rotations of
// other installs (load_barrier.go). With several API servers behind a
// load balancer the proof holds for the one that answered; the settle
// time (rotation.SettleTime) stays as a floor.
//
// A probe holds its CRD until it ends, so probes run one at a time on each
// CRD of the pool, as many at once as it has CRDs (one process probes:
// only the leader reconciles). The barrier holds for each: every probe CRD
// is loaded through the same watch. RBAC: patch on CRDs (as for the
// install's CRDs) and create on each probe resource (rbac.go).
//
// Admission configurations (admission_probe.go). The API server loads
// ValidatingWebhookConfigurations and MutatingWebhookConfigurations
// through one watch per kind, not the CRDs' watch, so the CRD probe's
// barrier says nothing about them. Hookwright keeps one probe
// configuration of each kind, both named hookwright-trust-probe, each with
// one webhook (validating. and mutating.trust-probe.operators.hookwright.dev)
// whose only rule matches CREATE of trustprobes.operators.hookwright.dev
// at the storage version v1 (matchPolicy Exact, scope Cluster), and whose
// objectSelector requires the label operators.hookwright.dev/trust-probe
// with its kind as the value: it can only ever see the TrustProbes
// Hookwright dry-run creates with that label, which are never stored (its
// RBAC grants create only, and creates only dry runs) and which the
// conversion probe's unlabelled v2 TrustProbes never match. sideEffects
// None (the API server calls it on a dry run), failurePolicy Fail (a
// failed call shows), timeoutSeconds 5. The probe is the CRD probe's with
// that configuration in the CRD's place: point it at the idle Service,
// wait until the API server answers naming it, point it at the install's
// Service (its path, port and review versions) with the caBundle under
// test, and dry-run create a labelled TrustProbe at v1 (no conversion
// involved): any answer of the webhook (allowed, denied, 404, an error
// status) proves trust, an x509 error the contrary. The wait through the
// probe's new configuration is the barrier: that kind's watch delivers in
// resourceVersion order, so the API server has loaded every earlier write
// of that kind, the install's configuration included. Before promoting, a
// CA rotation also reads the install's configurations live and waits
// until each registered webhook carries the whole bundle
// (step_rotation.go, loadedGate). A webhook answering a TrustProbe review
// it does not expect proves trust all the same; a mutating webhook's patch
// applies to a dry run only. After each probe the configuration points
// back at the idle Service; if Hookwright stops mid-probe, it may stay
// pointed at an install's Service: it still sees nothing but labelled
// TrustProbes, and the next probe points it back at the idle Service. RBAC: get, create and patch on both configuration
// resources (the probe's, as the install's) and create on trustprobes.

const (
	trustProbeGroup = "operators.hookwright.dev"
	// trustProbeKind is the admission probes' resource (admission_probe.go):
	// the barrier CRD (probe_barrier.go), at its storage version.
	trustProbeKind = "TrustProbe"
	// trustProbeIdleService names no Service in Hookwright's namespace; a
	// conversion through it fails naming it, before any network call.
	trustProbeIdleService = "hookwright-trust-probe-idle"
	// trustProbeLoadTimeout bounds the wait for the API server to load a
	// configuration of the probe CRD (milliseconds on a healthy one).
	trustProbeLoadTimeout = 10 * time.Second
	// trustProbeCallTimeout bounds one dry-run: the API server waits up to
	// 30 s for a conversion webhook that accepts and never answers.
	trustProbeCallTimeout = 10 * time.Second
)

// trustProbes hands out the probe CRDs (probe_pool.go): one probe at a
// time on each.
var trustProbes = newProbePool(trustProbeCRDs)

// probeSlot lets one probe run at a time (the admission probes share one
// configuration per kind). A pass waits for it at most probeSlotWait, then
// comes back later.
type probeSlot chan struct{}

func newProbeSlot() probeSlot { return make(probeSlot, 1) }

// acquire takes the slot, or says why it could not.
func (p probeSlot) acquire(ctx context.Context) (release func(), busy *trustResult) {
	timer := time.NewTimer(probeSlotWait)
	defer timer.Stop()
	select {
	case p <- struct{}{}:
		return func() { <-p }, nil
	case <-timer.C:
		return nil, &trustResult{trustInconclusive, fmt.Sprintf("another trust probe has been running for over %s; trying again shortly", probeSlotWait)}
	case <-ctx.Done():
		return nil, &trustResult{trustInconclusive, ctx.Err().Error()}
	}
}

var trustProbesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "hookwright_trust_probes_total",
	Help: "Trust probes through the API server (through the probe CRD or the probe admission configurations), by what they gated (promote, move, prune) or verified (verify: an admission webhook with failurePolicy Ignore) and result (Trusted, Untrusted, Unreachable, Inconclusive, Unavailable).",
}, []string{"gate", "result"})

var trustProbesSpared = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "hookwright_trust_probes_spared_total",
	Help: "CRD trust probes a rotation gate (promote, move) did without, because another install's probe had proven the API server loaded the Service's caBundle writes and a conversion through the install's own CRDs then trusted the pods.",
}, []string{"gate"})

func init() {
	ctrlmetrics.Registry.MustRegister(trustProbesTotal, trustProbesSpared)
	// Alerts use increase(): the series of a held rotation exists at 0.
	trustProbesTotal.WithLabelValues("prune", string(trustUntrusted))
}

// trustVerdict is what a probe showed.
type trustVerdict string

const (
	// trustProven: the API server reached the webhook and trusted its
	// serving chain through the probed caBundle (the webhook answered).
	trustProven trustVerdict = "Trusted"
	// trustUntrusted: the API server reached the webhook and rejected its
	// serving chain (an x509 error): the probed caBundle does not trust it.
	trustUntrusted trustVerdict = "Untrusted"
	// trustUnreachable: the API server could not connect to the webhook,
	// or it did not answer in time; nothing is known about trust.
	trustUnreachable trustVerdict = "Unreachable"
	// trustInconclusive: the probe could not be made (the API server did
	// not load its configuration in time, someone else wrote the probe
	// CRD, an API error): try again.
	trustInconclusive trustVerdict = "Inconclusive"
	// trustUnavailable: the probe CRD is not installed, or RBAC forbids
	// the probe: the rotation falls back to reading through the install's
	// own CRDs.
	trustUnavailable trustVerdict = "Unavailable"
)

type trustResult struct {
	verdict trustVerdict
	message string // for the status and Events: what the API server said
}

// probeTarget is one configuration to probe: the conversion the install's
// CRDs of one Service use, with the caBundle under test.
type probeTarget struct {
	conversion *apiextensionsv1.CustomResourceConversion
	host       string // <service>.<namespace>.svc:<port>, as the API server names it in errors
}

func newProbeTarget(conv *apiextensionsv1.CustomResourceConversion) probeTarget {
	ref := conv.Webhook.ClientConfig.Service
	return probeTarget{conversion: conv, host: fmt.Sprintf("%s.%s.svc:%d", ref.Name, ref.Namespace, ptr.Deref(ref.Port, 443))}
}

// idleProbe is the probe CRD's conversion between probes: a Service that
// does not exist in Hookwright's namespace.
func (r *WebhookInstallReconciler) idleProbe() probeTarget {
	return r.idleProbeNamed(trustProbeIdleService)
}

// idleProbeNamed points at the Service name, which must not exist in
// Hookwright's namespace.
func (r *WebhookInstallReconciler) idleProbeNamed(name string) probeTarget {
	ns := r.Authority.Namespace
	if ns == "" {
		ns = "default"
	}
	return newProbeTarget(&apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: ns, Name: name, Path: ptr.To("/"), Port: ptr.To[int32](443)}},
			ConversionReviewVersions: []string{"v1"},
		},
	})
}

// probeTrust makes the API server call the webhook of target with
// target's caBundle, through a probe CRD of the pool, and says what it
// found. A probe CRD found missing is held out of the pool and the next
// one is tried.
func (r *WebhookInstallReconciler) probeTrust(ctx context.Context, target probeTarget) trustResult {
	for {
		crd, release, busy := trustProbes.acquire(ctx)
		if busy != nil {
			return *busy
		}
		res, missing := r.probeTrustOn(ctx, crd, target)
		if !missing {
			release()
			return res
		}
		trustProbes.holdOut(crd, probeCRDRecheck)
	}
}

// probeTrustOn probes target through probe CRD pc; missing: pc is not
// installed. It writes pc once, at target (not at all when pc points at
// it already), and reads answers once the API server has answered
// through a later write of a probe CRD (probe_barrier.go). When the
// barrier CRD is missing, it proves its write on pc itself
// (probeIdleFirst).
func (r *WebhookInstallReconciler) probeTrustOn(ctx context.Context, pc probeCRD, target probeTarget) (res trustResult, missing bool) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: pc.name}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return trustResult{trustUnavailable, "CRD " + pc.name + " is not installed (it ships in config/crd and the bundle)"}, true
		}
		return trustResult{trustInconclusive, fmt.Sprintf("reading CRD %s: %v", pc.name, err)}, false
	}
	// The write to prove is this probe's; or, when pc already points at
	// target (an earlier probe of it), that earlier write, loaded or not:
	// when it was another process's, a round that starts now proves it.
	written, completed, sent := crd.ResourceVersion, time.Now(), time.Time{}
	if w, ours := conversionWrites.Load(pc.name); ours && w.(conversionWrite).resourceVersion == written {
		completed = w.(conversionWrite).completed
	}
	if !conversionEqual(crd.Spec.Conversion, target.conversion) {
		sent = time.Now()
		rv, failed, ok := r.writeProbe(ctx, pc, target)
		if !ok {
			return failed, false
		}
		written, completed = rv, time.Now()
		noteConversionWrite(pc.name, written, completed)
	}
	if res, ok := probeBarrier.await(ctx, &crdLoadBarrier, completed, r.barrierRound); !ok {
		if res.verdict != trustUnavailable {
			return res, false
		}
		// The barrier CRD is missing or forbidden: prove the write here.
		return r.probeIdleFirst(ctx, pc, target, nil), false
	}
	return r.probeAnswer(ctx, pc, target, written, sent), false
}

// probeIdleFirst is the probe that proves its own write: it points pc at
// the idle Service, waits until the API server answers naming it, then
// writes target. crd is pc as read, or nil to read it.
func (r *WebhookInstallReconciler) probeIdleFirst(ctx context.Context, pc probeCRD, target probeTarget, crd *apiextensionsv1.CustomResourceDefinition) trustResult {
	idle := r.idleProbe()
	if crd == nil {
		crd = &apiextensionsv1.CustomResourceDefinition{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: pc.name}, crd); err != nil {
			return trustResult{trustInconclusive, fmt.Sprintf("reading CRD %s: %v", pc.name, err)}
		}
	}
	var idleSent time.Time
	if !conversionEqual(crd.Spec.Conversion, idle.conversion) {
		idleSent = time.Now()
		if _, res, ok := r.writeProbe(ctx, pc, idle); !ok {
			return res
		}
	}
	// Until the API server answers through idle, an answer may come from
	// an earlier probe of any Service.
	if res, o := r.awaitProbe(ctx, pc, idle, func(o probeOutcome) bool { return o.host == idle.host }); o == nil {
		return res
	}
	if !idleSent.IsZero() {
		crdLoadBarrier.prove(idleSent) // load_barrier.go
	}
	targetSent := time.Now()
	written, res, ok := r.writeProbe(ctx, pc, target)
	if !ok {
		return res
	}
	return r.probeAnswer(ctx, pc, target, written, targetSent)
}

// probeAnswer dry-runs pc, whose write of target (sent at sent, zero when
// unknown; answered with resourceVersion written) the API server has
// loaded or is about to, until the webhook of target answers or its call
// fails, and checks that nobody wrote pc meanwhile.
func (r *WebhookInstallReconciler) probeAnswer(ctx context.Context, pc probeCRD, target probeTarget, written string, sent time.Time) trustResult {
	idle := r.idleProbe()
	res, o := r.awaitProbe(ctx, pc, idle, func(o probeOutcome) bool { return o.host != idle.host && (o.answered || o.host == target.host) })
	if o == nil {
		return res
	}
	// A write by someone else in between would make the answer nobody's.
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: pc.name}, crd); err != nil {
		return trustResult{trustInconclusive, fmt.Sprintf("reading CRD %s: %v", pc.name, err)}
	}
	if crd.ResourceVersion != written {
		return trustResult{trustInconclusive, "CRD " + pc.name + " changed during the probe"}
	}
	crdLoadBarrier.prove(sent)
	return o.result()
}

// writeProbe applies target as the probe CRD's conversion and returns the
// CRD's new resourceVersion.
func (r *WebhookInstallReconciler) writeProbe(ctx context.Context, pc probeCRD, target probeTarget) (string, trustResult, bool) {
	obj := conversionApplyObject(pc.name, target.conversion)
	if err := r.apply(ctx, obj); err != nil {
		if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			return "", trustResult{trustUnavailable, err.Error()}, false
		}
		return "", trustResult{trustInconclusive, err.Error()}, false
	}
	return obj.GetResourceVersion(), trustResult{}, true
}

// awaitProbe dry-runs TrustProbes until want holds for what the API server
// answered (o non-nil), or says why it gave up (o nil).
func (r *WebhookInstallReconciler) awaitProbe(ctx context.Context, pc probeCRD, idle probeTarget, want func(probeOutcome) bool) (trustResult, *probeOutcome) {
	deadline := time.Now().Add(trustProbeLoadTimeout)
	pause := 5 * time.Millisecond
	for {
		o := classifyProbe(r.dryRunProbe(ctx, pc), idle.host)
		switch {
		case o.final:
			return o.result(), nil
		case want(o):
			return trustResult{}, &o
		case time.Now().After(deadline):
			return trustResult{trustInconclusive, fmt.Sprintf("the API server did not load the probe's configuration within %s (last answer: %s)", trustProbeLoadTimeout, o.message)}, nil
		}
		select {
		case <-ctx.Done():
			return trustResult{trustInconclusive, ctx.Err().Error()}, nil
		case <-time.After(pause):
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}

func (r *WebhookInstallReconciler) dryRunProbe(ctx context.Context, pc probeCRD) error {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(pc.apiVersion())
	obj.SetKind(pc.kind)
	obj.SetGenerateName("hookwright-")
	ctx, cancel := context.WithTimeout(ctx, trustProbeCallTimeout)
	defer cancel()
	return r.Client.Create(ctx, obj, client.DryRunAll)
}

// probeOutcome is one dry-run's answer.
type probeOutcome struct {
	answered bool   // the webhook answered: the chain was trusted
	host     string // the webhook host the API server failed to call
	verdict  trustVerdict
	message  string
	final    bool // no point in asking again now (forbidden, no CRD, API error)
}

func (o probeOutcome) result() trustResult {
	if o.answered {
		return trustResult{trustProven, o.message}
	}
	return trustResult{o.verdict, o.message}
}

// probeURL finds the webhook URL of a failed call in the API server's
// message (`conversion webhook for <gvk> failed: Post "<url>": <error>`):
// it tells which configuration of the probe CRD the API server used.
var probeURL = regexp.MustCompile(`conversion webhook for .* failed: Post "([^"]*)": (.*)`)

// classifyProbe reads a dry-run's result, with the classifier of
// verification (classifyConversionError): any answer of the webhook
// proves trust, an x509 error disproves it.
func classifyProbe(err error, idleHost string) probeOutcome {
	if err == nil {
		return probeOutcome{answered: true, message: "the webhook converted the probe"}
	}
	msg := err.Error()
	reason, trusted := classifyConversionError(msg)
	if m := probeURL.FindStringSubmatch(msg); m != nil {
		host := m[1]
		if u, perr := url.Parse(m[1]); perr == nil {
			host = u.Host
		}
		o := probeOutcome{host: host, verdict: trustUnreachable, message: m[2]}
		if host != idleHost && reason == v1alpha1.ReasonWebhookUntrusted {
			o.verdict = trustUntrusted
		}
		return o
	}
	switch {
	case trusted:
		return probeOutcome{answered: true, message: "the webhook answered: " + msg}
	case apierrors.IsForbidden(err):
		return probeOutcome{verdict: trustUnavailable, message: msg, final: true}
	case apierrors.IsNotFound(err):
		return probeOutcome{verdict: trustUnavailable, message: "the TrustProbe resource is not served: " + msg, final: true}
	case apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || strings.Contains(msg, "context deadline exceeded"):
		return probeOutcome{verdict: trustUnreachable, message: "no answer in time: " + msg, final: true}
	}
	return probeOutcome{verdict: trustInconclusive, message: msg, final: true}
}
