package desired

import (
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestServiceName(t *testing.T) {
	tests := []struct {
		name       string
		deployment string
		want       string
	}{
		{"plain", "crontab-webhook", "crontab-webhook-service"},
		// OLM named the Service and the CRD's clientConfig differently for
		// dotted deployments; Hookwright derives one DNS-1035 name.
		{"dotted", "crontab.webhook.v2", "crontab-webhook-v2-service"},
		{"uppercase and underscores", "CronTab_Webhook", "crontab-webhook-service"},
		{"other invalid characters", "cron tab/webhook:v1", "cron-tab-webhook-v1-service"},
		{"leading digit gets a letter prefix", "1crontab", "w-1crontab-service"},
		{"leading dash trimmed", "-crontab", "crontab-service"},
		{"leading dot trimmed", ".crontab", "crontab-service"},
		// 55 + len("-service") = 63: at the limit, kept verbatim.
		{"exactly 63 characters", strings.Repeat("a", 55), strings.Repeat("a", 55) + "-service"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ServiceName(tt.deployment)
			if got != tt.want {
				t.Errorf("ServiceName(%q) = %q, want %q", tt.deployment, got, tt.want)
			}
			if errs := validation.IsDNS1035Label(got); len(errs) > 0 {
				t.Errorf("ServiceName(%q) = %q is not a DNS-1035 label: %v", tt.deployment, got, errs)
			}
		})
	}
}

func TestServiceNameLong(t *testing.T) {
	long := strings.Repeat("webhook.", 12) // 96 characters, dotted
	tests := []struct {
		name string
		a, b string
	}{
		{"differ in last character", long + "alpha", long + "alphb"},
		{"differ in suffix", strings.Repeat("a", 100) + "-v1", strings.Repeat("a", 100) + "-v2"},
		{"uppercase, underscores, leading digit", "9_" + strings.ToUpper(long) + "X", "9_" + strings.ToUpper(long) + "Y"},
		// Truncating at 54 lands right after a dash: the dash must not
		// double up with the hash separator into an invalid label.
		{"cut at a dash", strings.Repeat("a", 53) + "-" + strings.Repeat("b", 20) + "1", strings.Repeat("a", 53) + "-" + strings.Repeat("b", 20) + "2"},
		{"just over the limit", strings.Repeat("a", 56), strings.Repeat("a", 55) + "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ga, gb := ServiceName(tt.a), ServiceName(tt.b)
			for in, got := range map[string]string{tt.a: ga, tt.b: gb} {
				if len(got) > 63 {
					t.Errorf("ServiceName(%q) = %q has %d characters, want <= 63", in, got, len(got))
				}
				if errs := validation.IsDNS1035Label(got); len(errs) > 0 {
					t.Errorf("ServiceName(%q) = %q is not a DNS-1035 label: %v", in, got, errs)
				}
				if again := ServiceName(in); again != got {
					t.Errorf("ServiceName(%q) not stable: %q then %q", in, got, again)
				}
			}
			if ga == gb {
				t.Errorf("ServiceName(%q) and ServiceName(%q) are both %q: distinct long names must stay distinct", tt.a, tt.b, ga)
			}
		})
	}
}

func TestServiceNameLongKeepsA64BitHash(t *testing.T) {
	got := ServiceName(strings.Repeat("webhook.", 12))
	if !regexp.MustCompile(`-[0-9a-f]{16}$`).MatchString(got) {
		t.Fatalf("ServiceName of a long name = %q, want it to end in 16 hex digits (64 bits of hash)", got)
	}
}

func TestSecretNames(t *testing.T) {
	services := []string{
		"crontab-webhook-service",
		ServiceName("crontab.webhook.v2"),
		ServiceName(strings.Repeat("x", 55)),            // exactly 63
		ServiceName(strings.Repeat("long.webhook", 10)), // hashed
	}
	for _, service := range services {
		t.Run(service, func(t *testing.T) {
			serving, ca := ServingSecretName(service), CASecretName(service)
			for _, got := range []string{serving, ca} {
				if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
					t.Errorf("secret name %q for service %q is not a DNS-1123 subdomain: %v", got, service, errs)
				}
			}
			if serving == ca {
				t.Errorf("ServingSecretName and CASecretName of %q are both %q: pods would mount the CA key", service, serving)
			}
			if serving == service || ca == service {
				t.Errorf("secret names %q/%q reuse the service name %q", serving, ca, service)
			}
		})
	}

	if got, want := ServingSecretName("crontab-webhook-service"), "crontab-webhook-service-cert"; got != want {
		t.Errorf("ServingSecretName = %q, want %q", got, want)
	}
	if got, want := CASecretName("crontab-webhook-service"), "crontab-webhook-service-ca"; got != want {
		t.Errorf("CASecretName = %q, want %q", got, want)
	}
}
