package controllers

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

// verifyDelay is when a pass that wrote a configuration and left its
// verification to a later pass looks again, should no watch event wake it
// sooner: verifying before the API server has loaded the write could
// convert through the previous configuration and prove nothing.
const verifyDelay = 2 * time.Second

// retrySoon is the pause before retrying after a lost optimistic-concurrency race.
const retrySoon = 200 * time.Millisecond

// configureConversion writes, for every conversion CRD, only the
// conversion fields (strategy, service, path, port, caBundle,
// conversionReviewVersions) with server-side apply, and only when they
// differ from what the CRD has.
func (r *WebhookInstallReconciler) configureConversion(ctx context.Context, s *installState) error {
	for _, c := range s.crds {
		if c.handover {
			if taken, err := r.takeOver(ctx, s, c); !taken || err != nil {
				return err
			}
		}
		svc := s.services[c.webhook.Service]
		want := desired.Conversion(s.install.Namespace, c.webhook.Service, c.definition, svc.bundle())
		if conversionEqual(c.crd.Spec.Conversion, want) {
			c.state = v1alpha1.ConversionConfigured
			continue
		}
		if wasConfiguredByUs(s, c) {
			if others := otherConversionManagers(c.crd); len(others) > 0 {
				c.driftManager = strings.Join(others, ",")
				conversionDriftRestores.Inc()
				r.Recorder.Eventf(c.crd, s.install, corev1.EventTypeWarning, "ConversionDriftRestored", "Restore",
					"spec.conversion of CRD %s was changed by field manager %q; Hookwright restored it (owner: WebhookInstall %s)", c.name, c.driftManager, installRef(s.install))
			}
		}
		applied := conversionApplyObject(c.name, want)
		if err := r.apply(ctx, applied); err != nil {
			c.state, c.message = v1alpha1.ConversionFailed, err.Error()
			return err
		}
		// No Event per write: the first write is told by the install's
		// phase Event (Succeeded or Failed), a caBundle change by
		// the rotation's Events with both fingerprints, a restore by
		// ConversionDriftRestored and a hand-over by TookOver.
		c.bundleOnly = onlyCABundleDiffers(c.crd.Spec.Conversion, want)
		c.crd.Spec.Conversion, c.state, c.written = want, v1alpha1.ConversionConfigured, true
		c.writtenVersion = applied.GetResourceVersion()
		noteConversionWrite(c.name, c.writtenVersion, time.Now())
	}
	return nil
}

// conversionApplyObject is the server-side apply body that sets only
// spec.conversion of a CRD: a typed CRD would also send its zero-valued
// required fields and claim them.
// With conv nil the body is empty: applying it removes every field
// Hookwright owned on the CRD, and the API server defaults the strategy
// back to None.
func conversionApplyObject(name string, conv *apiextensionsv1.CustomResourceConversion) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": name},
	}}
	if conv != nil {
		raw, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(conv)
		u.Object["spec"] = map[string]any{"conversion": raw}
	}
	return u
}

// onlyCABundleDiffers: have is the webhook conversion want describes, but
// for the caBundle it trusts.
func onlyCABundleDiffers(have, want *apiextensionsv1.CustomResourceConversion) bool {
	if have == nil || have.Webhook == nil || have.Webhook.ClientConfig == nil {
		return false
	}
	sameBundle := want.DeepCopy()
	sameBundle.Webhook.ClientConfig.CABundle = have.Webhook.ClientConfig.CABundle
	return conversionEqual(have, sameBundle)
}

func conversionEqual(have, want *apiextensionsv1.CustomResourceConversion) bool {
	if have == nil || have.Strategy != want.Strategy || have.Webhook == nil || have.Webhook.ClientConfig == nil {
		return false
	}
	h, w := have.Webhook.ClientConfig, want.Webhook.ClientConfig
	return h.URL == nil && h.Service != nil &&
		h.Service.Namespace == w.Service.Namespace && h.Service.Name == w.Service.Name &&
		ptr.Deref(h.Service.Path, "") == ptr.Deref(w.Service.Path, "") &&
		ptr.Deref(h.Service.Port, 443) == ptr.Deref(w.Service.Port, 443) &&
		bytes.Equal(h.CABundle, w.CABundle) &&
		slices.Equal(have.Webhook.ConversionReviewVersions, want.Webhook.ConversionReviewVersions)
}
