package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

// claimOwnership makes this install the one owner of each conversion CRD.
// The claim is an annotation written with optimistic concurrency (the
// CRD's resourceVersion is a precondition), so of any number of installs
// and replicas racing for a CRD exactly one wins.
//
// Claims are all or nothing across the install's CRDs. Nothing is claimed
// while any CRD of the install is blocked; the claims are made in name
// order, so two installs listing overlapping CRDs in any order contend for
// the lowest-named shared CRD first and cannot hold crossed partial sets;
// and a pass that ends blocked (a lost claim race, another owner, the
// admission guard) releases, again with optimistic concurrency, every claim
// of the install that does not serve yet. A blocked install never holds a
// CRD another install needs.
func (r *WebhookInstallReconciler) claimOwnership(ctx context.Context, s *installState) error {
	me := installRef(s.install)
	var toClaim []*crdState
	for _, c := range s.crds {
		if c.kept {
			continue // owned already, kept serving (keepalive.go)
		}
		owner := c.crd.Annotations[v1alpha1.AnnotationOwner]
		switch {
		case owner == me:
			if c.crd.Annotations[v1alpha1.AnnotationOwnerUID] != string(s.install.UID) {
				toClaim = append(toClaim, c) // claimed by an earlier install of the same name
			}
		case owner != "" && owner == replacedRef(s.install):
			// An upgrade: the CRD is taken over in configureConversion,
			// once this install's own webhook serves (step_handover.go).
			c.handover, c.from = true, owner
		case owner != "":
			holder, err := r.ownerInstall(ctx, owner)
			if err != nil {
				return err
			}
			switch {
			case holder == nil:
				toClaim = append(toClaim, c) // the owner is gone without releasing
			case !holder.DeletionTimestamp.IsZero():
				// A deleted owner keeps serving a CRD it cannot switch to
				// None (keepalive.go) until another install takes it over:
				// this one, once its own webhook serves.
				c.handover, c.from = true, owner
			default:
				c.state, c.message = v1alpha1.ConversionConflict, "owned by WebhookInstall "+owner
				s.stop(v1alpha1.PhaseFailed, v1alpha1.ReasonOwnerConflict, ownerConflictMessage(s.install, c.name, owner))
			}
		default:
			if msg := foreignConversion(c.crd, s.install, c.webhook.Service); msg != "" {
				c.state, c.message = v1alpha1.ConversionConflict, msg
				s.stop(v1alpha1.PhaseFailed, v1alpha1.ReasonForeignConversion, msg)
				continue
			}
			toClaim = append(toClaim, c)
		}
	}
	if err := r.refuseAdoptingKept(ctx, s); err != nil {
		return err
	}
	if s.halt != nil {
		return r.releaseUnserved(ctx, s)
	}
	if claims := newClaims(s, toClaim); len(claims) > 0 {
		if refused, err := r.refuseClaimsWithoutGuard(ctx, s, claims); refused || err != nil {
			return errors.Join(err, r.releaseUnserved(ctx, s))
		}
	}
	slices.SortFunc(toClaim, func(a, b *crdState) int { return strings.Compare(a.name, b.name) })
	for _, c := range toClaim {
		if err := r.claim(ctx, s.install, c.crd); err != nil {
			if apierrors.IsConflict(err) {
				s.stop(v1alpha1.PhaseInstalling, v1alpha1.ReasonInProgress, fmt.Sprintf("CRD %s changed while claiming it; retrying", c.name))
				s.retryWithin(retrySoon)
				return r.releaseUnserved(ctx, s)
			}
			return errors.Join(fmt.Errorf("claiming CRD %s: %w", c.name, err), r.releaseUnserved(ctx, s))
		}
	}
	// No Event per claim: a claim is a step of the install, not a
	// transition a person acts on. The status tells the install's
	// progress and its phase Event where it ended, status.conversionCRDs
	// and the CRD's owner annotation who owns what, and a refused claim is
	// a phase Event of its own (Failed).
	return nil
}

// ownerConflictMessage says who owns the CRD and offers only hand-overs
// that work: spec.replaces names an install of the same namespace.
func ownerConflictMessage(install *v1alpha1.WebhookInstall, crdName, owner string) string {
	msg := fmt.Sprintf("CRD %s is owned by WebhookInstall %s; a CRD has one conversion owner. ", crdName, owner)
	ns, name, _ := strings.Cut(owner, "/")
	if ns == install.Namespace {
		return msg + fmt.Sprintf("To hand it over, make this install its upgrade with spec.replaces: %s, or delete %s; "+
			"this install then takes the CRD over once its own webhook serves", name, name)
	}
	return msg + fmt.Sprintf("To hand it over, delete WebhookInstall %s (kubectl delete whi %s -n %s); "+
		"this install then takes the CRD over once its own webhook serves", owner, name, ns)
}

