package controllers

import (
	"context"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// releaseDropped releases the CRDs this install still claims but no longer
// lists in any webhookdefinition (a new version dropped them, or dropped
// the webhook), with the same never-unreadable rule as deletion. It reads
// the metadata-only CRD cache through the owner index: only the CRDs this
// install claims, never a copy of every CRD's metadata.
func (r *WebhookInstallReconciler) releaseDropped(ctx context.Context, s *installState) error {
	claimed := &metav1.PartialObjectMetadataList{}
	claimed.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	if err := r.Client.List(ctx, claimed, client.MatchingFields{indexCRDOwner: installRef(s.install)}); err != nil {
		return fmt.Errorf("listing CRDs: %w", err)
	}
	listed := conversionCRDNames(s.install)
	for _, crd := range claimed.Items {
		if crd.Annotations[v1alpha1.AnnotationOwner] != installRef(s.install) || slices.Contains(listed, crd.Name) {
			continue
		}
		if err := r.release(ctx, s, crd.Name, "no longer lists it in conversionCRDs"); err != nil {
			return err
		}
	}
	return nil
}
