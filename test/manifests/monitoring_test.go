package manifests_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// exportedMetrics are the metric names Hookwright's operator and its
// conversion kit register, read from their sources (Name: "hookwright_...").
func exportedMetrics() map[string]bool {
	GinkgoHelper()
	names := map[string]bool{}
	pattern := regexp.MustCompile(`Name:\s+"(hookwright_[a-z0-9_]+)"`)
	for _, dir := range []string{"controllers", filepath.Join("pkg", "conversion")} {
		files, err := filepath.Glob(filepath.Join(repoRoot, dir, "*.go"))
		Expect(err).NotTo(HaveOccurred())
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			raw, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			for _, m := range pattern.FindAllStringSubmatch(string(raw), -1) {
				names[m[1]] = true
			}
		}
	}
	Expect(names).NotTo(BeEmpty())
	return names
}

// metricsIn lists the hookwright_ metrics a PromQL expression reads (a
// histogram's _bucket, _sum and _count series name the histogram).
func metricsIn(expr string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`hookwright_[a-z0-9_]+`).FindAllString(expr, -1) {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			m = strings.TrimSuffix(m, suffix)
		}
		out = append(out, m)
	}
	return out
}

// promtool is the binary `make test` builds (make promtool).
func promtool() string {
	GinkgoHelper()
	p := os.Getenv("HOOKWRIGHT_PROMTOOL")
	Expect(p).NotTo(BeEmpty(), "HOOKWRIGHT_PROMTOOL names promtool: run the tests with make test, which builds it (make promtool)")
	_, err := os.Stat(p)
	Expect(err).NotTo(HaveOccurred(), "run make promtool")
	return p
}

type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert  string `json:"alert,omitempty"`
			Record string `json:"record,omitempty"`
			Expr   string `json:"expr"`
		} `json:"rules"`
	} `json:"groups"`
}

