package testcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// BinaryHost runs a webhook program as the pod's container: Args builds
// its command line from the pod (mounted folders) and the loopback address
// to listen on. The pod is ready once GET https://<addr><ReadyPath>
// answers 200, like a readiness probe. Stopping sends SIGTERM, then SIGKILL
// after the grace period, as kubelet does.
type BinaryHost struct {
	Path        string
	Args        func(env *PodEnv, addr string) ([]string, error)
	ReadyPath   string        // default /readyz
	GracePeriod time.Duration // default 30 s (terminationGracePeriodSeconds)
	Stdout      *os.File      // default os.Stderr, so its logs reach the test output
}

// Run implements Host.
func (h BinaryHost) Run(ctx context.Context, env *PodEnv) error {
	addr := env.Listener.Addr().String()
	_ = env.Listener.Close() // the program binds the address itself
	args, err := h.Args(env, addr)
	if err != nil {
		return err
	}
	cmd := exec.Command(h.Path, args...)
	out := h.Stdout
	if out == nil {
		out = os.Stderr
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", h.Path, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	probe := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a readiness probe, like kubelet's
	readyURL := "https://" + addr + valueOr(h.ReadyPath, "/readyz")
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	for ready := false; ; {
		select {
		case err := <-exited:
			return fmt.Errorf("%s exited: %v", h.Path, err)
		case <-ctx.Done():
			return h.terminate(cmd, exited)
		case <-ticker.C:
			if ready {
				continue
			}
			if resp, err := probe.Get(readyURL); err == nil {
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ready = true
					env.MarkReady()
				}
			}
		}
	}
}

func (h BinaryHost) terminate(cmd *exec.Cmd, exited chan error) error {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	grace := h.GracePeriod
	if grace == 0 {
		grace = 30 * time.Second
	}
	select {
	case <-exited:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-exited
	}
	return nil
}
