package crontab

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/hookwright/hookwright/pkg/conversion"
)

// The paths crontab-webhook serves, on one HTTPS port with one serving
// certificate, as a kubebuilder manager does. The admission paths follow
// kubebuilder's /validate-<group>-<version>-<kind> without the version:
// each handler takes both served versions, so a v1 request is checked in
// v1's terms (cronSpec) and a v2 request in v2's (the five fields),
// without a conversion before the call.
const (
	ConvertPath  = "/convert"
	ValidatePath = "/validate-stable-example-com-crontab"
	MutatePath   = "/mutate-stable-example-com-crontab"
)

// DefaultImage is the spec.image the mutating webhook sets on a CronTab
// whose spec has none (or an empty one).
const DefaultImage = "example.com/crontab-runner:1.0"

// Versions are the CronTab versions the admission webhooks handle; the
// WebhookInstall's rules list the same.
var Versions = []string{"v1", "v2"}

// NewHandler serves the example's three webhooks: conversion (the kit's
// handler) at ConvertPath, validation at ValidatePath and defaulting at
// MutatePath (controller-runtime's admission webhooks). It bounds nothing:
// cmd/crontab-webhook puts it behind its server's limits.
func NewHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(ConvertPath, conversion.NewWebhook(Converter()))
	mux.Handle(ValidatePath, ValidatingWebhook())
	mux.Handle(MutatePath, MutatingWebhook())
	return mux
}

// ValidatingWebhook answers AdmissionReviews with Validator.
func ValidatingWebhook() *admission.Webhook {
	// The decoder needs a scheme, though it decodes into Unstructured
	// without one.
	return admission.WithValidator[*unstructured.Unstructured](runtime.NewScheme(), Validator{})
}

// MutatingWebhook answers AdmissionReviews with Defaulter's JSON patch.
func MutatingWebhook() *admission.Webhook {
	return admission.WithDefaulter[*unstructured.Unstructured](runtime.NewScheme(), Defaulter{})
}

// Validator refuses a CronTab whose schedule is missing or invalid (see
// Validate), with a message saying what is wrong and giving a valid value.
type Validator struct{}

var _ admission.Validator[*unstructured.Unstructured] = Validator{}

// ValidateCreate implements admission.Validator.
func (Validator) ValidateCreate(_ context.Context, obj *unstructured.Unstructured) (admission.Warnings, error) {
	return nil, invalid(obj, Validate(obj))
}

// ValidateUpdate implements admission.Validator. An update that keeps the
// schedule as it was is allowed even when that schedule is invalid, with
// a warning, as Kubernetes ratchets CRD validation: a CronTab stored
// before this webhook existed can still have its labels, finalizers or
// image changed. Changing the schedule to an invalid one is refused.
func (Validator) ValidateUpdate(_ context.Context, oldObj, obj *unstructured.Unstructured) (admission.Warnings, error) {
	errs := Validate(obj)
	if len(errs) == 0 {
		return nil, nil
	}
	if err := checkKind(obj); err == nil && reflect.DeepEqual(schedule(oldObj), schedule(obj)) {
		warnings := make(admission.Warnings, 0, len(errs))
		for _, e := range errs {
			warnings = append(warnings, "unchanged invalid schedule, fix it: "+e.Error())
		}
		return warnings, nil
	}
	return nil, invalid(obj, errs)
}

// ValidateDelete implements admission.Validator: deleting is always allowed.
func (Validator) ValidateDelete(context.Context, *unstructured.Unstructured) (admission.Warnings, error) {
	return nil, nil
}

// invalid is the API error for errs (nil when there are none): 422
// Invalid with one cause per field, as the API server's own validation
// answers. The API server passes its message on to the client.
func invalid(obj *unstructured.Unstructured, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	name := obj.GetName()
	if name == "" {
		name = obj.GetGenerateName()
	}
	return apierrors.NewInvalid(schema.GroupKind{Group: Group, Kind: Kind}, name, errs)
}

// Validate returns what is wrong with a CronTab's schedule, in the terms
// of its version: v1's spec.cronSpec, or v2's five fields. A CronTab
// without a spec passes: the converter carries it over as it is (and
// Hookwright's verification dry-run creates exactly such an object). A
// spec without a schedule does not: the converter cannot convert it.
func Validate(obj *unstructured.Unstructured) field.ErrorList {
	if err := checkKind(obj); err != nil {
		return field.ErrorList{err}
	}
	specPath := field.NewPath("spec")
	raw, found := obj.Object["spec"]
	if !found || raw == nil {
		return nil
	}
	spec, ok := raw.(map[string]any)
	if !ok {
		return field.ErrorList{field.TypeInvalid(specPath, raw, "must be an object")}
	}
	if spec == nil {
		return nil
	}
	if obj.GroupVersionKind().Version == "v1" {
		return validateV1(spec, specPath)
	}
	return validateV2(spec, specPath)
}

