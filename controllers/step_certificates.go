package controllers

import (
	"context"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/controllers/rotation"
)

// Defaults of spec.certificates, repeated here for objects created before
// the API server applied them (the API defaults are the source of truth).
const (
	defaultCALifetime      = 17520 * time.Hour
	defaultServingLifetime = 2160 * time.Hour
	defaultTrustOverlap    = 10 * time.Minute
)

// policyOf turns spec.certificates into a certs.Policy and the trust overlap.
// A policy the CRD now rejects (stored before its validation had minimums:
// the API server does not re-validate unchanged objects) gets the default
// lifetimes and renewal instead, and a negative overlap the default one:
// rotation cannot honour such a policy, and a renewBefore as long as the
// lifetime would renew without end.
func policyOf(install *v1alpha1.WebhookInstall) (certs.Policy, time.Duration) {
	p, overlap := specPolicy(install)
	if p.Validate() != nil {
		p = certs.Policy{KeyAlgorithm: p.KeyAlgorithm, CALifetime: defaultCALifetime, ServingLifetime: defaultServingLifetime}
	}
	if overlap < 0 {
		overlap = defaultTrustOverlap
	}
	return p, overlap
}

func specPolicy(install *v1alpha1.WebhookInstall) (certs.Policy, time.Duration) {
	spec := install.Spec.Certificates
	p := certs.Policy{KeyAlgorithm: certs.KeyAlgorithm(spec.KeyAlgorithm), CALifetime: defaultCALifetime, ServingLifetime: defaultServingLifetime}
	if spec.CALifetime != nil {
		p.CALifetime = spec.CALifetime.Duration
	}
	if spec.ServingLifetime != nil {
		p.ServingLifetime = spec.ServingLifetime.Duration
	}
	if spec.RenewBefore != nil {
		p.RenewBefore = spec.RenewBefore.Duration
	}
	overlap := defaultTrustOverlap
	if spec.TrustOverlap != nil {
		overlap = spec.TrustOverlap.Duration
	}
	return p, overlap
}

// ensureCertificates runs, for every webhook Service, the action the
// rotation planner picks from what the cluster stores: first issuance,
// serving renewal under the same CA, or one step of an ordered CA rotation.
func (r *WebhookInstallReconciler) ensureCertificates(ctx context.Context, s *installState) error {
	policy, overlap := policyOf(s.install)
	r.refuseUnknownRotationRequest(s)
	for _, w := range s.webhooks {
		o, action, err := r.planCertificates(ctx, s, r.Client, w.Service, w.Deployment, policy, overlap)
		if err != nil {
			return err
		}
		if writes(action) || o.Active == nil || o.Serving == nil {
			// Cached reads may lag Hookwright's own last writes; acting on
			// them could issue twice. Writes are decided on live reads only,
			// and so is a Secret the cache lacks: the cache holds only
			// Hookwright's, so the live read is where one of someone else's
			// by that name is found (readSecret).
			fresh, stale, err := r.freshInstall(ctx, s)
			if err != nil || stale {
				s.stop(v1alpha1.PhaseInstalling, v1alpha1.ReasonInProgress, "waiting for the cache to catch up with the last write")
				s.retryWithin(retrySoon)
				return err
			}
			s.install = fresh
			if o, action, err = r.planCertificates(ctx, s, r.APIReader, w.Service, w.Deployment, policy, overlap); err != nil {
				return err
			}
		}
		if err := r.execute(ctx, s, w.Service, o, action); err != nil {
			return r.certificateFailed(s, w.Service, err)
		}
		// IssueInitial carries out a manual request when it replaces an
		// expired CA from scratch.
		if (action.Kind == rotation.StartCARotation || action.Kind == rotation.IssueServing || action.Kind == rotation.IssueInitial) && action.Reason == rotation.ReasonManual {
			s.handledRequest = s.install.Annotations[v1alpha1.AnnotationRotate]
		}
	}
	return nil
}

