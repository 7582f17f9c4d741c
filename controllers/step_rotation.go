package controllers

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/controllers/rotation"
)

// execute carries out the planner's action for one Service, then records
// the Service's certificates for the later steps.
func (r *WebhookInstallReconciler) execute(ctx context.Context, s *installState, service string, o rotation.Observed, action rotation.Action) error {
	rolledOut := o.RolledOut
	switch action.Kind {
	case rotation.IssueInitial:
		ca, err := certs.NewCA(service+"."+s.install.Namespace+"-ca", o.Policy.KeyAlgorithm, o.Policy.CALifetime, s.now)
		if err != nil {
			return err
		}
		record := s.rotationRecord(service, v1alpha1.RotationCA, action, fingerprintOf(o.Active), ca.Cert)
		if err := r.apply(ctx, desired.CASecret(s.install, service, desired.CAState{Active: ca.Pair, Rotation: s.provenance(record, action)})); err != nil {
			return err
		}
		s.startRotation(record)
		o.Active = ca
		fallthrough
	case rotation.IssueServing:
		if err := r.issueServing(ctx, s, service, &o, action); err != nil {
			return err
		}
		rolledOut = false
	case rotation.StartCARotation:
		next, err := certs.NewCA(service+"."+s.install.Namespace+"-ca", o.Policy.KeyAlgorithm, o.Policy.CALifetime, s.now)
		if err != nil {
			return err
		}
		record := s.rotationRecord(service, v1alpha1.RotationCA, action, o.Active.Cert, next.Cert)
		secret := desired.CASecret(s.install, service, desired.CAState{Active: o.Active.Pair, Next: &next.Pair, Rotation: s.provenance(record, action)})
		// Publishing the new CA: its caBundle writes schedule the next
		// step, and no echo of this pass's wakes one (own_echo.go).
		written := r.echoes.writing(echoSecret, secret, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(s.install)})
		err = r.apply(ctx, secret)
		written(err)
		if err != nil {
			return err
		}
		s.startRotation(record)
		o.Next = next
	case rotation.Promote:
		if !r.loadedGate(ctx, s, service, o, "promote", "waiting to promote the new CA") {
			break
		}
		old := o.Active
		previous := append(slices.Clone(o.Previous), old.Cert)
		state := desired.CAState{Active: o.Next.Pair, Previous: certs.Bundle(previous...), PruneAt: s.now.Add(o.Overlap), Rotation: s.stored[service].caAnnotation}
		if err := r.apply(ctx, desired.CASecret(s.install, service, state)); err != nil {
			return err
		}
		o.Active, o.Next, o.Previous, o.PruneAt = o.Next, nil, previous, state.PruneAt
		if err := r.issueServing(ctx, s, service, &o, movedToActive(o)); err != nil {
			return err
		}
		rolledOut = false
		s.retryWithin(o.Overlap)
	case rotation.KeepTrust:
		if err := r.keepTrust(ctx, s, service, &o, action); err != nil {
			return err
		}
		if o.Serving == nil || len(o.Serving.CertPEM) == 0 || parseFails(o.Serving.CertPEM) {
			// Nothing mounted to keep serving: issue from the stored CA now.
			if err := r.issueServing(ctx, s, service, &o, action); err != nil {
				return err
			}
			rolledOut = false
		}
	case rotation.MoveServing:
		if !r.loadedGate(ctx, s, service, o, "move", "waiting to move the serving certificate to the active CA") {
			break
		}
		if err := r.issueServing(ctx, s, service, &o, movedToActive(o)); err != nil {
			return err
		}
		rolledOut = false
		s.retryWithin(max(o.PruneAt.Sub(s.now), rotation.SettleTime))
	case rotation.Prune:
		if !r.pruneGate(ctx, s, service, o) {
			break
		}
		if err := r.apply(ctx, desired.CASecret(s.install, service, desired.CAState{Active: o.Active.Pair, Rotation: s.stored[service].caAnnotation})); err != nil {
			return err
		}
		o.Previous = nil
	case rotation.Wait, rotation.Nothing:
		if !action.DueAt.IsZero() {
			s.retryWithin(max(action.DueAt.Sub(s.now), time.Millisecond))
		}
		if action.Kind == rotation.Wait {
			s.rotationNote(service, action.Message)
		}
	}
	servingCert, err := certs.ParseCert(o.Serving.CertPEM)
	if err != nil {
		return fmt.Errorf("parsing the serving certificate: %w", err)
	}
	s.services[service] = &serviceCerts{
		secretName: desired.ServingSecretName(service),
		ca:         o.Active, next: o.Next, previous: o.Previous,
		servingPEM: o.Serving.CertPEM,
		rotateAt:   earliest(o.Policy.RenewAt(o.Active.Cert), o.Policy.RenewAt(servingCert)),
		rolledOut:  rolledOut,
	}
	return nil
}

