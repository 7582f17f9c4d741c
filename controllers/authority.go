package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/guard"
)

// Authority is what the reconciler refuses to do for an install, whoever
// created it: the defense behind the admission guard.
type Authority struct {
	// Namespace and ServiceAccount are Hookwright's own. No install runs
	// there, and no webhook pod runs as that ServiceAccount.
	Namespace, ServiceAccount string
	// AllowSystemNamespaces lets installs live in Hookwright's namespace
	// and in kube-* namespaces (off by default).
	AllowSystemNamespaces bool
}

// ownGroupSuffix names Hookwright's own CRDs, which no install converts.
const ownGroupSuffix = ".operators.hookwright.dev"

// guardRecheck is how often an install refused for a missing admission
// guard looks again (nothing watches the guard).
const guardRecheck = 30 * time.Second

// refuseOutOfBounds stops an install that asks for what no install may:
// a protected namespace, Hookwright's ServiceAccount, Hookwright's CRDs.
func (a Authority) refuseOutOfBounds(s *installState) {
	ns := s.install.Namespace
	if msg := a.namespaceRefusal(ns); msg != "" {
		s.stop(v1alpha1.PhaseFailed, v1alpha1.ReasonNamespaceNotAllowed, msg)
		return
	}
	for _, d := range s.install.Spec.Install.Spec.Deployments {
		pod := d.Spec.Template.Spec
		sa := pod.ServiceAccountName
		if sa == "" {
			sa = pod.DeprecatedServiceAccount
		}
		if ns == a.Namespace && sa != "" && sa == a.ServiceAccount {
			s.stop(v1alpha1.PhaseFailed, v1alpha1.ReasonServiceAccountNotAllowed, fmt.Sprintf(
				"deployment %s would run as ServiceAccount %s/%s, Hookwright's own: give the webhook a ServiceAccount of its own", d.Name, ns, sa))
			return
		}
	}
	for _, w := range s.webhooks {
		for _, def := range w.Definitions {
			for _, name := range def.ConversionCRDs {
				if strings.HasSuffix(name, ownGroupSuffix) {
					s.stop(v1alpha1.PhaseFailed, v1alpha1.ReasonCRDNotAllowed, fmt.Sprintf(
						"CRD %s is Hookwright's own; no WebhookInstall converts it: remove it from conversionCRDs", name))
					return
				}
			}
		}
	}
}

func (a Authority) namespaceRefusal(ns string) string {
	if a.AllowSystemNamespaces {
		return ""
	}
	if ns == a.Namespace || strings.HasPrefix(ns, "kube-") {
		return fmt.Sprintf("namespace %s is reserved (Hookwright's own or kube-*): create the install in the operator's own namespace "+
			"instead, or start Hookwright with --allow-system-namespaces", ns)
	}
	return ""
}

// refuseClaimsWithoutGuard stops the install, before it claims any new CRD,
// while the admission guard is not in force: without it, anyone allowed to
// create a WebhookInstall could take over CRDs they may not patch. CRDs the
// install already owns keep being served; they were claimed under the guard.
func (r *WebhookInstallReconciler) refuseClaimsWithoutGuard(ctx context.Context, s *installState, claims []string) (bool, error) {
	why, err := r.guardNotInForce(ctx)
	if err != nil || why == "" {
		return false, err
	}
	claimsRefused.WithLabelValues(v1alpha1.ReasonAdmissionGuardNotInForce).Inc()
	ctrl.LoggerFrom(ctx).Info("Refusing new CRD claims: the admission guard is not in force", "why", why, "crds", claims)
	s.stop(v1alpha1.PhaseFailed, v1alpha1.ReasonAdmissionGuardNotInForce, fmt.Sprintf(
		"not claiming CRDs %s: %s, so Hookwright cannot tell whether this install's creator may patch them. "+
			"Reapply the guard (kubectl apply --server-side --force-conflicts -k config/guard, or reinstall Hookwright's bundle); installs that already own their CRDs keep working",
		strings.Join(claims, ", "), why))
	s.retryWithin(guardRecheck)
	return true, nil
}

// guardNotInForce reads the guard live and explains why it is not in
// force, or returns "".
func (r *WebhookInstallReconciler) guardNotInForce(ctx context.Context) (string, error) {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	hasPolicy, why, err := r.readGuardObject(ctx, policy)
	if err != nil || why != "" {
		return why, err
	}
	hasBinding, why, err := r.readGuardObject(ctx, binding)
	if err != nil || why != "" {
		return why, err
	}
	if !hasPolicy {
		policy = nil
	}
	if !hasBinding {
		binding = nil
	}
	why = guard.NotInForce(policy, binding)
	if why == "" {
		admissionGuardInForce.Set(1)
	} else {
		admissionGuardInForce.Set(0)
	}
	return why, nil
}

// readGuardObject reads obj, named guard.Name, live; a read that RBAC
// forbids is a guard Hookwright cannot vouch for.
func (r *WebhookInstallReconciler) readGuardObject(ctx context.Context, obj client.Object) (found bool, why string, err error) {
	err = r.APIReader.Get(ctx, client.ObjectKey{Name: guard.Name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return false, "", nil
	case apierrors.IsForbidden(err):
		admissionGuardInForce.Set(0)
		return false, fmt.Sprintf("Hookwright may not read the admission guard %s (grant get on it, as config/rbac does)", guard.Name), nil
	case err != nil:
		return false, "", fmt.Errorf("reading the admission guard: %w", err)
	}
	return true, "", nil
}
