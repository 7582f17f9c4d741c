package controllers

import (
	"context"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// preflight refuses what no install may ask for (authority.go), then reads
// every conversion CRD live (CRDs are cached as metadata only) and checks
// it can take a conversion webhook at all.
func (r *WebhookInstallReconciler) preflight(ctx context.Context, s *installState) error {
	if r.Authority.refuseOutOfBounds(s); s.halt != nil {
		return nil
	}
	for _, w := range s.webhooks {
		for _, def := range w.Definitions {
			for _, name := range def.ConversionCRDs {
				c := &crdState{name: name, webhook: w, definition: def, state: v1alpha1.ConversionPending}
				s.crds = append(s.crds, c)
				crd := &apiextensionsv1.CustomResourceDefinition{}
				err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, crd)
				if apierrors.IsNotFound(err) {
					c.message = "CRD does not exist yet"
					s.stop(v1alpha1.PhasePending, v1alpha1.ReasonCRDNotFound,
						fmt.Sprintf("CRD %s does not exist yet: create it (Hookwright watches for it and continues)", name))
					continue
				}
				if err != nil {
					return fmt.Errorf("reading CRD %s: %w", name, err)
				}
				c.crd = crd
				if msg := unusableForWebhookConversion(crd, def); msg != "" {
					c.state, c.message = v1alpha1.ConversionFailed, msg
					s.stop(v1alpha1.PhaseFailed, reasonForUnusable(crd), msg)
				}
			}
		}
	}
	return nil
}

func unusableForWebhookConversion(crd *apiextensionsv1.CustomResourceDefinition, def v1alpha1.WebhookDefinition) string {
	if crd.Spec.PreserveUnknownFields {
		return fmt.Sprintf("CRD %s sets spec.preserveUnknownFields: true; webhook conversion needs structural schemas: set it to false", crd.Name)
	}
	if !slices.ContainsFunc(def.AdmissionReviewVersions, func(v string) bool { return v == "v1" || v == "v1beta1" }) {
		return fmt.Sprintf("webhook %s lists no ConversionReview version the API server speaks (v1, v1beta1)", def.GenerateName)
	}
	return ""
}

func reasonForUnusable(crd *apiextensionsv1.CustomResourceDefinition) string {
	if crd.Spec.PreserveUnknownFields {
		return v1alpha1.ReasonPreserveUnknownFields
	}
	return v1alpha1.ReasonConversionFailed
}