// keepTrust carries out rotation.KeepTrust: the CA Secret lost the CA the
// serving certificate chains to (deleted, damaged, overwritten). The CAs
// the CRDs trust now are stored as previous, beside the stored CA or a new
// one, so the caBundle keeps them until the pods serve the stored CA's
// certificate and a Prune proves it; the serving certificate stays until
// MoveServing.
func (r *WebhookInstallReconciler) keepTrust(ctx context.Context, s *installState, service string, o *rotation.Observed, action rotation.Action) error {
	annotation := s.stored[service].caAnnotation
	state := desired.CAState{Previous: certs.Bundle(append(slices.Clone(o.Previous), action.Keep...)...), PruneAt: s.now.Add(rotation.SettleTime + o.Overlap)}
	var record *v1alpha1.RotationRecord
	if o.Active == nil {
		ca, err := certs.NewCA(service+"."+s.install.Namespace+"-ca", o.Policy.KeyAlgorithm, o.Policy.CALifetime, s.now)
		if err != nil {
			return err
		}
		rec := s.rotationRecord(service, v1alpha1.RotationCA, action, action.Keep[0], ca.Cert)
		record, annotation = &rec, s.provenance(rec, action)
		o.Active, o.Next = ca, nil
	}
	state.Active, state.Rotation = o.Active.Pair, annotation
	if o.Next != nil {
		state.Next = &o.Next.Pair
	}
	if err := r.apply(ctx, desired.CASecret(s.install, service, state)); err != nil {
		return err
	}
	if record != nil {
		s.startRotation(*record)
	}
	o.Previous, o.PruneAt = append(o.Previous, action.Keep...), state.PruneAt
	r.Recorder.Eventf(s.install, nil, corev1.EventTypeWarning, "CATrustKept", "KeepTrust",
		"Secret %s lost the CA the webhook's serving certificate chains to (%s): kept %s trusted in the caBundle of service %s until its pods serve a certificate of CA %s",
		desired.CASecretName(service), action.Reason, fingerprints(action.Keep), service, certs.Fingerprint(o.Active.Cert))
	s.rotationNote(service, action.Message)
	s.retryWithin(rotation.SettleTime)
	return nil
}

// movedToActive is the serving rotation that moves the serving
// certificate to a new active CA (promotion, or after KeepTrust).
func movedToActive(o rotation.Observed) rotation.Action {
	return rotation.Action{Reason: reasonCARotation, Message: "serving certificate moved to the new CA " + certs.Fingerprint(o.Active.Cert)}
}

func parseFails(pemBytes []byte) bool {
	_, err := certs.ParseCert(pemBytes)
	return err != nil
}

func fingerprints(cas []*x509.Certificate) string {
	fps := make([]string, 0, len(cas))
	for _, c := range cas {
		fps = append(fps, certs.Fingerprint(c))
	}
	return strings.Join(fps, ", ")
}

// issueServing issues a serving certificate from o.Active and stores it.
func (r *WebhookInstallReconciler) issueServing(ctx context.Context, s *installState, service string, o *rotation.Observed, action rotation.Action) error {
	pair, err := o.Active.IssueServing(o.DNSNames, o.Policy.KeyAlgorithm, o.Policy.ServingLifetime, s.now)
	if err != nil {
		return err
	}
	cert, _ := certs.ParseCert(pair.CertPEM)
	var old *x509.Certificate
	if o.Serving != nil {
		old, _ = certs.ParseCert(o.Serving.CertPEM)
	}
	record := s.rotationRecord(service, v1alpha1.RotationServing, action, old, cert)
	if err := r.apply(ctx, desired.ServingSecret(s.install, service, o.Active.Pair.CertPEM, pair, s.provenance(record, action))); err != nil {
		return err
	}
	s.startRotation(record)
	o.Serving = &pair
	s.issuedCerts = true
	return nil
}

