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
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/controllers/rotation"
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
		c.bundleOnly = onlyCABundleDiffers(c.crd.Spec.Conversion, want)
		publishes := publishesNewCA(s, c, want)
		var written func(error)
		if publishes {
			written = r.echoes.writing(echoCRD, applied, r.installsForCRD(ctx, c.crd)...)
		}
		err := r.apply(ctx, applied)
		if written != nil {
			written(err)
		}
		if err != nil {
			c.state, c.message = v1alpha1.ConversionFailed, err.Error()
			return err
		}
		// No Event per write: the first write is told by the install's
		// phase Event (Succeeded or Failed), a caBundle change by
		// the rotation's Events with both fingerprints, a restore by
		// ConversionDriftRestored and a hand-over by TookOver.
		c.crd.Spec.Conversion, c.state, c.written = want, v1alpha1.ConversionConfigured, true
		c.writtenVersion = applied.GetResourceVersion()
		noteConversionWrite(c.name, c.writtenVersion, time.Now())
		if publishes {
			c.echoDropped = true
			s.retryWithin(r.untilTrustSettles(applied))
		}
	}
	return nil
}

// publishesNewCA: writing want adds a CA to the caBundle of a CRD that
// stays verified through the write (rotationRewrite) and removes none:
// the first step of an ordered CA rotation. Its next step, the promotion,
// is due once the caBundle has trusted the new CA for
// rotation.SettleTime, which the pass schedules; the write's echo wakes
// no pass (own_echo.go).
func publishesNewCA(s *installState, c *crdState, want *apiextensionsv1.CustomResourceConversion) bool {
	if !rotationRewrite(s, c) { // c.bundleOnly included
		return false
	}
	have, err := certs.ParseCerts(c.crd.Spec.Conversion.Webhook.ClientConfig.CABundle)
	if err != nil {
		return false
	}
	for _, ca := range have {
		if !certs.BundleContains(want.Webhook.ClientConfig.CABundle, ca) {
			return false
		}
	}
	return len(want.Webhook.ClientConfig.CABundle) > len(c.crd.Spec.Conversion.Webhook.ClientConfig.CABundle)
}

// untilTrustSettles is how long after now the caBundle applied (as the
// API server returned it) will have been in place for
// rotation.SettleTime, as trustedFor counts it.
func (r *WebhookInstallReconciler) untilTrustSettles(applied client.Object) time.Duration {
	since := appliedSince(applied.GetManagedFields())
	if since.IsZero() {
		since = r.Clock.Now().Add(time.Second)
	}
	return max(since.Add(rotation.SettleTime).Sub(r.Clock.Now()), time.Millisecond)
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