// releaseUnserved gives up, with optimistic concurrency, every claim of
// the install on a CRD whose conversion does not point at the install's
// webhook yet: a blocked install holds no partial set. A CRD that already
// converts through the install is kept; it is being served. A lost race
// leaves the claim to the next pass, which releases it again.
func (r *WebhookInstallReconciler) releaseUnserved(ctx context.Context, s *installState) error {
	me := installRef(s.install)
	for _, c := range s.crds {
		if c.crd == nil || c.kept || c.crd.Annotations[v1alpha1.AnnotationOwner] != me || pointsAtService(c.crd, s.install.Namespace, c.webhook.Service) {
			continue
		}
		patch := client.MergeFromWithOptions(c.crd.DeepCopy(), client.MergeFromWithOptimisticLock{})
		delete(c.crd.Annotations, v1alpha1.AnnotationOwner)
		delete(c.crd.Annotations, v1alpha1.AnnotationOwnerUID)
		if err := r.Client.Patch(ctx, c.crd, patch, client.FieldOwner(desired.FieldManager)); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				s.retryWithin(retrySoon)
				continue
			}
			return fmt.Errorf("releasing the claim on CRD %s: %w", c.name, err)
		}
		r.Recorder.Eventf(s.install, c.crd, corev1.EventTypeNormal, "Unclaimed", "Release",
			"Released the claim on CRD %s: this install is blocked, and claims all of its CRDs or none", c.name)
	}
	return nil
}

// newClaims names the CRDs this pass would newly claim: taken now, or
// taken over from the replaced install once this one serves.
func newClaims(s *installState, toClaim []*crdState) []string {
	var names []string
	for _, c := range s.crds {
		if c.handover || slices.Contains(toClaim, c) {
			names = append(names, c.name)
		}
	}
	return names
}

func (r *WebhookInstallReconciler) claim(ctx context.Context, install *v1alpha1.WebhookInstall, crd *apiextensionsv1.CustomResourceDefinition) error {
	patch := client.MergeFromWithOptions(crd.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if crd.Annotations == nil {
		crd.Annotations = map[string]string{}
	}
	crd.Annotations[v1alpha1.AnnotationOwner] = installRef(install)
	crd.Annotations[v1alpha1.AnnotationOwnerUID] = string(install.UID)
	delete(crd.Annotations, v1alpha1.AnnotationHandover)
	delete(crd.Annotations, v1alpha1.AnnotationReleasedBy)
	return r.Client.Patch(ctx, crd, patch, client.FieldOwner(desired.FieldManager))
}

// foreignConversion explains why a CRD's existing webhook conversion may
// not be taken over, or returns "". A conversion is foreign when it points
// somewhere other than this install's Service, Hookwright did not leave it
// behind, and no admin handed it over.
func foreignConversion(crd *apiextensionsv1.CustomResourceDefinition, install *v1alpha1.WebhookInstall, service string) string {
	conv := crd.Spec.Conversion
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return ""
	}
	if crd.Annotations[v1alpha1.AnnotationHandover] == installRef(install) || crd.Annotations[v1alpha1.AnnotationReleasedBy] != "" {
		return ""
	}
	cfg := conv.Webhook.ClientConfig
	if cfg.URL == nil && cfg.Service != nil && cfg.Service.Namespace == install.Namespace && cfg.Service.Name == service {
		return ""
	}
	target := "a URL"
	if cfg.Service != nil {
		target = "service " + cfg.Service.Namespace + "/" + cfg.Service.Name
	}
	return fmt.Sprintf("CRD %s already converts through %s, which Hookwright did not configure. To let this install take it over: kubectl annotate crd %s %s=%s",
		crd.Name, target, crd.Name, v1alpha1.AnnotationHandover, installRef(install))
}

// ownerInstall reads the install ref names, or returns nil if it is gone.
func (r *WebhookInstallReconciler) ownerInstall(ctx context.Context, ref string) (*v1alpha1.WebhookInstall, error) {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok {
		return nil, nil
	}
	install := &v1alpha1.WebhookInstall{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, install)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return install, nil
}

func installRef(install *v1alpha1.WebhookInstall) string {
	return install.Namespace + "/" + install.Name
}

func nameOf(ref string) string {
	_, name, _ := strings.Cut(ref, "/")
	return name
}