// loadedGate is the proof before a serving certificate moves to a new CA
// (Promote, MoveServing): that the API server loaded the caBundle that
// trusts it, wherever the install writes it. A trust probe written after
// every caBundle write answers through its own new configuration only
// once the API server has applied every earlier write of the CRDs
// (trustprobe.go) or, for each kind of admission configuration the
// Service's webhooks are registered in, of that kind (admission_probe.go);
// the probe's caBundle is the current one, so the answer also proves the
// pods are trusted now. Before the probes, the install's admission
// configurations are read live: each registered webhook of the Service
// must carry every CA of the bundle (the planner's view of them may come
// from a cache). A timer alone (rotation.SettleTime, kept as a floor)
// proves nothing, and a read through the install's CRDs succeeds through
// the old caBundle too, unless another probe has already proven the new
// one loaded (trustedBehindBarrier).
func (r *WebhookInstallReconciler) loadedGate(ctx context.Context, s *installState, service string, o rotation.Observed, gate, waiting string) bool {
	bundle := rotation.Bundle(o.Active, o.Next, o.Previous...)
	if lacking, err := r.admissionLacking(ctx, s, service, bundle); err != nil || lacking != "" {
		if err != nil {
			lacking = err.Error()
		}
		s.retryWithin(rotation.SettleTime)
		s.rotationNote(service, fmt.Sprintf("%s: %s", waiting, lacking))
		return false
	}
	res, spared := r.trustedBehindBarrier(ctx, s, service, bundle, gate)
	if !spared {
		res = r.probeService(ctx, s, service, bundle, gate)
	}
	switch res.verdict {
	case trustProven:
		return true
	case trustUnavailable:
		return r.fallbackGate(ctx, s, service, res, waiting)
	}
	s.retryWithin(rotation.SettleTime)
	s.rotationNote(service, fmt.Sprintf("%s: %s", waiting, res.message))
	return false
}

// trustedBehindBarrier is loadedGate without a probe of the CRDs, when
// another probe already proved that the API server loaded this Service's
// caBundle writes (load_barrier.go): every CRD of the Service carries
// bundle as Hookwright last wrote it, before a probe the API server has
// answered through, and a conversion through each distinct port and path
// reached the pods and trusted them. The admission webhooks are probed
// as ever (the CRD barrier says nothing of their configurations). spared
// is false when the barrier does not cover a CRD, or a read through it
// did not prove trust: the probe then decides, and says why.
func (r *WebhookInstallReconciler) trustedBehindBarrier(ctx context.Context, s *installState, service string, bundle []byte, gate string) (res trustResult, spared bool) {
	for _, c := range s.crds {
		if c.webhook.Service != service {
			continue
		}
		want := desired.Conversion(s.install.Namespace, service, c.definition, bundle)
		if c.crd == nil || !conversionEqual(c.crd.Spec.Conversion, want) || !loadedByBarrier(&crdLoadBarrier, c.crd) {
			return trustResult{}, false
		}
	}
	endpoints := conversionEndpoints(s, service, bundle)
	if len(endpoints) == 0 {
		return trustResult{}, false
	}
	for _, e := range endpoints {
		c := e.crd
		version := otherServedVersion(c.crd)
		if version == "" {
			return trustResult{}, false
		}
		p := r.reprobeConversion(ctx, s.install, c.crd, version, "")
		verificationsTotal.WithLabelValues(p.result()).Inc()
		if !p.trusted {
			return trustResult{}, false
		}
	}
	trustProbesSpared.WithLabelValues(gate).Inc()
	return r.probeAdmissionService(ctx, s, service, bundle, gate), true
}

