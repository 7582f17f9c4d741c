package toolmods

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A tool built from Go modules (with its Makefile build tags) compiles
// much of what the tests compile (k8s.io/api, client-go,
// apiextensions-apiserver, their protobuf, gRPC and OpenTelemetry). Go's build cache shares a compiled package only when
// it is the same version of the same module, built with the same flags: a
// module version the tool and the tests select differently is compiled
// twice on a cold machine, and so is everything that imports it.
var tools = []struct {
	dir, tags string
	packages  []string
}{
	{dir: "hack/tools", packages: []string{"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager", "k8s.io/kubernetes/cmd/kubectl", "./etcd"}},
	{dir: "hack/tools/opm", tags: "containers_image_openpgp", packages: []string{"github.com/operator-framework/operator-registry/cmd/opm"}},
	{dir: "hack/tools/promtool", tags: "remove_all_sd", packages: []string{"github.com/prometheus/prometheus/cmd/promtool"}},
}

func TestToolsCompileTheTestsModuleVersions(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tests := compiledModules(t, root, "", "-test", "./...")
	for _, tool := range tools {
		compiled := compiledModules(t, filepath.Join(root, tool.dir), tool.tags, tool.packages...)
		shared := 0
		for path, version := range compiled {
			want, ok := tests[path]
			if !ok {
				continue
			}
			shared++
			if version != want {
				t.Errorf("%s compiles %s %s, the tests %s: run `go get %s@%s` in %s (or move go.mod the other way), so that its packages compile once", tool.dir, path, version, want, path, want, tool.dir)
			}
		}
		if shared == 0 {
			t.Errorf("%s shares no module with the tests: the listing went wrong", tool.dir)
		}
	}
}

// compiledModules maps each module that provides a package the build of
// packages compiles to the version selected (a replacement's version
// where one is set), as `make test` builds them (CGO_ENABLED=0).
func compiledModules(t *testing.T, dir, tags string, packages ...string) map[string]string {
	t.Helper()
	args := []string{"list", "-deps", "-f", "{{with .Module}}{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}{{end}}"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, packages...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if exit, ok := err.(*exec.ExitError); ok {
			stderr = string(exit.Stderr)
		}
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(cmd.Args[1:], " "), dir, err, stderr)
	}
	modules := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, version, ok := strings.Cut(line, " ")
		if !ok || version == "" { // the main module
			continue
		}
		modules[path] = version
	}
	return modules
}
