package controllers

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/rotation"
)

// verifyFailedRetry is how soon a failed verification is tried again:
// fixing a webhook or an object wakes no watch of Hookwright's.
const verifyFailedRetry = 10 * time.Second

// verifyForbiddenRetry is how often a verification that RBAC forbids is
// tried again: granting the permission wakes no watch.
const verifyForbiddenRetry = 30 * time.Second

// The first words of the CRD status message of a failure in which the
// webhook answered. Such an answer does not depend on the caBundle, so it
// stands across a caBundle rewrite (a CA rotation) until the next
// verification; the status message is where it is kept.
const (
	refusedPrefix      = "the webhook refused to convert"
	pathNotFoundPrefix = "the webhook answered 404 Not Found"
)

// verifyForbiddenError: Hookwright may not read (or dry-run create) the
// converted resource, so it cannot make the API server convert. The
// conversion is configured but unverified; the message says what to grant.
type verifyForbiddenError struct{ resource, cause string }

func (e *verifyForbiddenError) Error() string {
	return fmt.Sprintf("configured, but Hookwright may not list (or dry-run create) %s to verify it through the API server (%s). "+
		"Grant its ServiceAccount the verbs list and create on %s with a ClusterRole and ClusterRoleBinding (see the admin guide); until then certificate rotations rely on the settle time instead of a verified read",
		e.resource, e.cause, e.resource)
}

// probe is what one conversion through the API server showed. It reports
// two things: whether the API server trusts the webhook (what a
// certificate rotation waits for) and whether the conversion works (what
// the ConversionVerified condition says).
type probe struct {
	// converted: the API server converted an object through the webhook.
	converted bool
	// trusted: the API server reached the webhook and trusted its serving
	// certificate through the caBundle. Any answer of the webhook proves
	// it, a refusal or a 404 included: one object the webhook cannot
	// convert must not stall certificate renewals.
	trusted bool
	// reason, when set, is why nothing converted (a Reason constant).
	// Neither converted nor reason: nothing could exercise the webhook.
	reason string
	// message is for the CRD's status.
	message string
	// err is the API server's error, when it gave one.
	err       error
	forbidden *verifyForbiddenError
	// readStored: a stored object was read, converted from storage.
	readStored bool
}

// result is the probe's label on hookwright_conversion_verifications_total.
func (p probe) result() string {
	switch {
	case p.converted:
		return "success"
	case p.reason != "":
		return "failure"
	}
	return "unverifiable"
}