var _ = Describe("Monitoring (config/prometheus, config/grafana)", func() {
	It("ships the metrics Service, ServiceMonitor and PrometheusRule as a kustomize component over config/default", func(ctx SpecContext) {
		overlay := GinkgoT().TempDir()
		root, err := filepath.Abs(repoRoot)
		Expect(err).NotTo(HaveOccurred())
		// kustomize takes relative paths only.
		rel, err := filepath.Rel(overlay, filepath.Join(root, "config"))
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(fmt.Sprintf(
			"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- %s\ncomponents:\n- %s\n",
			filepath.Join(rel, "default"), filepath.Join(rel, "prometheus"))), 0o644)).To(Succeed())
		out, stderr, err := run(ctx, nil, kubectl, "kustomize", "--load-restrictor=LoadRestrictionsNone", overlay)
		Expect(err).NotTo(HaveOccurred(), stderr)
		objs := decode(out)
		svc := find(objs, "Service", "hookwright-metrics")
		Expect(svc.GetNamespace()).To(Equal(namespace))
		dep := find(objs, "Deployment", managerName)
		selector, _, _ := unstructuredMap(svc.Object, "spec", "selector")
		podLabels, _, _ := unstructuredMap(dep.Object, "spec", "template", "metadata", "labels")
		for k, v := range selector {
			Expect(podLabels).To(HaveKeyWithValue(k, v), "the metrics Service selects the manager's pods")
		}
		Expect(find(objs, "ServiceMonitor", "hookwright")).NotTo(BeNil())
		Expect(find(objs, "PrometheusRule", "hookwright")).NotTo(BeNil())
	})

	It("has alerts that promtool checks and whose unit tests pass, each alert tested firing, on metrics Hookwright exports", func(ctx SpecContext) {
		var rule struct {
			Spec ruleGroups `json:"spec"`
		}
		Expect(yaml.Unmarshal([]byte(readFile("config/prometheus/prometheusrule.yaml")), &rule)).To(Succeed())
		// The rule file promtool reads is the PrometheusRule's spec, whole.
		var whole struct {
			Spec map[string]any `json:"spec"`
		}
		Expect(yaml.Unmarshal([]byte(readFile("config/prometheus/prometheusrule.yaml")), &whole)).To(Succeed())
		dir := GinkgoT().TempDir()
		raw, err := yaml.Marshal(whole.Spec)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(dir, "rules.yaml"), raw, 0o644)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "promtool_test.yaml"), []byte(readFile("config/prometheus/promtool_test.yaml")), 0o644)).To(Succeed())

		exported := exportedMetrics()
		var alerts []string
		for _, g := range rule.Spec.Groups {
			for _, r := range g.Rules {
				alerts = append(alerts, r.Alert)
				for _, m := range metricsIn(r.Expr) {
					Expect(exported).To(HaveKey(m), "alert %s reads %s, which Hookwright does not export", r.Alert, m)
				}
			}
		}
		Expect(alerts).To(ContainElements("HookwrightRenewalOverdue", "HookwrightRotationFailed", "HookwrightVerificationFailing",
			"HookwrightConversionContested", "HookwrightInstallStuck"), "the alerts an admin needs")

		var tests struct {
			Tests []struct {
				AlertRuleTest []struct {
					Alertname string           `json:"alertname"`
					ExpAlerts []map[string]any `json:"exp_alerts"`
				} `json:"alert_rule_test"`
			} `json:"tests"`
		}
		Expect(yaml.Unmarshal([]byte(readFile("config/prometheus/promtool_test.yaml")), &tests)).To(Succeed())
		fires := map[string]bool{}
		for _, t := range tests.Tests {
			for _, a := range t.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					fires[a.Alertname] = true
				}
			}
		}
		for _, a := range alerts {
			Expect(fires).To(HaveKey(a), "promtool_test.yaml has no test in which %s fires", a)
		}

		check := exec.CommandContext(ctx, promtool(), "check", "rules", "rules.yaml")
		check.Dir = dir
		out, err := check.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		test := exec.CommandContext(ctx, promtool(), "test", "rules", "promtool_test.yaml")
		test.Dir = dir
		out, err = test.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "promtool test rules:\n%s", out)
		fmt.Fprintf(GinkgoWriter, "%s", out)
	})

	It("has a Grafana dashboard of valid panels whose queries are valid PromQL on metrics Hookwright exports", func(ctx SpecContext) {
		var dashboard struct {
			Title         string `json:"title"`
			UID           string `json:"uid"`
			SchemaVersion int    `json:"schemaVersion"`
			Templating    struct {
				List []struct {
					Name, Type string
				} `json:"list"`
			} `json:"templating"`
			Panels []struct {
				ID      int            `json:"id"`
				Type    string         `json:"type"`
				Title   string         `json:"title"`
				GridPos map[string]int `json:"gridPos"`
				Targets []struct {
					Expr  string `json:"expr"`
					RefID string `json:"refId"`
				} `json:"targets"`
			} `json:"panels"`
		}
		Expect(json.Unmarshal([]byte(readFile("config/grafana/hookwright-dashboard.json")), &dashboard)).To(Succeed())
		Expect(dashboard.Title).NotTo(BeEmpty())
		Expect(dashboard.UID).To(MatchRegexp(`^[a-zA-Z0-9_-]{1,40}$`))
		Expect(dashboard.SchemaVersion).To(BeNumerically(">=", 36))
		Expect(dashboard.Templating.List).To(ContainElement(HaveField("Type", "datasource")))
		Expect(dashboard.Panels).NotTo(BeEmpty())

		exported := exportedMetrics()
		seen := map[int]bool{}
		var records []string
		for _, p := range dashboard.Panels {
			Expect(seen[p.ID]).To(BeFalse(), "panel id %d used twice", p.ID)
			seen[p.ID] = true
			Expect(p.Type).To(BeElementOf("stat", "table", "timeseries", "gauge", "bargauge"), p.Title)
			Expect(p.GridPos).To(HaveKey("w"))
			Expect(p.GridPos).To(HaveKey("h"))
			Expect(p.Targets).NotTo(BeEmpty(), p.Title)
			for _, t := range p.Targets {
				Expect(t.RefID).NotTo(BeEmpty())
				metrics := metricsIn(t.Expr)
				Expect(metrics).NotTo(BeEmpty(), "panel %q: the query reads no Hookwright metric: %s", p.Title, t.Expr)
				for _, m := range metrics {
					Expect(exported).To(HaveKey(m), "panel %q reads %s, which Hookwright does not export", p.Title, m)
				}
				// Grafana's interval macro, as Grafana substitutes it.
				records = append(records, strings.ReplaceAll(t.Expr, "$__rate_interval", "5m"))
			}
		}
		sort.Strings(records)

		By("promtool parses every query (as recording rules)")
		var file strings.Builder
		file.WriteString("groups:\n- name: dashboard\n  rules:\n")
		for i, expr := range records {
			quoted, _ := json.Marshal(expr)
			fmt.Fprintf(&file, "  - record: dashboard:query%d\n    expr: %s\n", i, quoted)
		}
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "dashboard.yaml"), []byte(file.String()), 0o644)).To(Succeed())
		check := exec.CommandContext(ctx, promtool(), "check", "rules", filepath.Join(dir, "dashboard.yaml"))
		out, err := check.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
	})
})

func unstructuredMap(obj map[string]any, fields ...string) (map[string]any, bool, error) {
	cur := obj
	for _, f := range fields {
		next, ok := cur[f].(map[string]any)
		if !ok {
			return nil, false, nil
		}
		cur = next
	}
	return cur, true, nil
}