func validateV1(spec map[string]any, specPath *field.Path) field.ErrorList {
	path := specPath.Child("cronSpec")
	example := fmt.Sprintf("for example %q (%s)", ScheduleExample, ScheduleExampleMeaning)
	raw, found := spec["cronSpec"]
	if !found {
		return field.ErrorList{field.Required(path, "a CronTab with a spec needs a schedule: five fields, minute hour day-of-month month day-of-week, "+example)}
	}
	value, ok := raw.(string)
	if !ok {
		return field.ErrorList{field.TypeInvalid(path, raw, "must be a string, "+example)}
	}
	if err := ValidateCronSpec(value); err != nil {
		return field.ErrorList{field.Invalid(path, value, err.Error()+"; a valid cronSpec is "+example)}
	}
	return nil
}

func validateV2(spec map[string]any, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range scheduleFields {
		path := specPath.Child(f.v2Name)
		raw, found := spec[f.v2Name]
		if !found {
			errs = append(errs, field.Required(path, fmt.Sprintf("a CronTab with a spec needs all five schedule fields, for example %s (%s)", v2Example(), ScheduleExampleMeaning)))
			continue
		}
		value, ok := raw.(string)
		if !ok {
			errs = append(errs, field.TypeInvalid(path, raw, fmt.Sprintf("must be a string, for example %q", f.example)))
			continue
		}
		if strings.ContainsAny(value, " \t\n") {
			errs = append(errs, field.Invalid(path, value, fmt.Sprintf("must be one cron field without spaces, for example %q", f.example)))
			continue
		}
		if err := f.validate(value); err != nil {
			errs = append(errs, field.Invalid(path, value, fmt.Sprintf("%s: %v; a valid %s is for example %q", f.name, err, f.v2Name, f.example)))
		}
	}
	return errs
}

// v2Example is ScheduleExample in v2's fields.
func v2Example() string {
	parts := strings.Fields(ScheduleExample)
	out := make([]string, len(parts))
	for i, f := range scheduleFields {
		out[i] = fmt.Sprintf("%s: %q", f.v2Name, parts[i])
	}
	return strings.Join(out, ", ")
}

// checkKind refuses an object the webhooks do not handle: a WebhookInstall
// whose rules send other kinds or versions is misconfigured, and saying so
// beats letting them through unchecked.
func checkKind(obj *unstructured.Unstructured) *field.Error {
	gvk := obj.GroupVersionKind()
	if gvk.Group == Group && gvk.Kind == Kind {
		for _, v := range Versions {
			if gvk.Version == v {
				return nil
			}
		}
	}
	return field.NotSupported(field.NewPath("apiVersion"), obj.GetAPIVersion()+", kind "+obj.GetKind(),
		[]string{Group + "/v1, kind " + Kind, Group + "/v2, kind " + Kind})
}

// schedule is the schedule part of obj's spec in its version, to compare
// an update with the stored object.
func schedule(obj *unstructured.Unstructured) map[string]any {
	spec, _ := obj.Object["spec"].(map[string]any)
	out := map[string]any{}
	for _, name := range []string{"cronSpec", "minute", "hour", "dayOfMonth", "month", "dayOfWeek"} {
		if v, ok := spec[name]; ok {
			out[name] = v
		}
	}
	return out
}

// Defaulter sets CronTab defaults: see SetDefaults.
type Defaulter struct{}

var _ admission.Defaulter[*unstructured.Unstructured] = Defaulter{}

// Default implements admission.Defaulter.
func (Defaulter) Default(_ context.Context, obj *unstructured.Unstructured) error {
	if err := checkKind(obj); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	SetDefaults(obj)
	return nil
}

// SetDefaults sets spec.image to DefaultImage when a CronTab has a spec
// without an image (absent or empty), in either version, and reports
// whether it changed obj. A CronTab without a spec is left alone: giving
// it a spec would make it one without a schedule, which Validate refuses.
// It is idempotent, as a mutating webhook must be (the API server may
// call it again after other webhooks).
func SetDefaults(obj *unstructured.Unstructured) bool {
	spec, _ := obj.Object["spec"].(map[string]any)
	if spec == nil {
		return false
	}
	if image, present := spec["image"]; present && image != "" {
		return false // set, or not a string, which the schema refuses
	}
	spec["image"] = DefaultImage
	return true
}
