package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestShippedMemoryLimit(t *testing.T) {
	const manifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: controller-manager}
spec:
  template:
    spec:
      containers:
      - name: sidecar
        resources: {limits: {memory: 64Mi}}
      - name: manager
        resources: {limits: {memory: %s}}
`
	for _, tc := range []struct {
		name, limit string
		want        int64
		err         string
	}{
		{"the manager container's limit, not a sidecar's", "450Mi", 450 << 20, ""},
		{"decimal units", "1G", 1_000_000_000, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "config", "manager"), 0o755); err != nil {
				t.Fatal(err)
			}
			body := strings.Replace(manifest, "%s", tc.limit, 1)
			if err := os.WriteFile(filepath.Join(root, shippedManifest), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := shippedMemoryLimit(root)
			if err != nil || got != tc.want {
				t.Errorf("shippedMemoryLimit = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
	t.Run("no limit on the manager", func(t *testing.T) {
		root := t.TempDir()
		_ = os.MkdirAll(filepath.Join(root, "config", "manager"), 0o755)
		body := "apiVersion: apps/v1\nkind: Deployment\nspec: {template: {spec: {containers: [{name: manager}]}}}\n"
		_ = os.WriteFile(filepath.Join(root, shippedManifest), []byte(body), 0o644)
		if _, err := shippedMemoryLimit(root); err == nil || !strings.Contains(err.Error(), "no memory limit") {
			t.Errorf("err = %v, want one saying there is no memory limit", err)
		}
	})
	t.Run("the repository's manifest has one", func(t *testing.T) {
		root, err := repoRoot("")
		if err != nil {
			t.Fatal(err)
		}
		if limit, err := shippedMemoryLimit(root); err != nil || limit <= 0 {
			t.Errorf("shippedMemoryLimit(%s) = %d, %v", root, limit, err)
		}
	})
}

func TestProcessByExe(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := processByExe(filepath.Base(exe))
	if err != nil {
		t.Fatal(err)
	}
	if mem, err := sampleMemory(pid); err != nil || mem.HWM <= 0 {
		t.Errorf("sampleMemory(%d) = %+v, %v", pid, mem, err)
	}
	if _, err := processByExe("no-such-binary-here"); err == nil {
		t.Error("found a process for a binary that does not run")
	}
}

func TestMemoryPerInstall(t *testing.T) {
	m := memoryLimitResult{StartHeap: 10 << 20, IdleHeap: 110 << 20, IdleInstalls: 1000}
	if got, want := m.perInstall(), float64(100<<20)/1000; got != want {
		t.Errorf("perInstall = %.0f, want %.0f", got, want)
	}
	if (&memoryLimitResult{IdleHeap: 1 << 20}).perInstall() != 0 {
		t.Error("no start sample: no slope")
	}
}

func TestLimitMetSaysWhetherTheGoalsScaleWasRun(t *testing.T) {
	for _, tc := range []struct {
		headroom float64
		installs int
		want     string
	}{
		{1.86, 1502, "yes at 1502 installs; 3,000 not run"},
		{1.14, 3000, "**no** at 3000 installs"},
		{1.64, 3000, "yes at 3000 installs"},
	} {
		if got := limitMet(tc.headroom, tc.installs); got != tc.want {
			t.Errorf("limitMet(%.2f, %d) = %q, want %q", tc.headroom, tc.installs, got, tc.want)
		}
	}
}
