package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

// Deletion order: an install's admission configurations go first, and its
// Deployments, Services and Secrets only once a live read confirms the
// configurations are gone. A configuration with failurePolicy Fail that
// outlived the Service it calls would refuse every request it matches.

// dropAdmission deletes the install's admission configurations that the
// cache holds (only Hookwright's are cached), without confirming: for a
// deleted install, whose webhooks stop intercepting at once, and for a
// kind the install no longer declares. letGo and the Replaced transition
// confirm with confirmAdmissionGone before removing workloads.
func (r *WebhookInstallReconciler) dropAdmission(ctx context.Context, install *v1alpha1.WebhookInstall, why string) error {
	for _, kind := range admissionKinds {
		cfg, err := r.readAdmissionConfig(ctx, install, kind, false)
		if err != nil {
			return err
		}
		if cfg.live != nil && cfg.ours {
			if err := r.deleteAdmissionConfig(ctx, install, cfg, why); err != nil {
				return err
			}
		}
	}
	return nil
}

// confirmAdmissionGone deletes what is left of the install's admission
// configurations and confirms, reading live, that none is left. It returns
// a description of what is left ("" when none): the workloads wait.
func (r *WebhookInstallReconciler) confirmAdmissionGone(ctx context.Context, install *v1alpha1.WebhookInstall, why string) (string, error) {
	for _, kind := range admissionKinds {
		cfg, err := r.liveAdmissionConfig(ctx, install, kind)
		if err != nil {
			return "", err
		}
		if cfg.live == nil || !cfg.ours {
			continue
		}
		if err := r.deleteAdmissionConfig(ctx, install, cfg, why); err != nil {
			return "", err
		}
		if cfg, err = r.liveAdmissionConfig(ctx, install, kind); err != nil {
			return "", err
		}
		if cfg.live != nil && cfg.ours {
			return fmt.Sprintf("%s %s is being deleted (finalizers %v)", configKind(kind), cfg.name, cfg.live.GetFinalizers()), nil
		}
	}
	return "", nil
}

// liveAdmissionConfig reads the install's configuration of kind live.
func (r *WebhookInstallReconciler) liveAdmissionConfig(ctx context.Context, install *v1alpha1.WebhookInstall, kind admissionKind) (*admissionConfig, error) {
	cfg := &admissionConfig{kind: kind, name: desired.AdmissionConfigurationName(install)}
	obj := newAdmissionObject(kind)
	switch err := r.APIReader.Get(ctx, client.ObjectKey{Name: cfg.name}, obj); {
	case apierrors.IsNotFound(err):
		return cfg, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s %s: %w", configKind(kind), cfg.name, err)
	}
	cfg.live, cfg.ours = obj, ownedBy(obj, install)
	return cfg, nil
}

// deleteAdmissionConfig deletes cfg, which is the install's, with its UID
// and resourceVersion as preconditions; why completes "WebhookInstall
// <ns>/<name> ..." in the Event.
func (r *WebhookInstallReconciler) deleteAdmissionConfig(ctx context.Context, install *v1alpha1.WebhookInstall, cfg *admissionConfig, why string) error {
	uid, rv := cfg.live.GetUID(), cfg.live.GetResourceVersion()
	err := r.Client.Delete(ctx, cfg.live, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting %s %s: %w", configKind(cfg.kind), cfg.name, err)
	}
	r.Recorder.Eventf(install, cfg.live, corev1.EventTypeNormal, "DeletedAdmissionConfiguration", "Delete",
		"Deleted %s %s: WebhookInstall %s %s", configKind(cfg.kind), cfg.name, installRef(install), why)
	return nil
}
