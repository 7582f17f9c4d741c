package desired

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
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

// releasedDNS1035 is dns1035 as released up to 77796ec
// (hack/previous-release), verbatim: a 32-bit hash suffix.
func releasedDNS1035(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" || out[0] < 'a' || out[0] > 'z' {
		out = "w-" + out
	}
	if len(out) > 63 {
		sum := sha256.Sum256([]byte(name))
		out = strings.TrimRight(out[:54], "-") + "-" + hex.EncodeToString(sum[:4])
	}
	return out
}

// TestNamesOfAnEarlierReleaseAreKept: an install whose Service an earlier
// release named keeps that Service and its Secrets after an upgrade
// (renaming them would reissue its certificates and re-point its CRDs).
func TestNamesOfAnEarlierReleaseAreKept(t *testing.T) {
	long := "widget-conversion-webhook-deployment-with-a-rather-long-name"
	released := releasedDNS1035(strings.ReplaceAll(long, ".", "-") + "-service")
	if released == ServiceName(long) {
		t.Fatalf("the test needs a name both releases cut differently")
	}
	upgraded := &v1alpha1.WebhookInstall{Status: v1alpha1.WebhookInstallStatus{Services: []v1alpha1.ServiceStatus{{Name: released}}}}
	if got := InstallServiceName(upgraded, long); got != released {
		t.Errorf("InstallServiceName of an install the released version named = %q, want its Service %q", got, released)
	}
	if got, want := CASecretName(released), releasedDNS1035(released+"-ca"); got != want {
		t.Errorf("CASecretName(%q) = %q, want the released name %q", released, got, want)
	}
	if got, want := ServingSecretName(released), releasedDNS1035(released+"-cert"); got != want {
		t.Errorf("ServingSecretName(%q) = %q, want the released name %q", released, got, want)
	}
	if !IsServiceOf(long, released) || !IsServiceOf(long, ServiceName(long)) || IsServiceOf("other", released) {
		t.Errorf("IsServiceOf must know both derivations of the deployment's Service, and only them")
	}

	fresh := &v1alpha1.WebhookInstall{}
	current := InstallServiceName(fresh, long)
	if current != ServiceName(long) {
		t.Errorf("a new install gets ServiceName: %q, want %q", current, ServiceName(long))
	}
	for _, secret := range []string{CASecretName(current), ServingSecretName(current)} {
		if !regexp.MustCompile(`-[0-9a-f]{16}$`).MatchString(secret) || len(secret) > 63 {
			t.Errorf("a new install's Secret %q must keep a 64-bit hash", secret)
		}
	}
	for _, short := range []string{"crontab-webhook", "crontab-webhook-deadbeef"} {
		svc := ServiceName(short)
		if CASecretName(svc) != releasedDNS1035(svc+"-ca") || ServingSecretName(svc) != releasedDNS1035(svc+"-cert") {
			t.Errorf("short names are the same in both releases: %q", svc)
		}
	}
}
