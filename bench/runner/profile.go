package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// operatorProfileChunk bounds one /debug/pprof/profile request to the
// operator, as apiServerProfileChunk does for the API server.
const operatorProfileChunk = 10 * time.Second

// profileOperator samples the operator's own CPU (the binary under
// measure, through its --pprof-bind-address) until stop is closed, and
// sends what go tool pprof reports of it, limited to Hookwright's
// controllers, with the merged profile written to path.
func (b *bench) profileOperator(ctx context.Context, path string, stop <-chan struct{}) <-chan operatorProfileOutcome {
	out := make(chan operatorProfileOutcome, 1)
	addr := b.operator.pprofAddr
	go func() {
		p, err := collectOperatorProfile(ctx, addr, path, stop)
		out <- operatorProfileOutcome{profile: p, err: err}
	}()
	return out
}

type operatorProfileOutcome struct {
	profile *profileResult
	err     error
}

func collectOperatorProfile(ctx context.Context, addr, path string, stop <-chan struct{}) (*profileResult, error) {
	if addr == "" {
		return nil, fmt.Errorf("the operator was started without --pprof-bind-address")
	}
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(operatorProfileChunk.Seconds()))
	started := time.Now()
	merged, err := collectChunks(ctx, stop, func(ctx context.Context) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("operator /debug/pprof/profile: %w", err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("operator /debug/pprof/profile: HTTP %d: %s", resp.StatusCode, body)
		}
		return body, nil
	})
	if err != nil {
		return nil, err
	}
	if err := writeProfile(merged, path); err != nil {
		return nil, err
	}
	res := &profileResult{Path: path, Elapsed: time.Since(started)}
	res.CPU, _ = cumulativeShares(merged)
	cmd := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=25", "-focus=hookwright/hookwright/controllers", path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go tool pprof: %w\n%s", err, out.String())
	}
	res.Top = strings.TrimSpace(out.String())
	return res, nil
}

// operatorProfilePath is where the operator's profile of P4's largest
// batch goes, next to the API server's.
func (b *bench) operatorProfilePath() string {
	dir := b.opts.ProfileDir
	if dir == "" {
		dir = b.work
	}
	return filepath.Join(dir, "p4-cpu.pprof")
}