// pruneGate is the proof before the CAs being retired leave the caBundle:
// the API server trusts what the pods serve through the active CA alone.
// The trust probe asks it with that caBundle on a CRD no one reads, so a
// pod that serves the old chain (a webhook that ignores the certificate it
// mounts) fails the probe and no read: the old CAs stay, the rotation
// holds, the CertificatesReady condition and a CARotationHeld Event say
// why, and the probe is tried again with a growing pause.
func (r *WebhookInstallReconciler) pruneGate(ctx context.Context, s *installState, service string, o rotation.Observed) bool {
	if !slices.ContainsFunc(o.Previous, func(c *x509.Certificate) bool { return s.now.Before(c.NotAfter) }) {
		return true // every CA being retired has expired: keeping it helps no read
	}
	key := string(s.install.UID) + "/" + service + "/" + certs.Fingerprint(o.Active.Cert)
	if h, held := pruneHolds.Load(key); held && s.now.Before(h.(pruneHold).retryAt) {
		h := h.(pruneHold)
		s.rotationNote(service, h.note)
		s.retryWithin(h.retryAt.Sub(s.now))
		return false
	}
	res := r.probeService(ctx, s, service, rotation.Bundle(o.Active, nil), "prune")
	switch res.verdict {
	case trustProven:
		pruneHolds.Delete(key)
		return true
	case trustUnavailable:
		return r.fallbackGate(ctx, s, service, res, "waiting to remove the old CA")
	case trustUntrusted:
		attempts := 1
		if h, held := pruneHolds.Load(key); held {
			attempts = h.(pruneHold).attempts + 1
		}
		pause := min(pruneHeldRetry<<(attempts-1), pruneHeldMaxRetry)
		note := fmt.Sprintf("held: the API server does not trust what the pods of service %s serve through the new CA %s alone (%s); "+
			"a pod serves a certificate other than the one Hookwright mounts from Secret %s, so the old CA %s stays in the caBundle. Checked %d time(s); next check in %s",
			service, certs.Fingerprint(o.Active.Cert), res.message, desired.ServingSecretName(service), fingerprints(o.Previous), attempts, pause)
		pruneHolds.Store(key, pruneHold{attempts: attempts, retryAt: s.now.Add(pause), note: note})
		r.Recorder.Eventf(s.install, nil, corev1.EventTypeWarning, "CARotationHeld", "Prune",
			"Kept the old CA %s trusted for service %s: the API server does not trust what its pods serve through the new CA %s alone (%s). "+
				"Make every pod serve the certificate Hookwright mounts (Secret %s); the rotation completes once they do. Next check in %s",
			fingerprints(o.Previous), service, certs.Fingerprint(o.Active.Cert), res.message, desired.ServingSecretName(service), pause)
		s.rotationNote(service, note)
		s.retryWithin(pause)
		return false
	}
	s.retryWithin(rotation.SettleTime)
	s.rotationNote(service, "waiting to remove the old CA: "+res.message)
	return false
}

// A prune whose proof failed is tried again after pruneHeldRetry, twice as
// long after each failure, up to pruneHeldMaxRetry.
const (
	pruneHeldRetry    = 5 * time.Second
	pruneHeldMaxRetry = 5 * time.Minute
)

// pruneHolds remembers, per install UID, Service and new CA, a prune whose proof
// failed, so that passes in between do not probe again. A restarted
// operator probes at once.
var pruneHolds sync.Map // string -> pruneHold

type pruneHold struct {
	attempts int
	retryAt  time.Time
	note     string
}

// probeService probes, with bundle, every distinct port and path through
// which the Service's CRDs convert, then its registered admission webhooks
// (probeAdmissionService).
func (r *WebhookInstallReconciler) probeService(ctx context.Context, s *installState, service string, bundle []byte, gate string) trustResult {
	if res := r.probeCRDs(ctx, s, service, bundle, gate); res.verdict != trustProven {
		return res
	}
	return r.probeAdmissionService(ctx, s, service, bundle, gate)
}

