package testfixtures

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/hookwright/hookwright/internal/testcluster"
)

// BuildCronTabWebhook builds examples/crontab's webhook binary from the
// repository at root into dir, and returns its path; build output goes to
// log (standard error when nil).
func BuildCronTabWebhook(root, dir string, log io.Writer) (string, error) {
	bin := filepath.Join(dir, "crontab-webhook")
	build := exec.Command("go", "build", "-o", bin, "./examples/crontab/cmd/crontab-webhook")
	build.Dir = root
	if log == nil {
		log = os.Stderr
	}
	build.Stdout, build.Stderr = log, log
	return bin, build.Run()
}

// CronTabWebhookArgs runs the example webhook in a pod stand-in as its
// Deployment does: on the pod's address, with the serving certificate
// Hookwright mounts.
func CronTabWebhookArgs(env *testcluster.PodEnv, addr string) ([]string, error) {
	certDir, err := env.MountDir(testcluster.DefaultCertMount)
	return []string{"--addr", addr, "--cert-dir", certDir}, err
}
