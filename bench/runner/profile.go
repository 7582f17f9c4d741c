package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/internal/harness"
)

// p4Profile is the CPU profile behind P4. The operator binary serves no
// pprof endpoint, so the same reconciler, wired as main.go wires it
// (internal/harness), runs in this process under runtime/pprof while the
// binary is stopped: it first resyncs every existing install (as P3's
// restart does), then converges a fresh batch like P4's smallest. The
// profile is written next to the results and its top entries, limited to
// Hookwright's code, go into the report.
func (b *bench) p4Profile(ctx context.Context) error {
	n := b.sz.p4[0]
	nss := names(fmt.Sprintf("prof-%d-%%04d", n), n)
	if err := b.prepareInstalls(ctx, nss); err != nil {
		return err
	}
	// P3, next, starts the binary again (its restart is the measure).
	b.operator.stop()
	b.operatorDown = true
	cfg, err := b.cluster.UserConfig(operatorUser, "system:masters")
	if err != nil {
		return err
	}
	cfg.QPS = -1 // as ctrl.GetConfig in main.go: no client-side throttling
	dir := b.opts.ProfileDir
	if dir == "" {
		dir = b.work
	}
	path := filepath.Join(dir, "p4-cpu.pprof")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	started := time.Now()
	op, err := harness.StartOperator(cfg, logr.Discard())
	if err != nil {
		pprof.StopCPUProfile()
		return err
	}
	keys := make([]types.NamespacedName, n)
	createErr := parallel(n, 16, func(i int) error {
		keys[i] = types.NamespacedName{Namespace: nss[i], Name: installName}
		return b.c.Create(ctx, webhookInstall(nss[i], crdNames(nss[i], 2), v1alpha1.CertificatePolicy{}))
	})
	var waitErr error
	if createErr == nil {
		_, waitErr = b.observer.waitAllStall(ctx, b.observer.verified, keys, time.Now().Add(5*time.Minute), 90*time.Second)
	}
	elapsed := time.Since(started)
	pprof.StopCPUProfile()
	_ = op.Stop()
	if createErr != nil {
		return createErr
	}
	if waitErr != nil {
		return waitErr
	}
	cmd := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=25", "-focus=hookwright/hookwright/controllers", path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go tool pprof: %w\n%s", err, out.String())
	}
	b.report.Profile = &profileResult{Path: path, N: n, Unfinished: b.observer.countUnfinished(keys), Elapsed: elapsed, Top: strings.TrimSpace(out.String())}
	b.logf("P4 profile: %s (%s)", path, elapsed.Round(time.Second))
	return nil
}

// prepareInstalls gives each namespace two established CRDs and a ready
// pod stand-in for its webhook.
func (b *bench) prepareInstalls(ctx context.Context, nss []string) error {
	return parallel(len(nss), 8, func(i int) error {
		ns := nss[i]
		if err := b.namespace(ctx, ns); err != nil {
			return err
		}
		b.cluster.Kubelet.Serve(ns, webhookDeployment, converterHost{})
		for _, kind := range crdKinds {
			if err := b.createCRD(ctx, convertedCRD(ns, kind, nil)); err != nil {
				return err
			}
		}
		return nil
	})
}