// probeCRDs probes, with bundle, every distinct port and path through
// which the Service's CRDs convert.
func (r *WebhookInstallReconciler) probeCRDs(ctx context.Context, s *installState, service string, bundle []byte, gate string) trustResult {
	for _, e := range conversionEndpoints(s, service, bundle) {
		res := r.probeTrust(ctx, e.target)
		trustProbesTotal.WithLabelValues(gate, string(res.verdict)).Inc()
		if res.verdict == trustInconclusive {
			// The gate tries again shortly; the log says why it could not
			// probe (a busy pool, a configuration the API server was slow
			// to load, an API error), which the status does not keep.
			ctrl.LoggerFrom(ctx).Info("Trust probe inconclusive; the rotation gate tries again shortly", "service", service, "gate", gate, "reason", res.message)
		}
		if res.verdict != trustProven {
			return res
		}
	}
	return trustResult{verdict: trustProven}
}

// conversionEndpoint is one CRD of a Service standing for every CRD that
// converts through the same port and path, and the probe target of that
// endpoint with a given caBundle.
type conversionEndpoint struct {
	crd    *crdState
	target probeTarget
}

// conversionEndpoints lists the distinct ports and paths through which
// the Service's CRDs convert, with bundle: what a gate must prove trusted.
func conversionEndpoints(s *installState, service string, bundle []byte) []conversionEndpoint {
	var out []conversionEndpoint
	seen := map[string]bool{}
	for _, c := range s.crds {
		if c.webhook.Service != service {
			continue
		}
		target := newProbeTarget(desired.Conversion(s.install.Namespace, service, c.definition, bundle))
		key := target.host + ptr.Deref(target.conversion.Webhook.ClientConfig.Service.Path, "")
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, conversionEndpoint{crd: c, target: target})
	}
	return out
}

// fallbackGate is the gate without the trust probe (its CRD is missing or
// RBAC forbids it): a read through the install's own CRDs, and a dry run
// through each admission webhook of the Service, which prove the pods are
// trusted now, not that the API server loaded the new caBundle nor that
// the pods serve the new chain. The status says so.
func (r *WebhookInstallReconciler) fallbackGate(ctx context.Context, s *installState, service string, res trustResult, waiting string) bool {
	ctrl.LoggerFrom(ctx).Info("Trust probe unavailable: the rotation relies on a read through the install's CRDs and dry runs through its admission webhooks", "service", service, "reason", res.message)
	err := r.verifyService(ctx, s, service)
	if err == nil {
		err = r.verifyAdmissionService(ctx, s, service)
	}
	if err != nil {
		s.retryWithin(rotation.SettleTime)
		s.rotationNote(service, fmt.Sprintf("%s: %v (trust probe unavailable: %s)", waiting, err, res.message))
		return false
	}
	return true
}

// verifyService converts through the API server for every CRD of service.
func (r *WebhookInstallReconciler) verifyService(ctx context.Context, s *installState, service string) error {
	for _, c := range s.crds {
		if c.webhook.Service != service || c.crd == nil {
			continue
		}
		version := otherServedVersion(c.crd)
		if version == "" {
			continue
		}
		verified, _, err := r.convertThroughAPIServer(ctx, s.install, c.crd, version)
		verificationsTotal.WithLabelValues(verificationResult(verified, err)).Inc()
		var forbidden *verifyForbiddenError
		if errors.As(err, &forbidden) {
			continue // nothing to read with: the rotation's settle time has to do
		}
		if err != nil {
			return fmt.Errorf("CRD %s: %w", c.name, err)
		}
	}
	return nil
}

// startRotation adds an InProgress entry to the audit trail (an Event
// says so); computeStatus completes it once the certificate serves.
func (s *installState) startRotation(record v1alpha1.RotationRecord) {
	s.rotations = append(s.rotations, record)
}

// provenance is the AnnotationRotation value stored with a rotation's
// certificate: the record, and the manual request if it carries one out.
func (s *installState) provenance(record v1alpha1.RotationRecord, action rotation.Action) string {
	p := desired.RotationProvenance{Record: record}
	if action.Reason == rotation.ReasonManual {
		p.Request = s.install.Annotations[v1alpha1.AnnotationRotate]
	}
	return desired.EncodeRotation(p)
}

