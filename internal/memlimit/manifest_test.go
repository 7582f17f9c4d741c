package memlimit

import (
	"os"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The soft limit is only as good as the limit the manager is given: both
// shipped forms of its Deployment pass the manager container's own memory
// limit, in bytes, through the downward API.
func TestShippedManagerPassesItsMemoryLimit(t *testing.T) {
	var dep appsv1.Deployment
	readYAML(t, "../../config/manager/manager.yaml", &dep)
	checkManager(t, "config/manager/manager.yaml", dep.Spec.Template.Spec.Containers)

	var csv operatorsv1alpha1.ClusterServiceVersion
	readYAML(t, "../../bundle/manifests/hookwright.clusterserviceversion.yaml", &csv)
	deployments := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(deployments) != 1 {
		t.Fatalf("the bundle's CSV has %d deployments, want the manager's alone", len(deployments))
	}
	checkManager(t, "the bundle's CSV", deployments[0].Spec.Template.Spec.Containers)
}

func checkManager(t *testing.T, where string, containers []corev1.Container) {
	t.Helper()
	for _, c := range containers {
		if c.Name != "manager" {
			continue
		}
		if _, limited := c.Resources.Limits[corev1.ResourceMemory]; !limited {
			t.Errorf("%s: the manager container has no memory limit", where)
		}
		for _, e := range c.Env {
			if e.Name != EnvVar {
				continue
			}
			ref := e.ValueFrom
			if ref == nil || ref.ResourceFieldRef == nil || ref.ResourceFieldRef.Resource != "limits.memory" ||
				(ref.ResourceFieldRef.ContainerName != "" && ref.ResourceFieldRef.ContainerName != "manager") ||
				(!ref.ResourceFieldRef.Divisor.IsZero() && ref.ResourceFieldRef.Divisor.Value() != 1) {
				t.Errorf("%s: %s is %+v, want the manager's limits.memory in bytes (resourceFieldRef)", where, EnvVar, e)
			}
			return
		}
		t.Errorf("%s: the manager container does not set %s", where, EnvVar)
		return
	}
	t.Errorf("%s: no container named manager", where)
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