// planCertificates observes the Service through reader and asks the planner.
func (r *WebhookInstallReconciler) planCertificates(ctx context.Context, s *installState, reader client.Reader, service, deployment string, policy certs.Policy, overlap time.Duration) (rotation.Observed, rotation.Action, error) {
	o, err := r.observeCertificates(ctx, s, reader, service, deployment, policy, overlap)
	if err != nil {
		return o, rotation.Action{}, err
	}
	if request := s.install.Annotations[v1alpha1.AnnotationRotate]; s.stored[service].carried(request) {
		s.handledRequest = request // carried out before a restart lost the status write
		return o, rotation.Plan(o), nil
	}
	switch kind, reason := pendingManualRotation(s.install); kind {
	case v1alpha1.RotationCA:
		o.ManualCA = reason
	case v1alpha1.RotationServing:
		o.ManualServing = reason
	}
	return o, rotation.Plan(o), nil
}

func writes(a rotation.Action) bool {
	return a.Kind != rotation.Nothing && a.Kind != rotation.Wait
}

// freshInstall reads the install live; stale reports that the cached copy
// this pass started from is older. A pass that started from a live copy
// (s.installLive) already has one: reading it again repeated, in a CA
// rotation's first pass, the read that pass began with.
func (r *WebhookInstallReconciler) freshInstall(ctx context.Context, s *installState) (*v1alpha1.WebhookInstall, bool, error) {
	if s.installLive {
		return s.install, false, nil
	}
	fresh := &v1alpha1.WebhookInstall{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(s.install), fresh); err != nil {
		return nil, false, err
	}
	return fresh, fresh.ResourceVersion != s.install.ResourceVersion, nil
}

// observeCertificates reads the Service's CA and serving Secrets, how long
// its CRDs have trusted the next CA, and whether the Deployment rolled out.
func (r *WebhookInstallReconciler) observeCertificates(ctx context.Context, s *installState, reader client.Reader, service, deployment string, policy certs.Policy, overlap time.Duration) (rotation.Observed, error) {
	o := rotation.Observed{Now: s.now, Policy: policy, Overlap: overlap, DNSNames: certs.ServiceDNSNames(service, s.install.Namespace)}
	caSecret, err := r.readSecret(ctx, s, reader, desired.CASecretName(service))
	if err != nil {
		return o, err
	}
	o.Active, o.ActiveOK = loadActiveCA(caSecret)
	if caSecret != nil {
		if next, err := certs.LoadCA(certs.KeyPair{CertPEM: caSecret.Data[desired.NextCertKey], KeyPEM: caSecret.Data[desired.NextKeyKey]}); err == nil {
			o.Next = next
		}
		if prev, err := certs.ParseCerts(caSecret.Data[desired.PreviousCertKey]); err == nil {
			o.Previous = prev
			o.PruneAt, _ = time.Parse(time.RFC3339, caSecret.Annotations[desired.AnnotationPruneAt])
		}
	}
	servingSecret, err := r.readSecret(ctx, s, reader, desired.ServingSecretName(service))
	if err != nil {
		return o, err
	}
	o.Serving = pairOf(servingSecret)
	s.storeRotations(service, caSecret, servingSecret)
	o.Known = knownTrust(s, service)
	if o.Next != nil {
		o.NextTrustedFor = r.trustedFor(s, service, o.Next.Cert)
	}
	if o.Active != nil {
		o.ActiveTrustedFor = r.trustedFor(s, service, o.Active.Cert)
	}
	o.RolledOut, err = r.rolledOut(ctx, s.install.Namespace, deployment, o.Serving)
	return o, err
}

func loadActiveCA(secret *corev1.Secret) (*certs.CA, certs.Verdict) {
	if secret == nil {
		return nil, certs.Verdict{Reason: certs.ReasonMissing, Message: "no CA has been issued yet"}
	}
	ca, err := certs.LoadCA(*pairOf(secret))
	if err != nil {
		return nil, certs.Verdict{Reason: certs.ReasonInvalid, Message: fmt.Sprintf("stored CA is unusable: %v", err)}
	}
	return ca, certs.Verdict{}
}

// knownTrust is what the API server trusts for service now: the CAs of the
// caBundle of every CRD whose conversion calls it (live reads), and of
// every admission webhook its install's configurations register calling
// it. When the CA Secret is lost or overwritten, the planner keeps these
// (rotation.Plan, step 0). The serving Secret's ca.crt is not read:
// whoever may write that Secret could add a CA the API server never
// trusted.
func knownTrust(s *installState, service string) []*x509.Certificate {
	var known []*x509.Certificate
	for _, a := range s.admissionOfService(service) {
		if cas, err := certs.ParseCerts(a.liveCABundle(s.install.Namespace)); err == nil {
			known = append(known, cas...)
		}
	}
	for _, c := range s.crds {
		if c.webhook.Service != service || c.crd == nil {
			continue
		}
		conv := c.crd.Spec.Conversion
		if conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
			continue
		}
		ref := conv.Webhook.ClientConfig.Service
		if ref == nil || ref.Namespace != s.install.Namespace || ref.Name != service {
			continue
		}
		if cas, err := certs.ParseCerts(conv.Webhook.ClientConfig.CABundle); err == nil {
			known = append(known, cas...)
		}
	}
	return known
}

