package controllers

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/rotation"
	"github.com/hookwright/hookwright/internal/eventnote"
)

// maxRotationHistory bounds status.rotations.
const maxRotationHistory = 20

// rotationHistory is the previous audit trail plus the rotations started
// this pass, with InProgress entries completed once their certificate is
// in place, rolled out everywhere and verified through the API server.
func rotationHistory(s *installState) []v1alpha1.RotationRecord {
	history := append(append([]v1alpha1.RotationRecord(nil), s.install.Status.Rotations...), s.rotations...)
	history = withStoredRotations(history, s.stored)
	for i := range history {
		rec := &history[i]
		if rec.Outcome != v1alpha1.RotationInProgress {
			continue
		}
		if supersededAt(history, i) {
			rec.Outcome, rec.Completed = v1alpha1.RotationFailed, &metav1.Time{Time: s.now.Truncate(time.Second)}
			rec.Message = strings.TrimSpace(rec.Message + " (superseded by a newer rotation before it completed)")
			continue
		}
		if rotationDone(s, rec) {
			rec.Outcome, rec.Completed = v1alpha1.RotationSucceeded, &metav1.Time{Time: s.now.Truncate(time.Second)}
		}
	}
	if len(history) > maxRotationHistory {
		history = history[len(history)-maxRotationHistory:]
	}
	return history
}

// withStoredRotations adds the rotations recorded on the Secrets that the
// history lacks: a crash after a certificate write and before the status
// write. A record older than the oldest kept entry of a full history was
// trimmed on purpose and stays out.
func withStoredRotations(history []v1alpha1.RotationRecord, stored map[string]*storedRotations) []v1alpha1.RotationRecord {
	services := make([]string, 0, len(stored))
	for service := range stored {
		services = append(services, service)
	}
	sort.Strings(services)
	for _, service := range services {
		for _, p := range stored[service].records {
			rec := p.Record
			if rec.Service != service || slices.ContainsFunc(history, func(h v1alpha1.RotationRecord) bool { return rotationKey(h) == rotationKey(rec) }) {
				continue
			}
			if len(history) >= maxRotationHistory && rec.Started.Before(&history[0].Started) {
				continue
			}
			rec.Outcome, rec.Completed = v1alpha1.RotationInProgress, nil
			history = append(history, rec)
		}
	}
	sort.SliceStable(history, func(i, j int) bool { return history[i].Started.Before(&history[j].Started) })
	return history
}

func supersededAt(history []v1alpha1.RotationRecord, i int) bool {
	for _, later := range history[i+1:] {
		if later.Service == history[i].Service && later.Kind == history[i].Kind {
			return true
		}
	}
	return false
}

// rotationDone: a serving rotation is done when its certificate is the
// one stored, every pod serves it and the API server converted through it;
// a CA rotation also needs the old CA pruned from the bundle.
func rotationDone(s *installState, rec *v1alpha1.RotationRecord) bool {
	svc, ok := s.services[rec.Service]
	if !ok || !svc.rolledOut || !serviceVerified(s, rec.Service) {
		return false
	}
	if rec.Kind == v1alpha1.RotationCA {
		return svc.next == nil && len(svc.previous) == 0 && certs.Fingerprint(svc.ca.Cert) == rec.NewFingerprint
	}
	serving, err := certs.ParseCert(svc.servingPEM)
	return err == nil && certs.Fingerprint(serving) == rec.NewFingerprint
}

// serviceVerified: this pass proved, through the API server, that it
// trusts what the Service's pods serve, through everything that calls the
// Service and that Hookwright can verify: each of its CRDs and each of its
// registered admission webhooks. A caller Hookwright cannot verify is not
// waited for: a CRD with no object to convert whose schema rejects the dry
// run's empty object, a CRD or admission webhook whose dry run RBAC
// forbids, an admission webhook no dry run reaches (its sideEffects, its
// rules). Another caller of the Service proves the same pods' trust, and a
// Service that only such callers call has nothing more to prove than its
// rollout: a CA rotation's gates probed its trust through the probe CRD
// and configurations (trustprobe.go, probeAdmissionService), which need
// neither objects nor the install's RBAC. Waiting for them instead kept
// such a rotation InProgress until the next one superseded it and
// recorded it Failed, with a RotationFailed Event and alert. A Service
// with no caller yet proves nothing.
func serviceVerified(s *installState, service string) bool {
	proven, unverifiable := false, false
	for _, c := range s.crds {
		if c.webhook.Service != service {
			continue
		}
		switch {
		case c.written:
			return false // verified on the next pass
		case c.trusted:
			// Trust proven is what a rotation needs: a webhook that
			// refuses one stored object still serves the new certificate.
			proven = true
		case c.unverifiable:
			unverifiable = true
		default:
			return false
		}
	}
	for _, a := range s.admissionOfService(service) {
		switch {
		case !a.registered:
			continue // the API server does not call it yet
		case a.written:
			return false
		case a.trusted:
			proven = true
		case a.unverifiable:
			unverifiable = true
		default:
			return false
		}
	}
	return proven || unverifiable
}

// rotating reports whether the Service has a rotation under way, in which
// case its passes verify again through the API server (the conversion
// verification skips those of a rollout: awaitingRollout).
func rotating(s *installState, service string) bool {
	for _, rec := range inProgressRotations(s) {
		if rec.Service == service {
			return true
		}
	}
	return false
}

// inProgressRotations are the install's rotations under way: those the
// status says are in progress and those this pass started.
func inProgressRotations(s *installState) []v1alpha1.RotationRecord {
	var out []v1alpha1.RotationRecord
	for _, rec := range append(append([]v1alpha1.RotationRecord(nil), s.install.Status.Rotations...), s.rotations...) {
		if rec.Outcome == v1alpha1.RotationInProgress {
			out = append(out, rec)
		}
	}
	return out
}

