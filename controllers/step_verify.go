package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
)

// verifyFailedRetry is how soon a failed verification is tried again.
const verifyFailedRetry = 10 * time.Second

// verifyForbiddenRetry is how often a verification that RBAC forbids is
// tried again: granting the permission wakes no watch.
const verifyForbiddenRetry = 30 * time.Second

// verifyForbiddenError: Hookwright may not read (or dry-run create) the
// converted resource, so it cannot make the API server convert. The
// conversion is configured but unverified; the message says what to grant.
type verifyForbiddenError struct{ resource, cause string }

func (e *verifyForbiddenError) Error() string {
	return fmt.Sprintf("configured, but Hookwright may not list (or dry-run create) %s to verify it through the API server (%s). "+
		"Grant its ServiceAccount the verbs list and create on %s with a ClusterRole and ClusterRoleBinding (see the admin guide); until then certificate rotations rely on the settle time instead of a verified read",
		e.resource, e.cause, e.resource)
}

// verifyConversion proves, through the API server, that it converts
// through the webhook with the caBundle Hookwright wrote: it reads an
// object at a served version other than the storage version (or, when no
// object exists, dry-run creates one at that version). It runs only when
// something changed since the last verification: an idle resync reads
// nothing and writes nothing.
func (r *WebhookInstallReconciler) verifyConversion(ctx context.Context, s *installState) error {
	for _, c := range s.crds {
		if c.written {
			c.message = "configured; verification follows once the API server has loaded it"
			continue
		}
		if r.stillVerified(s, c) {
			c.state, c.message = v1alpha1.ConversionVerified, previousMessage(s.install, c.name)
			continue
		}
		version := otherServedVersion(c.crd)
		if version == "" {
			c.state, c.message = v1alpha1.ConversionVerified, "one served version: nothing to convert yet"
			continue
		}
		verified, detail, err := r.convertThroughAPIServer(ctx, s.install, c.crd, version)
		verificationsTotal.WithLabelValues(verificationResult(verified, err)).Inc()
		var forbidden *verifyForbiddenError
		switch {
		case errors.As(err, &forbidden):
			c.unverifiable, c.forbidden, c.message = true, true, forbidden.Error()
			// RBAC changes wake nothing: look again now and then.
			s.retryWithin(verifyForbiddenRetry)
		case err != nil:
			c.state, c.message = v1alpha1.ConversionFailed, fmt.Sprintf("the API server could not convert %s to %s: %v", c.name, version, err)
			s.retryWithin(verifyFailedRetry)
		case verified:
			c.state, c.message = v1alpha1.ConversionVerified, detail
		default:
			c.unverifiable, c.message = true, detail
		}
	}
	return nil
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
	for _, prev := range st.ConversionCRDs {
		if prev.Name == c.name {
			return prev.State == v1alpha1.ConversionVerified
		}
	}
	return false
}

func previousMessage(install *v1alpha1.WebhookInstall, crd string) string {
	for _, prev := range install.Status.ConversionCRDs {
		if prev.Name == crd {
			return prev.Message
		}
	}
	return ""
}

// convertThroughAPIServer reads one object at version through the API
// server, which converts it from the storage version with the webhook.
// With no object, a server-side dry-run create at version makes the API
// server convert to the storage version. verified is false (with err nil)
// when neither could exercise the webhook.
func (r *WebhookInstallReconciler) convertThroughAPIServer(ctx context.Context, install *v1alpha1.WebhookInstall, crd *apiextensionsv1.CustomResourceDefinition, version string) (bool, string, error) {
	gv := crd.Spec.Group + "/" + version
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(gv)
	list.SetKind(crd.Spec.Names.ListKind)
	resource := crd.Spec.Names.Plural + "." + crd.Spec.Group
	// The status is the install's namespace's to read: it names an object
	// only from that namespace, so it looks there first and then anywhere.
	scopes := []string{""}
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		scopes = []string{install.Namespace, ""}
	}
	for _, scope := range scopes {
		ours := scope != ""
		if err := r.APIReader.List(ctx, list, client.Limit(1), client.InNamespace(scope)); err != nil {
			if apierrors.IsForbidden(err) {
				return false, "", &verifyForbiddenError{resource: resource, cause: err.Error()}
			}
			if !webhookAnswered(err) {
				return false, "", err
			}
			if ours {
				return true, fmt.Sprintf("the API server reached the webhook through the caBundle, but the webhook refused an object: %v. Reads of that object at %s fail until the webhook or the object is fixed", err, version), nil
			}
			ctrl.LoggerFrom(ctx).Info("The webhook refused an object of another namespace", "crd", crd.Name, "version", version, "error", err.Error())
			return true, fmt.Sprintf("the API server reached the webhook through the caBundle, but the webhook refused an object outside namespace %s "+
				"(its name and the webhook's answer are kept out of this status; the manager's log has them). Reads of that object at %s fail until the webhook or the object is fixed", install.Namespace, version), nil
		}
		if len(list.Items) == 0 {
			continue
		}
		if ours {
			return true, fmt.Sprintf("read %s at %s through the webhook", client.ObjectKeyFromObject(&list.Items[0]), version), nil
		}
		return true, fmt.Sprintf("read an object outside namespace %s at %s through the webhook", install.Namespace, version), nil
	}
	probe := &unstructured.Unstructured{}
	probe.SetAPIVersion(gv)
	probe.SetKind(crd.Spec.Names.Kind)
	probe.SetGenerateName("hookwright-verify-")
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		probe.SetNamespace(install.Namespace)
	}
	err := r.Client.Create(ctx, probe, client.DryRunAll)
	if err == nil {
		return true, fmt.Sprintf("dry-run created an object at %s through the webhook (no objects exist yet)", version), nil
	}
	if apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "conversion webhook") {
		return false, "", &verifyForbiddenError{resource: resource, cause: err.Error()}
	}
	if strings.Contains(err.Error(), "conversion webhook") {
		return false, "", err
	}
	return false, fmt.Sprintf("no %s exist yet and a dry-run object was rejected before conversion (%v); verification runs again on the next change", crd.Spec.Names.Plural, err), nil
}

// webhookAnswered tells a conversion the webhook itself refused (a bad
// object or a webhook bug: the API server reached it and trusted its
// certificate) from a failure to reach or trust it. Only the latter is
// Hookwright's to fix, and only it may block a rotation: one object the
// webhook cannot convert must not stop certificates from being renewed.
// The API server wraps transport and TLS errors as a url.Error
// ("failed: Post \"https://...\": ..."); everything else it reports comes
// from the webhook's answer.
func webhookAnswered(err error) bool {
	msg := err.Error()
	if !strings.Contains(msg, "conversion webhook for ") {
		return false
	}
	return !strings.Contains(msg, `failed: Post "`)
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