// verifyConversion proves, through the API server, that it converts
// through the webhook with the caBundle Hookwright wrote: it reads an
// object at a served version other than the storage version (or, when no
// object exists, dry-run creates one at that version); a rotation's
// passes prove trust with a dry run alone (reprobeConversion). It runs only when
// something changed since the last verification, or when the last one
// failed: an idle resync of a verified install reads and writes nothing.
func (r *WebhookInstallReconciler) verifyConversion(ctx context.Context, s *installState) error {
	for _, c := range s.crds {
		r.unconfirmed.inherit(c.name, crdStatusSince(s.install, c.name))
		// A write that changed where conversions go makes the next success
		// a first one: until the API server has loaded the write, it
		// converts through what the CRD said before.
		retargeted := c.written && !c.bundleOnly
		if c.written {
			if reason, message := answeredBefore(s.install, c.name); reason != "" {
				// The caBundle changed, not the webhook's answer: it stands
				// (trust in the new caBundle is not proven yet).
				c.state, c.verifyReason, c.message = v1alpha1.ConversionFailed, reason, message
				continue
			}
			if rotationRewrite(s, c) {
				// Verified it stays: see rotationRewrite. Not trusted yet:
				// the rotation's gates prove the new caBundle.
				c.state, c.message = v1alpha1.ConversionVerified, previousMessage(s.install, c.name)
				continue
			}
			if !r.writeWatched(ctx, s, c) {
				c.message = "configured; verification follows once the API server has loaded it"
				continue
			}
			c.written = false // as loaded as a later pass would find it: verified now
		}
		confirm := r.confirmationDue(s, c.name)
		// A confirmation is owed because the first verification may have
		// converted through the previous configuration, which a dry run
		// through the webhook now rules out. When that verification found
		// no stored object, its reads proved nothing to confirm: reading
		// again would prove only what objects stored in the seconds since
		// do, which no later moment is checked for either. So it is a dry
		// run alone, as a rotation's: two reads less per CRD of a new
		// install whose CRDs hold no object yet. Only when nothing else
		// calls for a full verification: a new spec, CA or write since.
		readNothing := confirm && r.unconfirmed.takeReadNothing(c.name)
		unchanged := !retargeted && r.stillVerified(s, c)
		if !confirm && unchanged {
			c.state, c.trusted, c.message = v1alpha1.ConversionVerified, true, previousMessage(s.install, c.name)
			continue
		}
		if !confirm && !retargeted && awaitingRollout(s, c) {
			// Verified it stays; trust is not proven this pass (see
			// awaitingRollout).
			c.state, c.message = v1alpha1.ConversionVerified, previousMessage(s.install, c.name)
			continue
		}
		version := otherServedVersion(c.crd)
		if version == "" {
			c.state, c.trusted, c.message = v1alpha1.ConversionVerified, true, "one served version: nothing to convert yet"
			continue
		}
		var p probe
		started := r.Clock.Now()
		if readNothing && unchanged || !confirm && !retargeted && verifiedThroughRotation(s, c) {
			p = r.reprobeConversion(ctx, s.install, c.crd, version, previousMessage(s.install, c.name))
		} else {
			p = r.probeConversion(ctx, s.install, c.crd, version)
		}
		c.verifyTook = r.Clock.Since(started)
		verificationsTotal.WithLabelValues(p.result()).Inc()
		c.trusted, c.message = p.trusted, p.message
		switch {
		case p.forbidden != nil:
			c.unverifiable, c.forbidden, c.message = true, true, p.forbidden.Error()
			// RBAC changes wake nothing: look again now and then.
			s.retryWithin(verifyForbiddenRetry)
		case p.converted:
			c.state = v1alpha1.ConversionVerified
			switch {
			case retargeted || !verifiedBefore(s.install, c.name):
				c.firstVerified = true
				r.unconfirmed.add(c.name, s.now)
				if !p.readStored {
					r.unconfirmed.markReadNothing(c.name)
				}
				s.retryWithin(confirmAfter)
			case confirm:
				// A confirmation that agrees writes nothing: the status
				// keeps the message of the verification it confirms, though
				// what that read may have changed since (an install whose
				// objects were stored after its first verification found
				// none; a restart confirming it rewrote its status).
				c.message = previousMessage(s.install, c.name)
			}
		case p.reason != "":
			c.state, c.verifyReason = v1alpha1.ConversionFailed, p.reason
			s.retryWithin(verifyFailedRetry)
		default:
			c.unverifiable = true
		}
	}
	// Admission webhooks are verified in the same step, after the CRDs
	// (admission_verify.go).
	return r.verifyAdmission(ctx, s)
}

// rotationRewrite: this pass wrote only the caBundle of a CRD the status
// says is verified for this spec, for a CA rotation of its Service. The
// CRD stays ConversionVerified through it: the rotation adds the new CA
// next to the one the pods serve, and removes the old one only once the
// trust probe proved the pods serve through the new one alone
// (step_rotation.go), so conversions work across the write; and the next
// pass verifies through the API server again (stillVerified is false while
// a rotation is under way). Reporting "verification follows" instead made
// ConversionVerified leave True twice per CA rotation, an alert on it fire
// on every rotation, and cost status writes (`make bench`'s storm, at 100
// installs: 534 status writes before, 448 after).
func rotationRewrite(s *installState, c *crdState) bool {
	if !c.bundleOnly || c.handover || c.driftManager != "" || !rotating(s, c.webhook.Service) {
		return false
	}
	for _, rec := range inProgressRotations(s) {
		if rec.Service == c.webhook.Service && (rec.Reason == rotation.ReasonCAExpired || rec.Reason == rotation.ReasonInitial) {
			return false // a CA issued from scratch: no ordered hand-over vouches for the write
		}
	}
	return s.install.Status.ObservedGeneration == s.install.Generation && verifiedBefore(s.install, c.name)
}