func certificatesMessage(s *installState) string {
	if len(s.rotationNotes) == 0 {
		return "every webhook service has a valid CA and serving certificate"
	}
	services := make([]string, 0, len(s.rotationNotes))
	for svc := range s.rotationNotes {
		services = append(services, svc)
	}
	sort.Strings(services)
	var parts []string
	for _, svc := range services {
		parts = append(parts, fmt.Sprintf("%s: %s", svc, s.rotationNotes[svc]))
	}
	return "certificates valid; rotation under way: " + strings.Join(parts, "; ")
}

// recordRotations emits an Event per rotation started and per rotation
// that ended, by comparing the audit trail before and after the pass, and
// returns the first certificates now in place, for recordTransitions to
// tell.
// Reasons name the kind (CARotationStarted, ServingRotationCompleted, ...):
// events.k8s.io groups Events by object, reason and action into a series
// regardless of the note, and CA and serving rotations must not merge.
// Repeated rotations of one kind are counted in their series; the
// per-rotation record with fingerprints is status.rotations.
//
// Two kinds of rotation are not transitions anyone acts on when they
// start (eventsOf): an install's first certificates replace nothing, so
// all those that complete in one pass (a Service's CA and serving
// certificate, usually together) are told in one note that names each
// (issuanceNote); and a serving certificate moved to a
// new CA is a step of that CA's rotation, whose Events tell it, so it
// gets an Event only if it fails. That is three writes less per install,
// and two per CA rotation.
func (r *WebhookInstallReconciler) recordRotations(install *v1alpha1.WebhookInstall, old, next []v1alpha1.RotationRecord) (issued []v1alpha1.RotationRecord) {
	known := map[string]v1alpha1.RotationOutcome{}
	for _, rec := range old {
		known[rotationKey(rec)] = rec.Outcome
	}
	for _, rec := range next {
		before, seen := known[rotationKey(rec)]
		told := eventsOf(rec)
		switch {
		case !seen && told == toldAtStartAndEnd:
			r.Recorder.Eventf(install, nil, corev1.EventTypeNormal, string(rec.Kind)+"RotationStarted", "Rotate", "%s", startedNote(rec))
		case seen && before == rec.Outcome:
			continue
		}
		switch rec.Outcome {
		case v1alpha1.RotationSucceeded:
			switch told {
			case toldAtStartAndEnd:
				r.Recorder.Eventf(install, nil, corev1.EventTypeNormal, string(rec.Kind)+"RotationCompleted", "Rotate",
					"%s certificate rotation of service %s completed: %s now serves", rec.Kind, rec.Service, rec.NewFingerprint)
			case toldAtEnd:
				issued = append(issued, rec)
			}
		case v1alpha1.RotationFailed:
			r.Recorder.Eventf(install, nil, corev1.EventTypeWarning, string(rec.Kind)+"RotationFailed", "Rotate",
				"%s certificate rotation of service %s did not complete: %s", rec.Kind, rec.Service, rec.Message)
		}
	}
	return issued
}

// rotationTold says which Events tell a rotation that did not fail.
type rotationTold int

const (
	toldAtStartAndEnd rotationTold = iota // <Kind>RotationStarted, then <Kind>RotationCompleted
	toldAtEnd                             // in the pass's one CertificatesIssued Event (issuanceNote)
	toldIfFailed                          // none: another rotation's Events tell it
)

func eventsOf(rec v1alpha1.RotationRecord) rotationTold {
	switch rec.Reason {
	case rotation.ReasonInitial:
		return toldAtEnd
	case reasonCARotation:
		return toldIfFailed
	}
	return toldAtStartAndEnd
}

// startedNote is a <Kind>RotationStarted Event's note; `hookwright audit`
// parses it (internal/audit).
func startedNote(rec v1alpha1.RotationRecord) string {
	return fmt.Sprintf("%s certificate rotation of service %s started (%s: %s): %s -> %s", rec.Kind, rec.Service, rec.Reason, rec.Message, orNone(rec.OldFingerprint), rec.NewFingerprint)
}

// issuanceNote is the note of the CertificatesIssued Event of an
// install's first certificates; `hookwright audit` parses it.
func issuanceNote(recs []v1alpha1.RotationRecord) string {
	issued := make([]eventnote.Issued, 0, len(recs))
	for _, rec := range recs {
		issued = append(issued, eventnote.Issued{Service: rec.Service, Kind: string(rec.Kind), Fingerprint: rec.NewFingerprint})
	}
	return eventnote.Issuance(issued)
}

func rotationKey(rec v1alpha1.RotationRecord) string {
	return rec.Service + "/" + string(rec.Kind) + "/" + rec.NewFingerprint
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// latestIssuance is when a certificate was last issued: last, unless the
// history holds a serving certificate issued later that the previous
// status lacked. Such a record comes from the Secrets (withStoredRotations):
// the pass that issued it left the status to a later one (deferFirstStatus)
// or stopped before writing it.
func latestIssuance(last *metav1.Time, prev, history []v1alpha1.RotationRecord) *metav1.Time {
	for _, rec := range history {
		if rec.Kind != v1alpha1.RotationServing || (last != nil && !last.Before(&rec.Started)) {
			continue
		}
		if slices.ContainsFunc(prev, func(p v1alpha1.RotationRecord) bool { return rotationKey(p) == rotationKey(rec) }) {
			continue
		}
		last = &metav1.Time{Time: rec.Started.Time}
	}
	return last
}
