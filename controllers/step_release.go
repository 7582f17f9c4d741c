package controllers

import (
	"context"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// releaseDropped releases the CRDs this install still claims but no longer
// lists in any webhookdefinition (a new version dropped them, or dropped
// the webhook), with the same never-unreadable rule as deletion: a CRD
// whose conversion None would make unreadable is kept serving, and joins
// this pass's CRDs so its webhook keeps its certificate mount, Service
// port and rotation, and the CRD its caBundle (keepalive.go). It reads the
// metadata-only CRD cache through the owner index: only the CRDs this
// install claims, never a copy of every CRD's metadata.
func (r *WebhookInstallReconciler) releaseDropped(ctx context.Context, s *installState) error {
	claimed := &metav1.PartialObjectMetadataList{}
	claimed.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	if err := r.Client.List(ctx, claimed, client.MatchingFields{indexCRDOwner: installRef(s.install)}); err != nil {
		return fmt.Errorf("listing CRDs: %w", err)
	}
	listed := conversionCRDNames(s.install)
	for _, meta := range claimed.Items {
		if meta.Annotations[v1alpha1.AnnotationOwner] != installRef(s.install) || slices.Contains(listed, meta.Name) {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: meta.Name}, crd); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("reading CRD %s: %w", meta.Name, err)
		}
		kept, err := r.releaseOrKeep(ctx, s, crd, "no longer lists it in conversionCRDs")
		if err != nil {
			return err
		}
		if kept != nil {
			s.crds = append(s.crds, kept)
		}
	}
	if len(keptNames(s.crds)) > 0 {
		s.keepAlive = &keepAliveNote{reason: v1alpha1.ReasonKeptAlive, message: func() string { return droppedKeepMessage(s) }}
	}
	return nil
}