// verifiedThroughRotation: the status says verified for this generation,
// and what stillVerified would trust is in question only because a CA
// rotation of the CRD's Service is under way. The rotation changes
// certificates and caBundles, not the webhook's image nor the stored
// objects, so the pass verifies trust, with reprobeConversion.
func verifiedThroughRotation(s *installState, c *crdState) bool {
	return rotating(s, c.webhook.Service) && s.install.Status.ObservedGeneration == s.install.Generation && verifiedBefore(s.install, c.name)
}

// awaitingRollout: verifiedThroughRotation, and the Service's Deployment
// has not yet rolled the rotation's serving certificate out to every
// replica. Such a pass proves nothing a rotation waits for: the
// rotation is done only once a pass finds the rollout done and proves
// trust then (rotationDone), its gates run probes of their own, and until
// every pod serves the new certificate, a dry run would prove trust in a
// mix of old and new pods that the next pass replaces. Every rollout step
// (a pod created, ready, removed) wakes a pass, and each cost a dry run
// per CRD (`make bench`'s storm: two dry runs in each of three passes of
// a one-pod rollout; over the storm's 120 s, 1,702 dry runs of the
// installs' CRDs before this and 926 after). Through the rollout
// ConversionVerified keeps the last verification's answer, as in any pass
// with nothing to prove; a rollout that never ends leaves the old pods
// serving, trusted through the old CA the caBundle keeps until the
// rotation's prune.
func awaitingRollout(s *installState, c *crdState) bool {
	svc := s.services[c.webhook.Service]
	return svc != nil && !svc.rolledOut && verifiedThroughRotation(s, c)
}

// stillVerified: the status says verified for this generation and CA, and
// nothing was written since.
func (r *WebhookInstallReconciler) stillVerified(s *installState, c *crdState) bool {
	st := s.install.Status
	if st.ObservedGeneration != s.install.Generation || s.issuedCerts || rotating(s, c.webhook.Service) {
		return false
	}
	fingerprint := certs.Fingerprint(s.services[c.webhook.Service].ca.Cert)
	for _, svc := range st.Services {
		if svc.Name == c.webhook.Service && svc.CAFingerprint != fingerprint {
			return false
		}
	}
	return verifiedBefore(s.install, c.name)
}

func previousMessage(install *v1alpha1.WebhookInstall, crd string) string {
	for _, prev := range install.Status.ConversionCRDs {
		if prev.Name == crd {
			return prev.Message
		}
	}
	return ""
}

// answeredBefore is the reason and message of the CRD's last verification
// if the webhook answered it with a refusal or a 404; else "".
func answeredBefore(install *v1alpha1.WebhookInstall, crd string) (string, string) {
	for _, prev := range install.Status.ConversionCRDs {
		if prev.Name != crd || prev.State != v1alpha1.ConversionFailed {
			continue
		}
		switch {
		case strings.HasPrefix(prev.Message, refusedPrefix):
			return v1alpha1.ReasonConversionRefused, prev.Message
		case strings.HasPrefix(prev.Message, pathNotFoundPrefix):
			return v1alpha1.ReasonWebhookPathNotFound, prev.Message
		}
	}
	return "", ""
}

// convertThroughAPIServer is a verification for a certificate rotation's
// gate: err is set only when the API server did not reach or did not
// trust the webhook (or RBAC forbids the read, *verifyForbiddenError).
// verified also holds when the webhook answered with a refusal or a 404:
// trust is proven, and one object the webhook cannot convert must not
// stall a rotation. A rotation gate that needs more reads probeConversion.
func (r *WebhookInstallReconciler) convertThroughAPIServer(ctx context.Context, install *v1alpha1.WebhookInstall, crd *apiextensionsv1.CustomResourceDefinition, version string) (bool, string, error) {
	p := r.reprobeConversion(ctx, install, crd, version, "")
	switch {
	case p.forbidden != nil:
		return false, "", p.forbidden
	case p.converted || p.trusted:
		return true, p.message, nil
	case p.reason != "":
		return false, "", p.err
	}
	return false, p.message, nil
}

