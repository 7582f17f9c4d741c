package crontab_test

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/hookwright/hookwright/examples/crontab"
)

// webhookInstall is the part of webhookinstall.yaml this test reads.
type webhookInstall struct {
	Spec struct {
		WebhookDefinitions []struct {
			GenerateName   string `json:"generateName"`
			Type           string `json:"type"`
			DeploymentName string `json:"deploymentName"`
			ContainerPort  int    `json:"containerPort"`
			TargetPort     int    `json:"targetPort"`
			WebhookPath    string `json:"webhookPath"`
			Rules          []struct {
				Operations  []string `json:"operations"`
				APIGroups   []string `json:"apiGroups"`
				APIVersions []string `json:"apiVersions"`
				Resources   []string `json:"resources"`
			} `json:"rules"`
			SideEffects   string `json:"sideEffects"`
			FailurePolicy string `json:"failurePolicy"`
		} `json:"webhookdefinitions"`
	} `json:"spec"`
}

// The WebhookInstall and the binary agree: every path it names is one the
// binary serves, all three webhooks are served by the one deployment and
// port, and the admission rules send exactly the versions the handlers
// take.
func TestWebhookInstallMatchesTheBinary(t *testing.T) {
	raw, err := os.ReadFile("webhookinstall.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var whi webhookInstall
	if err := yaml.Unmarshal(raw, &whi); err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{}
	defs := whi.Spec.WebhookDefinitions
	if len(defs) != 3 {
		t.Fatalf("%d webhookdefinitions, want conversion, validating and mutating", len(defs))
	}
	for _, d := range defs {
		paths[d.Type] = d.WebhookPath
		if d.DeploymentName != defs[0].DeploymentName || d.ContainerPort != defs[0].ContainerPort || d.TargetPort != defs[0].TargetPort {
			t.Errorf("%s: deployment %s ports %d/%d, want the conversion webhook's %s %d/%d: one binary serves all three",
				d.GenerateName, d.DeploymentName, d.ContainerPort, d.TargetPort, defs[0].DeploymentName, defs[0].ContainerPort, defs[0].TargetPort)
		}
		if d.Type == "ConversionWebhook" {
			continue
		}
		if d.SideEffects != "None" || d.FailurePolicy != "Fail" {
			t.Errorf("%s: sideEffects %q failurePolicy %q, want None and Fail", d.GenerateName, d.SideEffects, d.FailurePolicy)
		}
		if len(d.Rules) != 1 {
			t.Fatalf("%s: %d rules, want 1", d.GenerateName, len(d.Rules))
		}
		r := d.Rules[0]
		got := [][]string{r.Operations, r.APIGroups, r.APIVersions, r.Resources}
		want := [][]string{{"CREATE", "UPDATE"}, {crontab.Group}, crontab.Versions, {"crontabs"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: rule (-want +got):\n%s", d.GenerateName, diff)
		}
	}
	want := map[string]string{
		"ConversionWebhook":          crontab.ConvertPath,
		"ValidatingAdmissionWebhook": crontab.ValidatePath,
		"MutatingAdmissionWebhook":   crontab.MutatePath,
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("webhookPath by type (-want +got):\n%s", diff)
	}
}
