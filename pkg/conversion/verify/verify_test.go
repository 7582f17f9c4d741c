package verify_test

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookwright/hookwright/examples/crontab"
	"github.com/hookwright/hookwright/pkg/conversion"
	"github.com/hookwright/hookwright/pkg/conversion/verify"
)

// The CronTab example's CRD and samples: valid, and holding integers
// (spec.replicas, status.active), which YAML and JSON decoding must agree on.
var (
	exampleCRD     = filepath.Join("..", "..", "..", "examples", "crontab", "crd.yaml")
	exampleSamples = filepath.Join("..", "..", "..", "examples", "crontab", "samples")
)

// tamper changes every object a webhook answers, as a buggy webhook would.
type tamper func(obj map[string]any)

// webhook serves the CronTab converter over TLS, passing every converted
// object through t (when set). It returns the URL and a CA file to trust.
func webhook(tb testing.TB, t tamper) (url, caFile string) {
	tb.Helper()
	real := conversion.NewWebhook(crontab.Converter())
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		real.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if t != nil && rec.Code == http.StatusOK {
			var review apiextensionsv1.ConversionReview
			if err := json.Unmarshal(body, &review); err != nil {
				tb.Errorf("decoding the webhook's answer: %v", err)
			}
			for i, raw := range review.Response.ConvertedObjects {
				obj := map[string]any{}
				if err := json.Unmarshal(raw.Raw, &obj); err != nil {
					tb.Errorf("decoding a converted object: %v", err)
				}
				t(obj)
				review.Response.ConvertedObjects[i].Raw, _ = json.Marshal(obj)
			}
			body, _ = json.Marshal(review)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	}))
	tb.Cleanup(server.Close)
	caFile = filepath.Join(tb.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return server.URL + "/convert", caFile
}

// dropReplicas loses spec.replicas on the way to v2.
func dropReplicas(obj map[string]any) {
	if obj["apiVersion"] == "stable.example.com/v2" {
		if spec, ok := obj["spec"].(map[string]any); ok {
			delete(spec, "replicas")
		}
	}
}

// changeImage rewrites spec.image on the way to v1.
func changeImage(obj map[string]any) {
	if obj["apiVersion"] == "stable.example.com/v1" {
		if spec, ok := obj["spec"].(map[string]any); ok && spec["image"] != nil {
			spec["image"] = "example.com/other:9"
		}
	}
}

var webhookCases = []struct {
	name     string
	tamper   tamper
	wantCode int
	want     []string // in the output
}{
	{"a correct webhook passes the valid samples", nil, 0,
		[]string{"ok: 4 sample(s) of crontabs.stable.example.com convert to every served version and round-trip"}},
	{"a webhook that drops a field fails, naming it", dropReplicas, 1,
		[]string{"FAIL", "nightly-backup.yaml", "does not match", "does not round-trip", `"replicas"`}},
	{"a webhook that changes a field fails, naming it", changeImage, 1,
		[]string{"FAIL", "every-five-minutes.yaml", "nightly-backup.yaml", "does not match", `"image"`, "example.com/other:9"}},
}

// verify.Main with --webhook, as `hookwright verify` runs it.
func TestWebhookVerifiesTheExampleSamples(t *testing.T) {
	for _, c := range webhookCases {
		t.Run(c.name, func(t *testing.T) {
			url, caFile := webhook(t, c.tamper)
			var out, errOut bytes.Buffer
			code := verify.Main([]string{"--crd", exampleCRD, "--samples", exampleSamples, "--webhook", url, "--ca-file", caFile}, &out, &errOut, nil)
			checkOutput(t, code, out.String()+errOut.String(), c.wantCode, c.want)
		})
	}
}

// The hookwright binary itself, built from the repository root, as the
// author guide runs it: `hookwright verify --crd ... --samples ...
// --webhook https://.../convert --ca-file ca.crt`.
func TestBuiltHookwrightVerify(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the hookwright binary")
	}
	bin := filepath.Join(t.TempDir(), "hookwright")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("..", "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building hookwright: %v\n%s", err, out)
	}
	for _, c := range webhookCases {
		t.Run(c.name, func(t *testing.T) {
			url, caFile := webhook(t, c.tamper)
			cmd := exec.CommandContext(t.Context(), bin, "verify", "--crd", exampleCRD, "--samples", exampleSamples, "--webhook", url, "--ca-file", caFile)
			out, err := cmd.CombinedOutput()
			code := 0
			if exit, ok := err.(*exec.ExitError); ok {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatalf("running %s: %v", cmd, err)
			}
			checkOutput(t, code, string(out), c.wantCode, c.want)
		})
	}
}

func checkOutput(t *testing.T, code int, out string, wantCode int, want []string) {
	t.Helper()
	if code != wantCode {
		t.Errorf("exit status %d, want %d", code, wantCode)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q", w)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// jsonConverter converts through encoding/json, so every number it
// answers is a float64: an in-process Target may hold numbers as any Go
// type, and only their JSON value counts, as it does for the API server.
type jsonConverter struct{ target verify.Target }

func (c jsonConverter) Convert(obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, error) {
	out, err := c.target.Convert(obj, toVersion)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(out.Object)
	if err != nil {
		return nil, err
	}
	floats := map[string]any{}
	if err := json.Unmarshal(raw, &floats); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: floats}, nil
}

func TestRunComparesNumbersByValue(t *testing.T) {
	crd, samples := loadExample(t)
	for name, target := range map[string]verify.Target{
		"the converter in process":           crontab.Converter(),
		"a converter answering float64 only": jsonConverter{crontab.Converter()},
	} {
		if findings := verify.Run(crd, samples, target); len(findings) != 0 {
			t.Errorf("%s: %d finding(s) on valid samples, want none:\n%v", name, len(findings), findings)
		}
	}
}

// A sample's integer and its converted counterpart's differ when their
// values differ, whatever Go type either was decoded as.
func TestRunReportsADifferentNumber(t *testing.T) {
	crd, samples := loadExample(t)
	for _, s := range samples {
		if s.Object.GetAPIVersion() == "stable.example.com/v2" && s.Object.GetName() == "nightly-backup" {
			if err := unstructured.SetNestedField(s.Object.Object, int64(2), "spec", "replicas"); err != nil {
				t.Fatal(err)
			}
		}
	}
	findings := verify.Run(crd, samples, crontab.Converter())
	var text []string
	for _, f := range findings {
		text = append(text, f.String())
	}
	all := strings.Join(text, "\n")
	if len(findings) != 2 || !strings.Contains(all, `"replicas"`) || !strings.Contains(all, "does not match") {
		t.Errorf("want v1 -> v2 and v2 -> v1 of nightly-backup not matching on replicas, got:\n%s", all)
	}
}

// loadExample loads the CronTab example's CRD and samples.
func loadExample(t *testing.T) (*apiextensionsv1.CustomResourceDefinition, []verify.Sample) {
	t.Helper()
	crd, err := verify.LoadCRD(exampleCRD)
	if err != nil {
		t.Fatal(err)
	}
	samples, err := verify.LoadSamples(exampleSamples)
	if err != nil {
		t.Fatal(err)
	}
	return crd, samples
}
