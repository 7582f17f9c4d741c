// Package conversion is the kit for writing a CRD conversion webhook.
//
// An author registers conversion functions per group and kind on a
// Converter, either direct version pairs or a hub with spokes, and serves
// them with Serve (or mounts NewWebhook in their own server):
//
//	crontab := conversion.NewConverter("stable.example.com", "CronTab").
//		AddHub("v2").
//		AddSpoke("v1", v1ToV2, v2ToV1)
//	err := conversion.Serve(ctx, conversion.NewWebhook(crontab), conversion.Options{})
//
// The webhook answers apiextensions.k8s.io/v1 and v1beta1 ConversionReviews
// and applies the API server's own rules before answering (only labels and
// annotations of metadata may change; name, namespace, uid and kind must
// not), so a mistake in a conversion function is reported by the webhook,
// naming the object, instead of as an opaque API server error on a LIST.
//
// Subpackage conversiontest has round-trip and random-object helpers for
// the author's tests. This package must not import Hookwright's controllers
// or internal packages: it is linked into other people's webhooks.
package conversion