// probeConversion makes the API server convert through the webhook. It
// reads one stored object at version (the install's namespace's when one
// is stored there, else any: readStored): the API server converts it from
// the storage version, and a webhook that refuses it shows. It also
// dry-run creates an empty object at version, which the API server
// converts to the storage version through the webhook there and then: a
// LIST may be answered from the API server's watch cache of that version,
// filled through the webhook earlier, so a webhook that stopped serving
// since shows only in the dry-run. The read
// and the dry run are independent requests, so they run at once: an
// install's verification waits for the slower of them, not their sum.
func (r *WebhookInstallReconciler) probeConversion(ctx context.Context, install *v1alpha1.WebhookInstall, crd *apiextensionsv1.CustomResourceDefinition, version string) probe {
	stored := make(chan storedRead, 1)
	go func() { stored <- r.readStored(ctx, install, crd, version) }()
	err := r.dryRunAt(ctx, install, crd, version)
	return judgeProbe(ctx, install, crd, version, <-stored, err)
}

// judgeProbe says what a read of a stored object and a dry run (err its
// error) prove together.
func judgeProbe(ctx context.Context, install *v1alpha1.WebhookInstall, crd *apiextensionsv1.CustomResourceDefinition, version string, sr storedRead, err error) probe {
	if sr.failed != nil {
		return *sr.failed
	}
	read := sr.read
	if err == nil {
		if read != "" {
			return probe{converted: true, trusted: true, message: read, readStored: true}
		}
		return probe{converted: true, trusted: true, message: fmt.Sprintf("dry-run created an object at %s through the webhook (no objects exist yet)", version)}
	}
	reason, _ := classifyConversionError(err.Error())
	switch {
	case reason == v1alpha1.ReasonConversionRefused && read != "":
		// Hookwright's empty object is no stored object: the webhook
		// answered, and the stored object read converted.
		return probe{converted: true, trusted: true, message: fmt.Sprintf("%s; the webhook also answered a dry-run, refusing Hookwright's empty object (%v)", read, err), readStored: true}
	case reason == v1alpha1.ReasonConversionRefused:
		return probe{trusted: true, message: fmt.Sprintf("no %s exist yet and the webhook refused the dry-run object Hookwright made at %s (%v); "+
			"the API server reached and trusted the webhook. Verification runs again on the next change", crd.Spec.Names.Plural, version, err)}
	case reason == "" && read != "":
		// As before dry-runs: the read stands, though the API server may
		// have answered it from its watch cache.
		return probe{converted: true, trusted: true, message: fmt.Sprintf("%s (maybe from the API server's watch cache: a dry-run object that would make it call the webhook now was rejected before conversion: %v)", read, err), readStored: true}
	case reason == "" && apierrors.IsForbidden(err):
		return probe{forbidden: &verifyForbiddenError{resource: crdResource(crd), cause: err.Error()}}
	case reason == "":
		return probe{message: fmt.Sprintf("no %s exist yet and a dry-run object was rejected before conversion (%v); verification runs again on the next change", crd.Spec.Names.Plural, err)}
	}
	return failedProbe(ctx, install, crd, version, err, true)
}

// reprobeConversion is probeConversion where only trust is in question:
// a CA rotation's gates, and the passes of a rotation of a configuration
// verified for this spec (verifiedThroughRotation). A dry run that
// converts proves that the API server reached the webhook and trusted it
// through the caBundle; the read of a stored object would add what the
// webhook does with stored objects, which a rotation does not change. So
// the read follows only when the dry run did not convert (an object the
// schema rejects before conversion, an error), and with the dry run's
// answer says what it can (judgeProbe). verified is the message of a
// conversion proven by the dry run alone: the last full verification's,
// which stands ("" for a dry run's own).
//
// Before, each such pass also read twice per CRD (in the install's
// namespace, then anywhere): in a storm of 300 CA rotations of two CRDs
// each, 14 reads per rotation, and 70.5 requests per rotation in all
// against 58.7 without them.
func (r *WebhookInstallReconciler) reprobeConversion(ctx context.Context, install *v1alpha1.WebhookInstall, crd *apiextensionsv1.CustomResourceDefinition, version, verified string) probe {
	if err := r.dryRunAt(ctx, install, crd, version); err != nil {
		return judgeProbe(ctx, install, crd, version, r.readStored(ctx, install, crd, version), err)
	}
	if verified == "" {
		verified = fmt.Sprintf("dry-run created an object at %s through the webhook", version)
	}
	return probe{converted: true, trusted: true, message: verified}
}

