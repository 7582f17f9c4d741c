package controllers

import (
	"testing"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/internal/testfixtures"
)

func TestAuthorityRefusesOutOfBounds(t *testing.T) {
	shipped := Authority{Namespace: "hookwright-system", ServiceAccount: "hookwright-manager"}
	install := func(ns string, change func(*v1alpha1.WebhookInstall)) *v1alpha1.WebhookInstall {
		whi := testfixtures.WidgetInstall(ns, "widgets", "widget-webhook", "widgets.example.com")
		if change != nil {
			change(whi)
		}
		return whi
	}
	runAs := func(sa string) func(*v1alpha1.WebhookInstall) {
		return func(whi *v1alpha1.WebhookInstall) {
			whi.Spec.Install.Spec.Deployments[0].Spec.Template.Spec.ServiceAccountName = sa
		}
	}
	converts := func(crd string) func(*v1alpha1.WebhookInstall) {
		return func(whi *v1alpha1.WebhookInstall) {
			whi.Spec.WebhookDefinitions[0].ConversionCRDs = []string{crd}
		}
	}
	tests := []struct {
		name      string
		authority Authority
		install   *v1alpha1.WebhookInstall
		reason    string // "" means allowed
	}{
		{"an ordinary namespace", shipped, install("team-a", nil), ""},
		{"Hookwright's own namespace", shipped, install("hookwright-system", nil), v1alpha1.ReasonNamespaceNotAllowed},
		{"kube-system", shipped, install("kube-system", nil), v1alpha1.ReasonNamespaceNotAllowed},
		{"kube-public", shipped, install("kube-public", nil), v1alpha1.ReasonNamespaceNotAllowed},
		{"a namespace that merely starts with kube", shipped, install("kubeflow", nil), ""},
		{"kube-system allowed by the flag", Authority{Namespace: "hookwright-system", ServiceAccount: "hookwright-manager", AllowSystemNamespaces: true}, install("kube-system", nil), ""},
		{"Hookwright's ServiceAccount in its namespace, allowed by the flag", Authority{Namespace: "hookwright-system", ServiceAccount: "hookwright-manager", AllowSystemNamespaces: true},
			install("hookwright-system", runAs("hookwright-manager")), v1alpha1.ReasonServiceAccountNotAllowed},
		{"Hookwright's ServiceAccount by the deprecated field", Authority{Namespace: "hookwright-system", ServiceAccount: "hookwright-manager", AllowSystemNamespaces: true},
			install("hookwright-system", func(whi *v1alpha1.WebhookInstall) {
				pod := &whi.Spec.Install.Spec.Deployments[0].Spec.Template.Spec
				pod.ServiceAccountName, pod.DeprecatedServiceAccount = "", "hookwright-manager"
			}), v1alpha1.ReasonServiceAccountNotAllowed},
		{"a ServiceAccount of the same name in another namespace", shipped, install("team-a", runAs("hookwright-manager")), ""},
		{"Hookwright's own CRD", shipped, install("team-a", converts("webhookinstalls.operators.hookwright.dev")), v1alpha1.ReasonCRDNotAllowed},
		{"another CRD of Hookwright's group", shipped, install("team-a", converts("futures.operators.hookwright.dev")), v1alpha1.ReasonCRDNotAllowed},
		{"unknown own namespace refuses only kube-*", Authority{}, install("hookwright-system", nil), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &installState{install: tt.install, webhooks: desired.Webhooks(tt.install)}
			tt.authority.refuseOutOfBounds(s)
			switch {
			case tt.reason == "" && s.halt != nil:
				t.Fatalf("refused (%s: %s), want allowed", s.halt.reason, s.halt.message)
			case tt.reason != "" && s.halt == nil:
				t.Fatalf("allowed, want refused with %s", tt.reason)
			case tt.reason != "" && (s.halt.reason != tt.reason || s.halt.phase != v1alpha1.PhaseFailed):
				t.Fatalf("refused with %s/%s, want Failed/%s", s.halt.phase, s.halt.reason, tt.reason)
			}
		})
	}
}