// rotationRecord is the InProgress audit record of a rotation.
func (s *installState) rotationRecord(service string, kind v1alpha1.RotationKind, action rotation.Action, old, issued *x509.Certificate) v1alpha1.RotationRecord {
	record := v1alpha1.RotationRecord{
		Service: service, Kind: kind, Reason: action.Reason, Message: action.Message,
		Started: metav1.Time{Time: s.now.Truncate(time.Second)}, NewFingerprint: certs.Fingerprint(issued),
		Outcome: v1alpha1.RotationInProgress,
	}
	if old != nil {
		record.OldFingerprint = certs.Fingerprint(old)
	}
	return record
}

func (s *installState) rotationNote(service, message string) {
	if s.rotationNotes == nil {
		s.rotationNotes = map[string]string{}
	}
	s.rotationNotes[service] = message
}

func fingerprintOf(ca *certs.CA) *x509.Certificate {
	if ca == nil {
		return nil
	}
	return ca.Cert
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// probeAdmissionService probes, with bundle, the Service's admission
// webhooks that the install's configurations register calling it: through
// the probe configuration of each one's kind (each kind is loaded through
// its own watch, so each needs its own barrier), once per kind, port and
// path. A webhook not registered yet is called by no one, and is
// registered with the Service's whole bundle.
func (r *WebhookInstallReconciler) probeAdmissionService(ctx context.Context, s *installState, service string, bundle []byte, gate string) trustResult {
	seen := map[string]bool{}
	for _, a := range s.admissionOfService(service) {
		if a.liveCABundle(s.install.Namespace) == nil {
			continue
		}
		cc := a.clientConfigWith(s.install.Namespace, bundle)
		target := newAdmissionProbeTarget(a.kind, cc, a.definition.AdmissionReviewVersions)
		key := string(a.kind) + "/" + target.host + ptr.Deref(cc.Service.Path, "/")
		if seen[key] {
			continue
		}
		seen[key] = true
		res := r.probeAdmissionTrust(ctx, target)
		trustProbesTotal.WithLabelValues(gate, string(res.verdict)).Inc()
		if res.verdict != trustProven {
			res.message = fmt.Sprintf("admission webhook %s: %s", a.name, res.message)
			return res
		}
	}
	return trustResult{verdict: trustProven}
}

// admissionLacking reads the install's admission configurations live and
// says which registered webhooks of service do not carry every CA of
// bundle in their caBundle yet ("" when all do).
func (r *WebhookInstallReconciler) admissionLacking(ctx context.Context, s *installState, service string, bundle []byte) (string, error) {
	webhooks := s.admissionOfService(service)
	if len(webhooks) == 0 {
		return "", nil
	}
	cas, err := certs.ParseCerts(bundle)
	if err != nil {
		return "", err
	}
	configs := map[admissionKind]*admissionConfig{}
	var lacking []string
	for _, a := range webhooks {
		cfg, read := configs[a.kind]
		if !read {
			live := newAdmissionObject(a.kind)
			if err := r.APIReader.Get(ctx, client.ObjectKey{Name: a.configName}, live); client.IgnoreNotFound(err) != nil {
				return "", fmt.Errorf("reading %s %s: %w", configKind(a.kind), a.configName, err)
			} else if err == nil && ownedBy(live, s.install) {
				cfg = &admissionConfig{kind: a.kind, name: a.configName, live: live, ours: true}
			}
			configs[a.kind] = cfg
		}
		if missing := lackingCAs(cfg, a, s.install.Namespace, cas); len(missing) > 0 {
			lacking = append(lacking, fmt.Sprintf("webhook %s of %s %s does not trust CA %s yet", a.name, configKind(a.kind), a.configName, fingerprints(missing)))
		}
	}
	return strings.Join(lacking, "; "), nil
}

// lackingCAs are the CAs of cas that a's entry in cfg (live) does not
// trust; none when cfg does not register a calling its Service.
func lackingCAs(cfg *admissionConfig, a *admissionState, namespace string, cas []*x509.Certificate) []*x509.Certificate {
	if cfg == nil {
		return nil
	}
	cc := cfg.clientConfig(a.name)
	if cc == nil || cc.Service == nil || cc.Service.Namespace != namespace || cc.Service.Name != a.webhook.Service {
		return nil
	}
	var missing []*x509.Certificate
	for _, ca := range cas {
		if !certs.BundleContains(cc.CABundle, ca) {
			missing = append(missing, ca)
		}
	}
	return missing
}