// dryRunAt dry-run creates an empty object at version, which the API
// server converts to the storage version through the webhook.
func (r *WebhookInstallReconciler) dryRunAt(ctx context.Context, install *v1alpha1.WebhookInstall, crd *apiextensionsv1.CustomResourceDefinition, version string) error {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(crd.Spec.Group + "/" + version)
	obj.SetKind(crd.Spec.Names.Kind)
	obj.SetGenerateName("hookwright-verify-")
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		obj.SetNamespace(install.Namespace)
	}
	_, err := r.crdObjects(crd, version, install.Namespace).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// crdResource names crd's resource as RBAC does: <plural>.<group>.
func crdResource(crd *apiextensionsv1.CustomResourceDefinition) string {
	return crd.Spec.Names.Plural + "." + crd.Spec.Group
}

// storedRead is what probeConversion's read of a stored object found:
// read says what converted ("" when no object exists), failed is the
// probe's result when the read itself failed.
type storedRead struct {
	read   string
	failed *probe
}

// readStored lists one object at version. The status names an object
// only from the install's namespace, so for a namespaced CRD that is where
// the read it reports comes from whenever one is stored there; an object
// elsewhere is read as the fallback.
//
// It lists everywhere first, and lists the install's namespace only when
// that does not settle it: nothing stored anywhere settles it (no object
// to read), and so does a first object of the install's namespace (a list
// of that namespace would return the same object: both are in key order).
// What it reports is what listing the namespace first, then everywhere,
// reported; it costs one list, not two, for a CRD with no object yet, as
// a new install's CRDs often are. Over `make bench` P4's 300 new installs
// these lists, two per CRD, took 84 s of the 297 s the API server spent
// on the operator's requests.
func (r *WebhookInstallReconciler) readStored(ctx context.Context, install *v1alpha1.WebhookInstall, crd *apiextensionsv1.CustomResourceDefinition, version string) storedRead {
	everywhere, errEverywhere := r.crdObjects(crd, version, "").List(ctx, metav1.ListOptions{Limit: 1})
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	if errEverywhere == nil {
		if len(everywhere.Items) == 0 {
			return storedRead{}
		}
		if first := &everywhere.Items[0]; !namespaced || first.GetNamespace() == install.Namespace {
			return storedRead{read: readMessage(install, first, version)}
		}
	}
	if namespaced {
		ours, err := r.crdObjects(crd, version, install.Namespace).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return listFailed(ctx, install, crd, version, err, true)
		}
		if len(ours.Items) > 0 {
			return storedRead{read: readMessage(install, &ours.Items[0], version)}
		}
	}
	if errEverywhere != nil {
		return listFailed(ctx, install, crd, version, errEverywhere, false)
	}
	return storedRead{read: readMessage(install, &everywhere.Items[0], version)}
}

// readMessage says which stored object converted: by name only in the
// install's namespace (not a cluster-scoped CRD's objects, which are in
// none).
func readMessage(install *v1alpha1.WebhookInstall, obj *unstructured.Unstructured, version string) string {
	if obj.GetNamespace() != install.Namespace {
		return fmt.Sprintf("read an object outside namespace %s at %s through the webhook", install.Namespace, version)
	}
	return fmt.Sprintf("read %s at %s through the webhook", client.ObjectKeyFromObject(obj), version)
}

// listFailed is readStored's answer to a list that failed; ours: the list
// was of the install's namespace.
func listFailed(ctx context.Context, install *v1alpha1.WebhookInstall, crd *apiextensionsv1.CustomResourceDefinition, version string, err error, ours bool) storedRead {
	if apierrors.IsForbidden(err) {
		return storedRead{failed: &probe{forbidden: &verifyForbiddenError{resource: crdResource(crd), cause: err.Error()}}}
	}
	p := failedProbe(ctx, install, crd, version, err, ours)
	return storedRead{failed: &p}
}

