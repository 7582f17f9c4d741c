package testcluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// KubeVersion is the control-plane version built by hack/build-control-plane.sh.
const KubeVersion = "v1.37.2"

// BinaryDirEnv overrides where the control-plane binaries are looked up.
const BinaryDirEnv = "HOOKWRIGHT_CONTROL_PLANE_DIR"

var requiredBinaries = []string{"kube-apiserver", "kube-controller-manager", "etcd", "kubectl"}

// BinaryDir finds the folder holding kube-apiserver, kube-controller-manager,
// etcd and kubectl: the
// HOOKWRIGHT_CONTROL_PLANE_DIR variable, or bin/control-plane/<version> of
// the repository containing the working directory. A missing binary is an
// error that says how to build it: tests that need the API server never skip.
func BinaryDir() (string, error) {
	dir := os.Getenv(BinaryDirEnv)
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin", "control-plane", KubeVersion)
	}
	for _, name := range requiredBinaries {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("control-plane binary %s missing in %s: run 'make control-plane' (builds kube-apiserver, kube-controller-manager, etcd and kubectl %s from Go modules, ~14 min the first time on 2 cores)", name, dir, KubeVersion)
		}
	}
	return dir, nil
}

// repoRoot walks up from the working directory to the folder holding the
// hookwright go.mod (tests run in their package folder).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "hack", "build-control-plane.sh")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no hookwright repository above %s: set %s to the control-plane binary folder", dir, BinaryDirEnv)
		}
	}
}
