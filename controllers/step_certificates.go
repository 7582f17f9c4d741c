package controllers

import (
	"bytes"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
)

// Defaults of spec.certificates, repeated here for objects created before
// the API server applied them (the API defaults are the source of truth).
const (
	defaultCALifetime      = 17520 * time.Hour
	defaultServingLifetime = 2160 * time.Hour
)

// policyOf turns spec.certificates into a certs.Policy.
func policyOf(install *v1alpha1.WebhookInstall) certs.Policy {
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
	return p
}

// ensureCertificates gives every webhook Service a CA (kept in its own
// Secret, so serving certificates can be reissued without changing the
// trust bundle) and a serving certificate for the Service's names. It
// writes a Secret only when certs' policy checks say it must.
func (r *WebhookInstallReconciler) ensureCertificates(ctx context.Context, s *installState) error {
	policy := policyOf(s.install)
	for _, w := range s.webhooks {
		caSecret, err := r.readSecret(ctx, s.install.Namespace, desired.CASecretName(w.Service))
		if err != nil {
			return err
		}
		ca, verdict := policy.CheckCA(pairOf(caSecret), s.now)
		if !verdict.OK() {
			if ca, err = r.issueCA(ctx, s, w.Service, policy, verdict); err != nil {
				return err
			}
		}

		servingSecret, err := r.readSecret(ctx, s.install.Namespace, desired.ServingSecretName(w.Service))
		if err != nil {
			return err
		}
		serving := pairOf(servingSecret)
		verdict = policy.CheckServing(serving, ca, certs.ServiceDNSNames(w.Service, s.install.Namespace), s.now)
		if verdict.OK() && !bytes.Equal(servingSecret.Data["ca.crt"], ca.Pair.CertPEM) {
			verdict = certs.Verdict{Reason: certs.ReasonInvalid, Message: "ca.crt in the serving Secret is not the current CA"}
		}
		if !verdict.OK() {
			if serving, err = r.issueServing(ctx, s, w.Service, ca, policy, verdict); err != nil {
				return err
			}
		}
		servingCert, err := certs.ParseCert(serving.CertPEM)
		if err != nil {
			return fmt.Errorf("parsing the serving certificate of %s: %w", w.Service, err)
		}
		s.services[w.Service] = &serviceCerts{
			secretName: desired.ServingSecretName(w.Service),
			ca:         ca,
			servingPEM: serving.CertPEM,
			rotateAt:   earliest(policy.RenewAt(ca.Cert), policy.RenewAt(servingCert)),
		}
	}
	return nil
}

func (r *WebhookInstallReconciler) issueCA(ctx context.Context, s *installState, service string, policy certs.Policy, why certs.Verdict) (*certs.CA, error) {
	ca, err := certs.NewCA(service+"."+s.install.Namespace+"-ca", policy.KeyAlgorithm, policy.CALifetime, s.now)
	if err != nil {
		return nil, r.certificateFailed(s, service, err)
	}
	if err := r.apply(ctx, desired.CASecret(s.install, service, ca.Pair)); err != nil {
		return nil, r.certificateFailed(s, service, err)
	}
	s.issuedCerts = true
	r.Recorder.Eventf(s.install, nil, corev1.EventTypeNormal, "IssuedCA", "IssueCertificate",
		"Issued CA %s for service %s (%s: %s), valid until %s", certs.Fingerprint(ca.Cert), service, why.Reason, why.Message, ca.Cert.NotAfter.UTC().Format(time.RFC3339))
	return ca, nil
}

func (r *WebhookInstallReconciler) issueServing(ctx context.Context, s *installState, service string, ca *certs.CA, policy certs.Policy, why certs.Verdict) (*certs.KeyPair, error) {
	pair, err := ca.IssueServing(certs.ServiceDNSNames(service, s.install.Namespace), policy.KeyAlgorithm, policy.ServingLifetime, s.now)
	if err != nil {
		return nil, r.certificateFailed(s, service, err)
	}
	if err := r.apply(ctx, desired.ServingSecret(s.install, service, ca.Pair.CertPEM, pair)); err != nil {
		return nil, r.certificateFailed(s, service, err)
	}
	s.issuedCerts = true
	cert, _ := certs.ParseCert(pair.CertPEM)
	r.Recorder.Eventf(s.install, nil, corev1.EventTypeNormal, "IssuedServingCertificate", "IssueCertificate",
		"Issued serving certificate %s for service %s (%s: %s), valid until %s", certs.Fingerprint(cert), service, why.Reason, why.Message, cert.NotAfter.UTC().Format(time.RFC3339))
	return &pair, nil
}

func (r *WebhookInstallReconciler) certificateFailed(s *installState, service string, err error) error {
	s.stop(v1alpha1.PhaseFailed, v1alpha1.ReasonCertificateFailed, fmt.Sprintf("certificates of service %s: %v", service, err))
	return fmt.Errorf("certificates of service %s: %w", service, err)
}

// readSecret reads one of Hookwright's Secrets from the label-selected
// cache; a missing Secret is returned as nil.
func (r *WebhookInstallReconciler) readSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret)
	if apierrors.IsNotFound(err) {
		return nil, r.refuseForeign(ctx, &corev1.Secret{}, namespace, name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading secret %s/%s: %w", namespace, name, err)
	}
	return secret, nil
}

func pairOf(secret *corev1.Secret) *certs.KeyPair {
	if secret == nil {
		return nil
	}
	return &certs.KeyPair{CertPEM: secret.Data[corev1.TLSCertKey], KeyPEM: secret.Data[corev1.TLSPrivateKeyKey]}
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