// failedProbe reports a conversion the API server failed. ours: the read
// was in the install's namespace (or of its own dry-run object), so the
// status may carry what the webhook said about the object.
func failedProbe(ctx context.Context, install *v1alpha1.WebhookInstall, crd *apiextensionsv1.CustomResourceDefinition, version string, err error, ours bool) probe {
	reason, trusted := classifyConversionError(err.Error())
	p := probe{reason: reason, trusted: trusted, err: err}
	switch reason {
	case v1alpha1.ReasonWebhookUntrusted:
		p.message = fmt.Sprintf("the API server does not trust the webhook's serving certificate through the caBundle, so it could not convert %s to %s: %v", crd.Name, version, err)
	case v1alpha1.ReasonWebhookUnreachable:
		p.message = fmt.Sprintf("the API server could not reach the webhook (no ready pod, connection refused or timed out), so it could not convert %s to %s: %v", crd.Name, version, err)
	case v1alpha1.ReasonWebhookPathNotFound:
		p.message = fmt.Sprintf("%s at path %s: nothing converts to %s until the install's webhookPath names the path the webhook serves (the API server trusted its certificate, so certificate rotations go on): %v",
			pathNotFoundPrefix, webhookPath(crd), version, err)
	case v1alpha1.ReasonConversionRefused:
		if ours {
			p.message = fmt.Sprintf("%s an object to %s: %v. The API server reached and trusted the webhook, so certificate rotations go on; "+
				"reads of that object at %s, and LISTs that include it, fail until the webhook or the object is fixed", refusedPrefix, version, err, version)
			break
		}
		ctrl.LoggerFrom(ctx).Info("The webhook refused an object of another namespace", "crd", crd.Name, "version", version, "error", err.Error())
		p.message = fmt.Sprintf("%s an object outside namespace %s to %s (its name and the webhook's answer are kept out of this status; the manager's log has them). "+
			"The API server reached and trusted the webhook, so certificate rotations go on; reads of that object at %s fail until the webhook or the object is fixed",
			refusedPrefix, install.Namespace, version, version)
	default:
		p.reason = v1alpha1.ReasonConversionFailed
		p.message = fmt.Sprintf("the API server could not convert %s to %s: %v", crd.Name, version, err)
	}
	return p
}

// webhookPath is the path the CRD's conversion posts to.
func webhookPath(crd *apiextensionsv1.CustomResourceDefinition) string {
	if c := crd.Spec.Conversion; c != nil && c.Webhook != nil && c.Webhook.ClientConfig != nil && c.Webhook.ClientConfig.Service != nil && c.Webhook.ClientConfig.Service.Path != nil {
		return *c.Webhook.ClientConfig.Service.Path
	}
	return "/"
}

// The API server reports a conversion webhook's failure as
// "conversion webhook for <group/version, Kind=kind> failed: <cause>" or
// "... returned <what was wrong>" (apiextensions-apiserver
// webhook_converter.go). A failed POST's cause is the transport's
// url.Error, `Post "<url>": <error>`; a 404 is the REST client's message.
var (
	postFailed = regexp.MustCompile(`failed: Post "[^"]*": (.*)`)
	notFound   = "failed: the server could not find the requested resource"
)

// classifyConversionError tells, from the API server's error message, why
// a conversion through the webhook failed, and whether the API server
// reached the webhook and trusted its certificate (any answer proves it:
// the TLS handshake verified the chain to the caBundle). reason is "" for
// an error that is not a conversion webhook's (RBAC, a rejected object).
func classifyConversionError(msg string) (reason string, trusted bool) {
	if !strings.Contains(msg, "conversion webhook for ") {
		return "", false
	}
	if m := postFailed.FindStringSubmatch(msg); m != nil {
		if strings.Contains(m[1], "x509: ") {
			return v1alpha1.ReasonWebhookUntrusted, false
		}
		return v1alpha1.ReasonWebhookUnreachable, false
	}
	if strings.Contains(msg, notFound) {
		return v1alpha1.ReasonWebhookPathNotFound, true
	}
	return v1alpha1.ReasonConversionRefused, true
}

// otherServedVersion is a served version other than the storage version:
// reading at it needs a conversion.
func otherServedVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Served && !v.Storage {
			return v.Name
		}
	}
	return ""
}

// verificationResult is the metric label of a convertThroughAPIServer
// result.
func verificationResult(verified bool, err error) string {
	var forbidden *verifyForbiddenError
	switch {
	case errors.As(err, &forbidden):
		return "unverifiable"
	case err != nil:
		return "failure"
	case verified:
		return "success"
	}
	return "unverifiable"
}
