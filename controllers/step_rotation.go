package controllers

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
		if err := r.apply(ctx, desired.CASecret(s.install, service, desired.CAState{Active: o.Active.Pair, Next: &next.Pair, Rotation: s.provenance(record, action)})); err != nil {
			return err
		}
		s.startRotation(record)
		o.Next = next
	case rotation.Promote:
		if err := r.verifyService(ctx, s, service); err != nil {
			s.retryWithin(rotation.SettleTime)
			s.rotationNote(service, fmt.Sprintf("waiting to promote the new CA: %v", err))
			break
		}
		old := o.Active
		state := desired.CAState{Active: o.Next.Pair, Previous: old.Pair.CertPEM, PruneAt: s.now.Add(o.Overlap), Rotation: s.stored[service].caAnnotation}
		if err := r.apply(ctx, desired.CASecret(s.install, service, state)); err != nil {
			return err
		}
		o.Active, o.Next, o.Previous, o.PruneAt = o.Next, nil, old.Cert, state.PruneAt
		promote := rotation.Action{Reason: "CARotation", Message: "serving certificate moved to the new CA " + certs.Fingerprint(o.Active.Cert)}
		if err := r.issueServing(ctx, s, service, &o, promote); err != nil {
			return err
		}
		rolledOut = false
		s.retryWithin(o.Overlap)
	case rotation.Prune:
		if err := r.verifyService(ctx, s, service); err != nil {
			s.retryWithin(rotation.SettleTime)
			s.rotationNote(service, fmt.Sprintf("waiting to remove the old CA: %v", err))
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