// trustedFor is how long every CRD of service, and every admission webhook
// registered calling it, has had ca in its caBundle, taken from the time
// of Hookwright's last apply on each CRD and configuration (restart-safe:
// it is stored by the API server, not remembered). managedFields keep
// whole seconds, so an apply is taken to have happened at the end of its
// second: the wait is at least SettleTime, never up to a second less. An
// admission webhook not registered yet is no caller to wait for: it is
// registered with the Service's whole bundle.
func (r *WebhookInstallReconciler) trustedFor(s *installState, service string, ca *x509.Certificate) time.Duration {
	var shortest time.Duration
	found := false
	for _, a := range s.admissionOfService(service) {
		bundle := a.liveCABundle(s.install.Namespace)
		if bundle == nil {
			continue
		}
		since := a.appliedAt()
		if !certs.BundleContains(bundle, ca) || since.IsZero() {
			return 0
		}
		if d := s.now.Sub(since); !found || d < shortest {
			shortest, found = d, true
		}
	}
	for _, c := range s.crds {
		if c.webhook.Service != service || c.crd == nil {
			continue
		}
		conv := c.crd.Spec.Conversion
		if conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil || !certs.BundleContains(conv.Webhook.ClientConfig.CABundle, ca) {
			return 0
		}
		since := appliedSince(c.crd.ManagedFields)
		if since.IsZero() {
			return 0
		}
		if d := s.now.Sub(since); !found || d < shortest {
			shortest, found = d, true
		}
	}
	if !found {
		return 0 // no CRD of the Service
	}
	// Zero means "not in every caBundle yet": an apply within the last
	// second (taken to end with its second) is in them already.
	return max(shortest, time.Nanosecond)
}

// appliedSince is when the caBundle of Hookwright's last apply to a CRD
// counts as in place, from the apply's managedFields entry (zero for none):
// the entry's time has second precision, so an apply is taken to end
// with its second.
func appliedSince(entries []metav1.ManagedFieldsEntry) time.Time {
	var since time.Time
	for _, mf := range entries {
		if mf.Manager == desired.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Time != nil {
			since = mf.Time.Time.Truncate(time.Second).Add(time.Second)
		}
	}
	return since
}

// rolledOut: every replica of the webhook Deployment runs the pod template
// that carries the current serving certificate's fingerprint.
func (r *WebhookInstallReconciler) rolledOut(ctx context.Context, namespace, name string, serving *certs.KeyPair) (bool, error) {
	if serving == nil {
		return false, nil
	}
	cert, err := certs.ParseCert(serving.CertPEM)
	if err != nil {
		return false, nil
	}
	dep := &appsv1.Deployment{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, dep); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return runsCertificate(dep, certs.Fingerprint(cert)), nil
}

// pendingManualRotation parses the rotate annotation ("ca: reason" or
// "serving: reason") unless that request was already carried out.
func pendingManualRotation(install *v1alpha1.WebhookInstall) (v1alpha1.RotationKind, string) {
	request := install.Annotations[v1alpha1.AnnotationRotate]
	if request == "" || request == install.Status.HandledRotationRequest {
		return "", ""
	}
	kind, reason, _ := strings.Cut(request, ":")
	reason = strings.TrimSpace(reason)
	if reason == "" {
		reason = "requested with the " + v1alpha1.AnnotationRotate + " annotation"
	}
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case "ca":
		return v1alpha1.RotationCA, reason
	case "serving":
		return v1alpha1.RotationServing, reason
	}
	return "", ""
}

