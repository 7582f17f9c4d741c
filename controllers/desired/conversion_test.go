package desired

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

func TestConversion(t *testing.T) {
	tests := []struct {
		name     string
		def      func(*v1alpha1.WebhookDefinition)
		wantPath string
		wantPort int32
		wantCRV  []string
	}{
		{
			name:     "defaults: path / and port 443",
			def:      func(*v1alpha1.WebhookDefinition) {},
			wantPath: "/",
			wantPort: 443,
			wantCRV:  []string{"v1"},
		},
		{
			name: "webhookPath and containerPort kept",
			def: func(d *v1alpha1.WebhookDefinition) {
				d.WebhookPath = ptr.To("/convert")
				d.ContainerPort = 9443
				d.TargetPort = ptr.To(intstr.FromInt32(8443)) // the Service maps it; the CRD calls the Service port
				d.AdmissionReviewVersions = []string{"v1", "v1beta1"}
			},
			wantPath: "/convert",
			wantPort: 9443,
			wantCRV:  []string{"v1", "v1beta1"},
		},
		{
			name:     "explicit root path",
			def:      func(d *v1alpha1.WebhookDefinition) { d.WebhookPath = ptr.To("/"); d.ContainerPort = 443 },
			wantPath: "/",
			wantPort: 443,
			wantCRV:  []string{"v1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := newDefinition("crontab-conversion", "crontab.webhook")
			tt.def(&def)
			caBundle := []byte("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n")
			got := Conversion("ns", "crontab-webhook-service", def, caBundle)

			if got.Strategy != "Webhook" {
				t.Errorf("strategy = %q, want Webhook", got.Strategy)
			}
			if got.Webhook == nil || got.Webhook.ClientConfig == nil || got.Webhook.ClientConfig.Service == nil {
				t.Fatalf("conversion has no webhook service: %+v", got)
			}
			cc := got.Webhook.ClientConfig
			if cc.URL != nil {
				t.Errorf("clientConfig.url = %q, want unset (service reference)", *cc.URL)
			}
			svc := cc.Service
			if svc.Namespace != "ns" || svc.Name != "crontab-webhook-service" {
				t.Errorf("service = %s/%s, want ns/crontab-webhook-service", svc.Namespace, svc.Name)
			}
			if svc.Path == nil || *svc.Path != tt.wantPath {
				t.Errorf("service path = %v, want %q", ptr.Deref(svc.Path, "<nil>"), tt.wantPath)
			}
			if svc.Port == nil || *svc.Port != tt.wantPort {
				t.Errorf("service port = %v, want %d", svc.Port, tt.wantPort)
			}
			if string(cc.CABundle) != string(caBundle) {
				t.Errorf("caBundle = %q, want %q", cc.CABundle, caBundle)
			}
			if !reflect.DeepEqual(got.Webhook.ConversionReviewVersions, tt.wantCRV) {
				t.Errorf("conversionReviewVersions = %v, want %v", got.Webhook.ConversionReviewVersions, tt.wantCRV)
			}

			// The versions are a copy: changing the result leaves the
			// definition (part of the install object) alone.
			want := append([]string(nil), def.AdmissionReviewVersions...)
			got.Webhook.ConversionReviewVersions[0] = "mutated"
			if !reflect.DeepEqual(def.AdmissionReviewVersions, want) {
				t.Errorf("mutating conversionReviewVersions changed the definition's admissionReviewVersions to %v", def.AdmissionReviewVersions)
			}
		})
	}
}

func TestConversionPathIsNotShared(t *testing.T) {
	// The path pointer must not alias the definition's webhookPath.
	def := newDefinition("a", "d")
	def.WebhookPath = ptr.To("/convert")
	got := Conversion("ns", "svc", def, nil)
	*got.Webhook.ClientConfig.Service.Path = "/mutated"
	if *def.WebhookPath != "/convert" {
		t.Errorf("mutating the conversion's path changed the definition's webhookPath to %q", *def.WebhookPath)
	}
}
