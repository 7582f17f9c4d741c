package importcsv

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden WebhookInstall files in testdata")

const (
	bundleDir  = "testdata/bundle"
	bundleCSV  = "testdata/bundle/manifests/crontab-operator.clusterserviceversion.yaml"
	clusterCSV = "testdata/csv-from-cluster.yaml"
	// adminOnlyCSV has a validating and a mutating webhook and no conversion.
	adminOnlyCSV = "testdata/no-conversion.clusterserviceversion.yaml"
	secretText   = "fixture-secret-value-never-copied" // in the bundle's Secret
)

func run(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Main(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// body drops the leading comment lines of an output.
func body(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// checkOutput fails unless out is a WebhookInstall that strict-decodes
// into the v1alpha1 types without loss and passes the CRD's admission
// rules; it returns the decoded install.
func checkOutput(t *testing.T, out string) *v1alpha1.WebhookInstall {
	t.Helper()
	var whi v1alpha1.WebhookInstall
	if err := yaml.UnmarshalStrict([]byte(out), &whi); err != nil {
		t.Fatalf("output does not strict-decode as a WebhookInstall: %v\n%s", err, out)
	}
	if whi.APIVersion != v1alpha1.GroupVersion.String() || whi.Kind != "WebhookInstall" {
		t.Errorf("output is %s %s, want %s WebhookInstall", whi.APIVersion, whi.Kind, v1alpha1.GroupVersion)
	}
	if errs := admissionErrors(t, []byte(out)); len(errs) > 0 {
		t.Errorf("the API server would reject the output: %v\n%s", errs.ToAggregate(), out)
	}
	b := body(out)
	for _, banned := range []string{"olm.", "operatorframework.io", "operators.coreos.com", secretText, "webhook-server-cert", "status:", "creationTimestamp"} {
		if strings.Contains(b, banned) {
			t.Errorf("output contains %q:\n%s", banned, b)
		}
	}
	return &whi
}

func TestGolden(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		golden string
	}{
		{"bundle directory", []string{bundleDir}, "testdata/crontab.webhookinstall.yaml"},
		{"CSV exported from a cluster", []string{clusterCSV}, "testdata/crontab-from-cluster.webhookinstall.yaml"},
		{"CSV with admission webhooks only", []string{adminOnlyCSV, "--namespace", "policy"}, "testdata/policy.webhookinstall.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := run(tc.args...)
			if code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
			if *update {
				if err := os.WriteFile(tc.golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(tc.golden)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/importcsv/ -update)", err)
			}
			if diff := cmp.Diff(string(want), out); diff != "" {
				t.Errorf("output differs from %s (-want +got; go test ./internal/importcsv/ -update rewrites it):\n%s", tc.golden, diff)
			}
			checkOutput(t, out)
		})
	}
}

// TestRoundTrip checks that rendering loses nothing: the output decodes
// strictly back into the install Convert made.
func TestRoundTrip(t *testing.T) {
	for _, path := range []string{bundleDir, clusterCSV} {
		in, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Convert(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := Render(res, in.CSV.Name)
		if err != nil {
			t.Fatal(err)
		}
		got := checkOutput(t, string(out))
		if !equality.Semantic.DeepEqual(got, res.Install) {
			t.Errorf("%s: the rendered install decodes differently:\n%s", path, cmp.Diff(res.Install, got))
		}
	}
}

func TestCommand(t *testing.T) {
	dir := t.TempDir()
	noSuggestion := filepath.Join(dir, "no-namespace.yaml")
	csv, err := os.ReadFile(bundleCSV)
	if err != nil {
		t.Fatal(err)
	}
	csv = bytes.Replace(csv, []byte("    operatorframework.io/suggested-namespace: crontab-system\n"), nil, 1)
	if err := os.WriteFile(noSuggestion, csv, 0o644); err != nil {
		t.Fatal(err)
	}
	outFile := filepath.Join(dir, "out", "whi.yaml")
	if err := os.Mkdir(filepath.Dir(outFile), 0o755); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name       string
		args       []string
		code       int
		stdout     []string // substrings
		stderr     []string // substrings
		noWarnings []string // substrings stderr must not have
	}{
		{
			name: "bundle directory",
			args: []string{bundleDir},
			stdout: []string{"name: crontab-operator\n", "namespace: crontab-system\n", "version: 1.1.0\n", "displayName: CronTab Operator\n",
				"generateName: ccrontabs.kb.io\n", "generateName: vcrontab.kb.io\n", "generateName: mcrontab.kb.io\n",
				"type: ValidatingAdmissionWebhook\n", "type: MutatingAdmissionWebhook\n", "webhookPath: /mutate-stable-example-com-v2-crontab\n",
				"name: crontab-webhook\n", "name: crontabs.stable.example.com\n"},
			stderr: []string{
				"warning: deployment crontab-controller-manager not carried over: it serves no webhook",
				"warning: owned CRD crontabpolicies.stable.example.com not carried over",
				"warning: replaces crontab-operator.v1.0.0 dropped",
				"warning: deployment crontab-webhook: volume cert (Secret webhook-server-cert at /tmp/k8s-webhook-server/serving-certs) dropped",
				"warning: RBAC of service account crontab-webhook (deployment crontab-webhook) not carried over from install.spec.clusterPermissions",
				"warning: the bundle's CRD crontabs.stable.example.com sets spec.conversion to service system/crontab-webhook-service, not service crontab-system/crontab-webhook-service",
				"warning: other bundle objects not carried over: Service/crontab-operator-metrics-service, Secret/crontab-operator-registry-token",
			},
			noWarnings: []string{"crontab-controller-manager (deployment", secretText, "skipped", "vcrontab", "mcrontab"},
		},
		{
			name:   "bundle manifests directory",
			args:   []string{bundleDir + "/manifests"},
			stdout: []string{"name: crontab-operator\n", "namespace: crontab-system\n"},
		},
		{
			name:   "single CSV file, flags after the argument",
			args:   []string{bundleCSV, "--namespace", "team-a", "--name", "crontab"},
			stdout: []string{"name: crontab\n", "namespace: team-a\n", "generateName: ccrontabs.kb.io\n"},
			stderr: []string{"warning: replaces crontab-operator.v1.0.0 dropped: with --name"},
			// a lone CSV file has no CRDs or other objects to report
			noWarnings: []string{"the bundle's CRD", "other bundle objects"},
		},
		{
			name:   "CSV from a cluster: its namespace wins over the suggested one",
			args:   []string{clusterCSV},
			stdout: []string{"name: crontab-operator\n", "namespace: operators\n"},
		},
		{
			name:       "versioned: full CSV name, replaces kept",
			args:       []string{"--versioned", bundleDir},
			stdout:     []string{"name: crontab-operator.v1.1.0\n", "replaces: crontab-operator.v1.0.0\n"},
			noWarnings: []string{"replaces crontab-operator.v1.0.0"},
		},
		{
			name:   "-o writes a file",
			args:   []string{bundleDir, "-o", outFile},
			stderr: []string{"wrote WebhookInstall crontab-system/crontab-operator to " + outFile},
		},
		{
			name: "CSV with admission webhooks and no conversion webhook",
			args: []string{adminOnlyCSV, "--namespace", "policy"},
			stdout: []string{"name: policy-operator\n", "namespace: policy\n", "generateName: vpolicy.kb.io\n", "generateName: mpolicy.kb.io\n",
				"name: policy-controller-manager\n", "reinvocationPolicy: IfNeeded\n"},
			stderr: []string{"warning: owned CRD policies.policy.example.com not carried over: no conversion webhook converts it"},
		},
		{
			name:   "missing file",
			args:   []string{"testdata/nope.yaml"},
			code:   1,
			stderr: []string{"import-csv: testdata/nope.yaml does not exist: pass a ClusterServiceVersion YAML file or an OLM bundle directory"},
		},
		{
			name:   "file without a CSV",
			args:   []string{bundleDir + "/manifests/stable.example.com_crontabs.yaml"},
			code:   1,
			stderr: []string{"holds no ClusterServiceVersion (found [CustomResourceDefinition/crontabs.stable.example.com])"},
		},
		{
			name:   "directory without a CSV",
			args:   []string{bundleDir + "/metadata"},
			code:   1,
			stderr: []string{"unable to find a csv in bundle directory"},
		},
		{
			name:   "no namespace anywhere",
			args:   []string{noSuggestion},
			code:   2,
			stderr: []string{"no namespace", "pass --namespace"},
		},
		{
			name:   "bad --name",
			args:   []string{bundleDir, "--name", "Crontab_Operator"},
			code:   1,
			stderr: []string{`--name "Crontab_Operator" is not a valid name`},
		},
		{name: "no argument", code: 2, stderr: []string{"pass one CSV file or bundle directory", "usage: hookwright import-csv"}},
		{name: "two arguments", args: []string{bundleDir, clusterCSV}, code: 2, stderr: []string{"pass one CSV file or bundle directory"}},
		{name: "unknown flag", args: []string{"--nmespace", "x", bundleDir}, code: 2, stderr: []string{"flag provided but not defined: -nmespace"}},
		{name: "help", args: []string{"-h"}, code: 0, stderr: []string{"Naming: the install is named after the CSV without its version suffix"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			for _, s := range tc.noWarnings {
				if strings.Contains(stderr, s) {
					t.Errorf("stderr has %q:\n%s", s, stderr)
				}
			}
			if code != 0 && stdout != "" {
				t.Errorf("failed, yet wrote to stdout:\n%s", stdout)
			}
			if code == 0 && stdout != "" {
				checkOutput(t, stdout)
			}
		})
	}
	written, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, stdout, _ := run(bundleDir); string(written) != stdout {
		t.Errorf("-o wrote other than stdout shows:\n%s", written)
	}
}

// TestConvert covers the choices Convert makes, on variations of the
// fixture CSV; every install it returns must pass admission.
func TestConvert(t *testing.T) {
	base, err := Load(bundleDir)
	if err != nil {
		t.Fatal(err)
	}
	conversion := func(name, deployment string, crds ...string) operatorsv1alpha1.WebhookDescription {
		return operatorsv1alpha1.WebhookDescription{
			GenerateName: name, Type: operatorsv1alpha1.ConversionWebhook, DeploymentName: deployment,
			ContainerPort: 443, AdmissionReviewVersions: []string{"v1"}, ConversionCRDs: crds,
		}
	}
	deployment := func(csv *operatorsv1alpha1.ClusterServiceVersion, name string) *operatorsv1alpha1.StrategyDeploymentSpec {
		for i, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
			if d.Name == name {
				return &csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[i]
			}
		}
		t.Fatalf("no deployment %s", name)
		return nil
	}

	cases := []struct {
		name     string
		mutate   func(*Input, *Options)
		err      string                                     // substring; "" for success
		warnings []string                                   // substrings, each in some warning
		check    func(*testing.T, *v1alpha1.WebhookInstall) // optional
	}{
		{
			name: "all three webhook types are kept whole, in CSV order",
			mutate: func(in *Input, _ *Options) {
				// Every admission field set, on a webhook of the other deployment.
				in.CSV.Spec.WebhookDefinitions = append(in.CSV.Spec.WebhookDefinitions, everyAdmissionField())
			},
			check: func(t *testing.T, whi *v1alpha1.WebhookInstall) {
				if got := definitionNames(whi); !slices.Equal(got, []string{"ccrontabs.kb.io", "vcrontab.kb.io", "mcrontab.kb.io", "mpolicy.crontab.example.com"}) {
					t.Errorf("webhookdefinitions %v, want all four", got)
				}
				base, err := Load(bundleDir)
				if err != nil {
					t.Fatal(err)
				}
				want := append(base.CSV.Spec.WebhookDefinitions, everyAdmissionField())
				for i, d := range whi.Spec.WebhookDefinitions {
					if diff := cmp.Diff(want[i], d.ToWebhookDescription()); diff != "" {
						t.Errorf("webhook %s changed (-CSV +install):\n%s", d.GenerateName, diff)
					}
				}
				if got := deploymentNames(whi); !slices.Equal(got, []string{"crontab-controller-manager", "crontab-webhook"}) {
					t.Errorf("deployments %v, want both: each serves a webhook", got)
				}
			},
		},
		{
			name: "an admission webhook without rules",
			mutate: func(in *Input, _ *Options) {
				in.CSV.Spec.WebhookDefinitions[1].Rules = nil
			},
			err: "CSV crontab-operator.v1.1.0, webhook vcrontab.kb.io: an admission webhook needs at least one rule",
		},
		{
			name: "sideEffects Some",
			mutate: func(in *Input, _ *Options) {
				in.CSV.Spec.WebhookDefinitions[2].SideEffects = ptrTo(admissionregistrationv1.SideEffectClassSome)
			},
			err: "webhook mcrontab.kb.io: sideEffects is Some; an admission webhook needs None or NoneOnDryRun: admissionregistration.k8s.io/v1 refuses Some and Unknown",
		},
		{
			name:   "sideEffects unset",
			mutate: func(in *Input, _ *Options) { in.CSV.Spec.WebhookDefinitions[1].SideEffects = nil },
			err:    "webhook vcrontab.kb.io: sideEffects is unset; an admission webhook needs None or NoneOnDryRun",
		},
		{
			name: "a rule with no operations",
			mutate: func(in *Input, _ *Options) {
				in.CSV.Spec.WebhookDefinitions[1].Rules[0].Operations = nil
			},
			err: "webhook vcrontab.kb.io, rule 1: no operations",
		},
		{
			name: "an unknown operation",
			mutate: func(in *Input, _ *Options) {
				in.CSV.Spec.WebhookDefinitions[1].Rules[0].Operations = []admissionregistrationv1.OperationType{"PATCH"}
			},
			err: `webhook vcrontab.kb.io, rule 1: operation "PATCH" is none of CREATE, UPDATE, DELETE, CONNECT and '*'`,
		},
		{
			name: "timeoutSeconds out of range",
			mutate: func(in *Input, _ *Options) {
				in.CSV.Spec.WebhookDefinitions[2].TimeoutSeconds = ptrTo[int32](31)
			},
			err: "webhook mcrontab.kb.io: timeoutSeconds 31 is out of the 1 to 30 the API server allows",
		},
		{
			name:   "an admission webhook named with two DNS segments",
			mutate: func(in *Input, _ *Options) { in.CSV.Spec.WebhookDefinitions[1].GenerateName = "vcrontab.io" },
			err:    "webhook vcrontab.io: an admission webhook's generateName is its webhook name, which the API server requires to be a fully qualified name of at least three DNS segments",
		},
		{
			name: "a webhookPath segment the API server refuses",
			mutate: func(in *Input, _ *Options) {
				in.CSV.Spec.WebhookDefinitions[1].WebhookPath = ptrTo("/validate_CronTab")
			},
			err: `webhook vcrontab.kb.io: webhookPath "/validate_CronTab": each segment must be a DNS subdomain`,
		},
		{
			name: "fields OLM ignores for a type are dropped, each named",
			mutate: func(in *Input, _ *Options) {
				in.CSV.Spec.WebhookDefinitions[0].ReinvocationPolicy = ptrTo(admissionregistrationv1.NeverReinvocationPolicy)
				in.CSV.Spec.WebhookDefinitions[1].ReinvocationPolicy = ptrTo(admissionregistrationv1.IfNeededReinvocationPolicy)
				in.CSV.Spec.WebhookDefinitions[1].ConversionCRDs = []string{"crontabs.stable.example.com"}
			},
			warnings: []string{
				"webhook ccrontabs.kb.io: reinvocationPolicy dropped: it applies only to a MutatingAdmissionWebhook (OLM ignores it on a ConversionWebhook)",
				"webhook vcrontab.kb.io: reinvocationPolicy dropped: it applies only to a MutatingAdmissionWebhook (OLM ignores it on a ValidatingAdmissionWebhook)",
				"webhook vcrontab.kb.io: conversionCRDs dropped: they apply only to a ConversionWebhook",
			},
			check: func(t *testing.T, whi *v1alpha1.WebhookInstall) {
				for _, d := range whi.Spec.WebhookDefinitions[:2] {
					if d.ReinvocationPolicy != nil {
						t.Errorf("webhook %s kept reinvocationPolicy", d.GenerateName)
					}
				}
				if got := whi.Spec.WebhookDefinitions[1].ConversionCRDs; got != nil {
					t.Errorf("validating webhook kept conversionCRDs %v", got)
				}
			},
		},
		{
			name: "admissionReviewVersions of an admission webhook reduced to what the API server speaks",
			mutate: func(in *Input, _ *Options) {
				in.CSV.Spec.WebhookDefinitions[2].AdmissionReviewVersions = []string{"v2", "v1"}
			},
			warnings: []string{"webhook mcrontab.kb.io: admissionReviewVersions [v2 v1] reduced to [v1], the AdmissionReview versions the API server speaks"},
		},
		{
			name: "deployment selection: every webhook's deployment, in CSV order, no other",
			mutate: func(in *Input, _ *Options) {
				spec := &in.CSV.Spec.InstallStrategy.StrategySpec
				extra := *deployment(in.CSV, "crontab-controller-manager")
				extra.Name = "crontab-metrics-exporter"
				spec.DeploymentSpecs = append(spec.DeploymentSpecs, extra)
				in.CSV.Spec.WebhookDefinitions = append(in.CSV.Spec.WebhookDefinitions,
					conversion("ccrontabpolicies.kb.io", "crontab-controller-manager", "crontabpolicies.stable.example.com"))
			},
			warnings: []string{"deployment crontab-metrics-exporter not carried over: it serves no webhook",
				"RBAC of service account crontab-controller-manager (deployment crontab-controller-manager) not carried over from install.spec.permissions and clusterPermissions"},
			check: func(t *testing.T, whi *v1alpha1.WebhookInstall) {
				if got := deploymentNames(whi); !slices.Equal(got, []string{"crontab-controller-manager", "crontab-webhook"}) {
					t.Errorf("deployments %v, want crontab-controller-manager and crontab-webhook", got)
				}
				if got := ownedNames(whi); !slices.Equal(got, []string{"crontabs.stable.example.com", "crontabpolicies.stable.example.com"}) {
					t.Errorf("owned CRDs %v, want both conversion CRDs in CSV order", got)
				}
			},
		},
		{
			name: "a deployment serving conversion and validation is kept once",
			check: func(t *testing.T, whi *v1alpha1.WebhookInstall) {
				if got := deploymentNames(whi); !slices.Equal(got, []string{"crontab-webhook"}) {
					t.Errorf("deployments %v, want [crontab-webhook]", got)
				}
				d := whi.Spec.Install.Spec.Deployments[0]
				if _, ok := d.Label["olm.deployment-spec-hash"]; ok {
					t.Errorf("OLM label kept: %v", d.Label)
				}
				if a := d.Spec.Template.Annotations; len(a) != 1 || a["kubectl.kubernetes.io/default-container"] != "webhook" {
					t.Errorf("pod annotations %v, want only kubectl.kubernetes.io/default-container", a)
				}
				if got := volumeNames(d.Spec.Template.Spec); !slices.Equal(got, []string{"tmp"}) {
					t.Errorf("volumes %v, want [tmp]: the serving-certificate Secret volume is Hookwright's to mount", got)
				}
			},
		},
		{
			name: "a Secret volume mounted elsewhere is kept",
			mutate: func(in *Input, _ *Options) {
				pod := &deployment(in.CSV, "crontab-webhook").Spec.Template.Spec
				pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "crontab-config"}}})
				pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "config", MountPath: "/etc/crontab"})
			},
			check: func(t *testing.T, whi *v1alpha1.WebhookInstall) {
				if got := volumeNames(whi.Spec.Install.Spec.Deployments[0].Spec.Template.Spec); !slices.Equal(got, []string{"tmp", "config"}) {
					t.Errorf("volumes %v, want [tmp config]", got)
				}
			},
		},
		{
			name: "no conversion webhook: the admission webhooks are imported, no CRD is owned",
			mutate: func(in *Input, _ *Options) {
				in.CSV.Spec.WebhookDefinitions = in.CSV.Spec.WebhookDefinitions[1:]
			},
			warnings: []string{"owned CRD crontabs.stable.example.com not carried over: no conversion webhook converts it"},
			check: func(t *testing.T, whi *v1alpha1.WebhookInstall) {
				if got := definitionNames(whi); !slices.Equal(got, []string{"vcrontab.kb.io", "mcrontab.kb.io"}) {
					t.Errorf("webhookdefinitions %v, want the two admission webhooks", got)
				}
				if got := ownedNames(whi); len(got) != 0 {
					t.Errorf("owned CRDs %v, want none", got)
				}
			},
		},
		{
			name:   "no webhookdefinitions at all",
			mutate: func(in *Input, _ *Options) { in.CSV.Spec.WebhookDefinitions = nil },
			err:    "CSV crontab-operator.v1.1.0 declares no webhook in spec.webhookdefinitions",
		},
		{
			name: "conversion CRD missing from owned, known from the bundle",
			mutate: func(in *Input, _ *Options) {
				in.CSV.Spec.CustomResourceDefinitions.Owned = in.CSV.Spec.CustomResourceDefinitions.Owned[1:]
			},
			warnings: []string{"CRD crontabs.stable.example.com is converted but not listed in the CSV's owned CRDs; added from the bundle's CRD manifest (version v1, kind CronTab)"},
			check: func(t *testing.T, whi *v1alpha1.WebhookInstall) {
				want := []v1alpha1.CRDDescription{{Name: "crontabs.stable.example.com", Version: "v1", Kind: "CronTab"}}
				if diff := cmp.Diff(want, whi.Spec.CustomResourceDefinitions.Owned); diff != "" {
					t.Errorf("owned (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "conversion CRD missing from owned and unknown",
			mutate: func(in *Input, _ *Options) {
				in.CSV.Spec.CustomResourceDefinitions.Owned = nil
				in.CRDs = nil
			},
			err: "CSV crontab-operator.v1.1.0 converts CRD crontabs.stable.example.com but does not list it in spec.customresourcedefinitions.owned: add it there",
		},
		{
			name:   "deploymentName naming no deployment",
			mutate: func(in *Input, _ *Options) { in.CSV.Spec.WebhookDefinitions[0].DeploymentName = "elsewhere" },
			err:    "CSV crontab-operator.v1.1.0, webhook ccrontabs.kb.io: deploymentName elsewhere names no deployment in install.spec.deployments",
		},
		{
			name: "one CRD in two conversion webhooks",
			mutate: func(in *Input, _ *Options) {
				in.CSV.Spec.WebhookDefinitions = append(in.CSV.Spec.WebhookDefinitions, conversion("again.kb.io", "crontab-webhook", "crontabs.stable.example.com"))
			},
			err: "CRD crontabs.stable.example.com is also converted by webhook ccrontabs.kb.io",
		},
		{
			name:   "webhookPath without a leading slash",
			mutate: func(in *Input, _ *Options) { in.CSV.Spec.WebhookDefinitions[0].WebhookPath = ptrTo("convert") },
			err:    `webhookPath "convert" must start with /`,
		},
		{
			name:   "conversionCRDs entry that is a kind",
			mutate: func(in *Input, _ *Options) { in.CSV.Spec.WebhookDefinitions[0].ConversionCRDs = []string{"CronTab"} },
			err:    `conversionCRDs entry "CronTab" is not a CRD name, <plural>.<group>`,
		},
		{
			name: "admissionReviewVersions reduced to what conversion speaks",
			mutate: func(in *Input, _ *Options) {
				in.CSV.Spec.WebhookDefinitions[0].AdmissionReviewVersions = []string{"v1", "v2"}
			},
			warnings: []string{"webhook ccrontabs.kb.io: admissionReviewVersions [v1 v2] reduced to [v1]"},
		},
		{
			name:     "admissionReviewVersions unset",
			mutate:   func(in *Input, _ *Options) { in.CSV.Spec.WebhookDefinitions[0].AdmissionReviewVersions = nil },
			warnings: []string{"webhook ccrontabs.kb.io: admissionReviewVersions [] name no ConversionReview version; set to [v1]"},
		},
		{
			name: "installModes made AllNamespaces-only",
			mutate: func(in *Input, _ *Options) {
				in.CSV.Spec.InstallModes = []operatorsv1alpha1.InstallMode{{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Supported: true}}
			},
			warnings: []string{"installModes changed to support AllNamespaces only, as webhooks serve every namespace (OwnNamespace supported: true → false; added AllNamespaces)"},
			check: func(t *testing.T, whi *v1alpha1.WebhookInstall) {
				want := []operatorsv1alpha1.InstallMode{{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace}, {Type: operatorsv1alpha1.InstallModeTypeAllNamespaces, Supported: true}}
				if diff := cmp.Diff(want, whi.Spec.InstallModes); diff != "" {
					t.Errorf("installModes (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:     "replaces of a renamed package is mapped",
			mutate:   func(in *Input, _ *Options) { in.CSV.Spec.Replaces = "cron-operator.v0.9.0" },
			warnings: []string{"replaces cron-operator.v0.9.0 mapped to replaces: cron-operator"},
			check: func(t *testing.T, whi *v1alpha1.WebhookInstall) {
				if whi.Spec.Replaces != "cron-operator" {
					t.Errorf("replaces %q, want cron-operator", whi.Spec.Replaces)
				}
			},
		},
		{
			name:     "replaces of the same package is dropped: upgrade in place",
			warnings: []string{"replaces crontab-operator.v1.0.0 dropped: it maps to this install's own name crontab-operator; upgrade by applying this WebhookInstall over the existing one"},
			check: func(t *testing.T, whi *v1alpha1.WebhookInstall) {
				if whi.Spec.Replaces != "" {
					t.Errorf("replaces %q, want none", whi.Spec.Replaces)
				}
			},
		},
		{
			name:   "default name too long",
			mutate: func(in *Input, _ *Options) { in.CSV.Name = strings.Repeat("a", 64) + ".v1.1.0" },
			err:    "is longer than 63 characters (it is a label value on everything Hookwright makes for the install): pass --name",
		},
		{
			name: "no version",
			mutate: func(in *Input, _ *Options) {
				in.CSV.Spec.Version = operatorsv1alpha1.ClusterServiceVersion{}.Spec.Version
			},
			err: "CSV crontab-operator.v1.1.0 has no spec.version",
		},
		{
			name:   "namespace flag wins",
			mutate: func(_ *Input, o *Options) { o.Namespace = "team-a" },
			check: func(t *testing.T, whi *v1alpha1.WebhookInstall) {
				if whi.Namespace != "team-a" {
					t.Errorf("namespace %q, want team-a", whi.Namespace)
				}
			},
		},
		{
			name: "operator-sdk's placeholder namespace is ignored",
			mutate: func(in *Input, _ *Options) {
				delete(in.CSV.Annotations, SuggestedNamespaceAnnotation)
			},
			err: ErrNoNamespace.Error(),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{CSV: base.CSV.DeepCopy(), CRDs: base.CRDs, Others: base.Others}
			var opts Options
			if tc.mutate != nil {
				tc.mutate(&in, &opts)
			}
			res, err := Convert(in, opts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.warnings {
				if !slices.ContainsFunc(res.Warnings, func(got string) bool { return strings.Contains(got, w) }) {
					t.Errorf("no warning contains %q; warnings:\n%s", w, strings.Join(res.Warnings, "\n"))
				}
			}
			if tc.check != nil {
				tc.check(t, res.Install)
			}
			out, err := Render(res, in.CSV.Name)
			if err != nil {
				t.Fatal(err)
			}
			checkOutput(t, string(out))
		})
	}
}

// TestAdmissionCheckBites makes sure the in-process admission check runs
// the CRD's CEL rules: an install that only they reject is rejected.
func TestAdmissionCheckBites(t *testing.T) {
	_, out, _ := run(bundleDir)
	for _, tc := range []struct{ from, to, message string }{
		{"type: ConversionWebhook", "type: ValidatingAdmissionWebhook", "conversionCRDs applies only to ConversionWebhook"},
		{"    type: MutatingAdmissionWebhook", "    reinvocationPolicy: IfNeeded\n    type: ValidatingAdmissionWebhook", "reinvocationPolicy applies only to MutatingAdmissionWebhook"},
		{"    type: MutatingAdmissionWebhook", "    sideEffects: Some\n    type: MutatingAdmissionWebhook", "an admission webhook needs sideEffects None or NoneOnDryRun"},
		{"deploymentName: crontab-webhook", "deploymentName: elsewhere", "every webhookdefinitions[].deploymentName must name a deployment"},
		{"  - supported: true\n    type: AllNamespaces", "  - supported: false\n    type: AllNamespaces", "installModes must support AllNamespaces and no other mode"},
	} {
		bad := strings.Replace(out, tc.from, tc.to, 1)
		if bad == out {
			t.Fatalf("output has no %q", tc.from)
		}
		errs := admissionErrors(t, []byte(bad))
		if !strings.Contains(errs.ToAggregate().Error(), tc.message) {
			t.Errorf("%s → %s: errors %v, want %q", tc.from, tc.to, errs, tc.message)
		}
	}
}

func TestDefaultName(t *testing.T) {
	for in, want := range map[string]string{
		"crontab-operator.v1.1.0":       "crontab-operator",
		"etcdoperator.v0.9.4":           "etcdoperator",
		"memcached-operator.0.0.1":      "memcached-operator",
		"prometheus-v2.v0.70.0-rc.1":    "prometheus-v2",
		"foo-v1.2.3+build.5":            "foo",
		"no-version":                    "no-version",
		"operator.v1":                   "operator.v1",
		"vault.v1.2.3.with.more.dots.x": "vault.v1.2.3.with.more.dots.x",
	} {
		if got := DefaultName(in); got != want {
			t.Errorf("DefaultName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsOLMKey(t *testing.T) {
	for key, want := range map[string]bool{
		"olm.targetNamespaces":                    true,
		"olm.deployment-spec-hash":                true,
		"operatorframework.io/properties":         true,
		"operators.operatorframework.io/builder":  true,
		"operators.coreos.com/foo.ns":             true,
		"app.kubernetes.io/name":                  false,
		"kubectl.kubernetes.io/default-container": false,
		"app":                  false,
		"example.com/olm.like": false,
	} {
		if got := isOLMKey(key); got != want {
			t.Errorf("isOLMKey(%q) = %t, want %t", key, got, want)
		}
	}
}

func definitionNames(whi *v1alpha1.WebhookInstall) []string {
	var out []string
	for _, d := range whi.Spec.WebhookDefinitions {
		out = append(out, d.GenerateName)
	}
	return out
}

func deploymentNames(whi *v1alpha1.WebhookInstall) []string {
	var out []string
	for _, d := range whi.Spec.Install.Spec.Deployments {
		out = append(out, d.Name)
	}
	return out
}

func ownedNames(whi *v1alpha1.WebhookInstall) []string {
	var out []string
	for _, o := range whi.Spec.CustomResourceDefinitions.Owned {
		out = append(out, o.Name)
	}
	return out
}

func volumeNames(pod corev1.PodSpec) []string {
	var out []string
	for _, v := range pod.Volumes {
		out = append(out, v.Name)
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

// everyAdmissionField is a mutating webhook with every field a CSV's
// WebhookDescription has for one.
func everyAdmissionField() operatorsv1alpha1.WebhookDescription {
	return operatorsv1alpha1.WebhookDescription{
		GenerateName: "mpolicy.crontab.example.com", Type: operatorsv1alpha1.MutatingAdmissionWebhook,
		DeploymentName: "crontab-controller-manager", ContainerPort: 8443, TargetPort: ptrTo(intstr.FromString("webhook")),
		AdmissionReviewVersions: []string{"v1", "v1beta1"}, WebhookPath: ptrTo("/mutate-stable-example-com-v1-crontabpolicy"),
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{"stable.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"crontabpolicies", "crontabpolicies/status"},
				Scope: ptrTo(admissionregistrationv1.NamespacedScope),
			},
		}},
		FailurePolicy: ptrTo(admissionregistrationv1.Ignore), MatchPolicy: ptrTo(admissionregistrationv1.Exact),
		ObjectSelector: &metav1.LabelSelector{
			MatchLabels:      map[string]string{"app.kubernetes.io/part-of": "crontab"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"gold", "silver"}}},
		},
		SideEffects: ptrTo(admissionregistrationv1.SideEffectClassNoneOnDryRun), TimeoutSeconds: ptrTo[int32](7),
		ReinvocationPolicy: ptrTo(admissionregistrationv1.IfNeededReinvocationPolicy),
	}
}

// TestFixtureIsAValidBundle keeps the fixture honest: operator-framework's
// own bundle validators accept it.
func TestFixtureIsAValidBundle(t *testing.T) {
	bundle, err := manifests.GetBundleFromDir(bundleDir)
	if err != nil {
		t.Fatal(err)
	}
	validators := validation.DefaultBundleValidators.WithValidators(validation.ObjectValidator, validation.GoodPracticesValidator)
	for _, result := range validators.Validate(append(bundle.ObjectsToValidate(), map[string]string{"k8s-version": "1.34"})...) {
		for _, e := range result.Errors {
			t.Errorf("%s: %v", result.Name, e)
		}
	}
}