// refuseUnknownRotationRequest answers a rotate annotation that names no
// known kind once, with a Warning Event saying what to write, and marks it
// handled so it is not reported on every pass.
func (r *WebhookInstallReconciler) refuseUnknownRotationRequest(s *installState) {
	request := s.install.Annotations[v1alpha1.AnnotationRotate]
	if request == "" || request == s.install.Status.HandledRotationRequest {
		return
	}
	if kind, _ := pendingManualRotation(s.install); kind != "" {
		return
	}
	r.Recorder.Eventf(s.install, nil, corev1.EventTypeWarning, "RotationRequestInvalid", "Rotate",
		"%s=%q names no rotation kind; nothing was rotated. Write \"ca: <reason>\" or \"serving: <reason>\"", v1alpha1.AnnotationRotate, request)
	s.handledRequest = request
}

func (r *WebhookInstallReconciler) certificateFailed(s *installState, service string, err error) error {
	s.stop(v1alpha1.PhaseFailed, v1alpha1.ReasonCertificateFailed, fmt.Sprintf("certificates of service %s: %v", service, err))
	return fmt.Errorf("certificates of service %s: %w", service, err)
}

// readSecret reads one of the install's Secrets through reader (the
// label-selected cache, or live); a missing Secret is returned as nil. A
// Secret of the install this one replaces is adopted first, so its CA
// keeps being trusted across the upgrade.
//
// A Secret missing from the cache needs no live look of its own here:
// ensureCertificates reads the Service's Secrets again live whenever one
// is missing, and that read refuses a Secret of someone else's by the
// name (the label check below). A first issuance thus reads each Secret
// live once, not three times.
func (r *WebhookInstallReconciler) readSecret(ctx context.Context, s *installState, reader client.Reader, name string) (*corev1.Secret, error) {
	namespace := s.install.Namespace
	secret := &corev1.Secret{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading secret %s/%s: %w", namespace, name, err)
	}
	if secret.Labels[desired.LabelManagedBy] != desired.ManagedByValue {
		return nil, fmt.Errorf("secret %s/%s exists and is not managed by Hookwright: rename or delete it", namespace, name)
	}
	if err := checkBelongs(s, "secret", secret); err != nil {
		return nil, err
	}
	if adopted(s, secret) {
		return secret, r.adoptSecret(ctx, s, secret)
	}
	return secret, nil
}

// adoptSecret moves a Secret of the replaced install to this one: its
// install label and controller reference, with optimistic concurrency,
// so the replaced install's cleanup (which deletes by label, with the
// resourceVersion as a precondition) can never delete it.
func (r *WebhookInstallReconciler) adoptSecret(ctx context.Context, s *installState, secret *corev1.Secret) error {
	// The cached copy may be stale; the precondition is the live version.
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
		return fmt.Errorf("reading secret %s/%s to adopt it: %w", secret.Namespace, secret.Name, err)
	}
	if !adopted(s, secret) {
		return nil
	}
	patch := client.MergeFromWithOptions(secret.DeepCopy(), client.MergeFromWithOptimisticLock{})
	secret.Labels[desired.LabelInstall] = s.install.Name
	secret.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(s.install, v1alpha1.GroupVersion.WithKind("WebhookInstall"))}
	if err := r.Client.Patch(ctx, secret, patch, client.FieldOwner(desired.FieldManager)); err != nil {
		return fmt.Errorf("adopting secret %s/%s from WebhookInstall %s: %w", secret.Namespace, secret.Name, s.install.Spec.Replaces, err)
	}
	r.Recorder.Eventf(s.install, secret, corev1.EventTypeNormal, "Adopted", "Adopt", "Adopted secret %s from WebhookInstall %s, which this install replaces", secret.Name, s.install.Spec.Replaces)
	return nil
}

func pairOf(secret *corev1.Secret) *certs.KeyPair {
	if secret == nil {
		return nil
	}
	return &certs.KeyPair{CertPEM: secret.Data[corev1.TLSCertKey], KeyPEM: secret.Data[corev1.TLSPrivateKeyKey]}
}

// storeRotations keeps the rotation records the Service's Secrets carry.
func (s *installState) storeRotations(service string, secrets ...*corev1.Secret) {
	if s.stored == nil {
		s.stored = map[string]*storedRotations{}
	}
	st := &storedRotations{}
	for i, secret := range secrets {
		if secret == nil {
			continue
		}
		value := secret.Annotations[desired.AnnotationRotation]
		if i == 0 {
			st.caAnnotation = value
		}
		if p, ok := desired.DecodeRotation(value); ok {
			st.records = append(st.records, p)
		}
	}
	s.stored[service] = st
}
