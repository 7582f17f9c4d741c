// Package runner is `make bench`: it builds the Hookwright operator and the
// cert-controller anchor (bench/certcontroller), runs both as separate
// processes against the test ground's control plane (internal/testcluster,
// with its pod stand-ins and an audit log at level Metadata), drives the
// load of each measure, and renders the results as a markdown table.
//
// API writes are counted from the API server's audit log, memory from
// procfs, times from watch events seen by the driver (one clock for both
// operators) or from the audit log's timestamps.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/hookwright/hookwright/controllers/guard"
	"github.com/hookwright/hookwright/internal/harness"
	"github.com/hookwright/hookwright/internal/memlimit"
	"github.com/hookwright/hookwright/internal/testcluster"
)

// The identities of the two processes, as the audit log names them.
const (
	operatorUser = "hookwright-operator"
	anchorUser   = "cert-controller"
)

// controllerManagerQPS lifts the test ground's kube-controller-manager
// client limit (default 20 requests per second) well above what 1,000
// installs in 60 s need of it (a few writes per Deployment), so that P4 and
// the storm time the operator, not the controller manager's rate limiter
// (P4 alone on 2 cores at 72cc334: N=300 converged in 76.0 s at 20, 52.8 s
// at 400).
const controllerManagerQPS = 400

// Options configures a run.
type Options struct {
	// Smoke runs every measure at a tiny size (make test keeps the harness
	// from rotting); the figures mean nothing.
	Smoke bool
	// Root is the repository; found from the working directory when empty.
	Root string
	// OperatorBin and AnchorBin are built into the run's folder when empty.
	OperatorBin, AnchorBin string
	// Budget bounds the whole run; P4's largest size gets what is left.
	Budget time.Duration
	// Log receives progress lines.
	Log io.Writer
	// ProfileDir receives the CPU profile (p4-cpu.pprof); the run's
	// temporary folder when empty.
	ProfileDir string
	// P1, P4, P5Secrets and P5CRDs override the mode's sizes when set
	// (for partial or calibration runs; the published table uses none).
	P1                int
	P4                []int
	P5Secrets, P5CRDs int
	// P4CRDs overrides P4's conversion CRDs per install (2): one lets a
	// batch of 3,000 installs fit this machine's memory, whose
	// kube-apiserver holds about 2.6 MB per CRD.
	P4CRDs int
	// Phases, when set, runs only the phases whose names start with one of
	// these ("P4", "Migration", "cert", "kit"...), to investigate one
	// measure; later phases that need an earlier one's installs fail. A
	// name starting with "-" leaves out the phases it prefixes ("-P4 floor").
	Phases []string
	// KeepWork keeps the run's folder (the operator's logs, and the API
	// server's audit log copied there before the control plane stops) to
	// trace one install's requests after the run.
	KeepWork bool
}

// runs reports whether the options select the phase.
func (o Options) runs(phase string) bool {
	selected, selecting := false, false
	for _, p := range o.Phases {
		if left, ok := strings.CutPrefix(p, "-"); ok {
			if strings.HasPrefix(phase, left) {
				return false
			}
			continue
		}
		selecting = true
		selected = selected || strings.HasPrefix(phase, p)
	}
	return selected || !selecting
}

// sizes of the measures.
type sizes struct {
	p1               int
	p1Anchor         int // cert-controller webhooks, each started by its own process
	p2Installs       int
	p2Rotations      int
	p2Lifetime       time.Duration
	p2RenewBefore    time.Duration
	p4               []int
	p4CRDs           int // conversion CRDs per P4 install
	p5Secrets        int
	p5CRDs           int
	p5SchemaKB       int
	settle           time.Duration
	certBenchtime    string
	reserveAfterP4   time.Duration
	p4MaxPerSize     time.Duration
	installTimeout   time.Duration
	foreignNamespace int
	memoryWait       time.Duration
	idleAfter        time.Duration // from the last burst to the idle sample
	migrationObjects int
	syncPeriod       time.Duration // P3's periodic resync
	settleInstalls   time.Duration // at most, before P3, for every install to say Succeeded
	stormSample      int           // installs read continuously during the rotation storm
}

func sizesFor(smoke bool) sizes {
	if smoke {
		return sizes{
			p1: 3, p1Anchor: 2, p2Installs: 1, p2Rotations: 1, p2Lifetime: 20 * time.Second, p2RenewBefore: 14 * time.Second,
			p4: []int{2, 4}, p4CRDs: 2, p5Secrets: 40, p5CRDs: 4, p5SchemaKB: 50, settle: 3 * time.Second,
			certBenchtime: "1x", reserveAfterP4: time.Minute, p4MaxPerSize: 2 * time.Minute,
			installTimeout: time.Minute, foreignNamespace: 2, memoryWait: 25 * time.Second, idleAfter: 5 * time.Second,
			migrationObjects: 50, syncPeriod: 10 * time.Second, settleInstalls: time.Minute, stormSample: 2,
		}
	}
	return sizes{
		p1: 100, p1Anchor: 20, p2Installs: 10, p2Rotations: 2, p2Lifetime: 20 * time.Second, p2RenewBefore: 12 * time.Second,
		p4: []int{100, 300, 1000}, p4CRDs: 2, p5Secrets: 10000, p5CRDs: 1000, p5SchemaKB: 50, settle: 15 * time.Second,
		certBenchtime: "1s", reserveAfterP4: 4 * time.Minute, p4MaxPerSize: 10 * time.Minute,
		installTimeout: time.Minute, foreignNamespace: 10, memoryWait: 90 * time.Second, idleAfter: 130 * time.Second,
		migrationObjects: 10000, syncPeriod: 45 * time.Second, settleInstalls: 8 * time.Minute, stormSample: 10,
	}
}

// bench is one run's state.
type bench struct {
	opts     Options
	sz       sizes
	root     string
	work     string
	deadline time.Time
	log      io.Writer

	cluster  *testcluster.Cluster
	c        client.Client
	observer *observer
	audit    *auditLog
	operator *process
	// operatorDown: the binary is stopped on purpose (P4's profile).
	operatorDown bool
	resyncDone   time.Time // end of P3's resync: P5's idle is measured after it
	opKube       string
	ccKube       string
	opBin        string
	ccBin        string

	report   *Report
	memLimit memoryLimitResult // P5 limit, sampled along the run (memlimit.go)
}

// Run measures everything and returns the report (also when a measure
// failed: its row then says so, and the error is returned too).
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	b := &bench{opts: opts, sz: sizesFor(opts.Smoke), log: opts.Log}
	// Every process the bench starts (the control plane, both operators,
	// go test) runs with the Go runtime's default collector: a GOGC or
	// GOMEMLIMIT left in the caller's environment to speed up builds would
	// change what P4, P5 and the storm measure (at GOGC=400 kube-apiserver
	// held 16 GB with 2,400 CRDs, and the machine ran out of memory).
	for _, v := range []string{"GOGC", "GOMEMLIMIT"} {
		if err := os.Unsetenv(v); err != nil {
			return nil, err
		}
	}
	if opts.P1 > 0 {
		b.sz.p1 = opts.P1
	}
	if len(opts.P4) > 0 {
		b.sz.p4 = opts.P4
	}
	if opts.P4CRDs > 0 {
		b.sz.p4CRDs = min(opts.P4CRDs, len(crdKinds))
	}
	if opts.P5Secrets > 0 {
		b.sz.p5Secrets = opts.P5Secrets
	}
	if opts.P5CRDs > 0 {
		b.sz.p5CRDs = opts.P5CRDs
	}
	b.report = &Report{Started: time.Now(), Cores: runtime.NumCPU(), Smoke: opts.Smoke, GoVersion: runtime.Version(), KubeVersion: testcluster.KubeVersion,
		Overridden: opts.P1 > 0 || len(opts.P4) > 0 || opts.P4CRDs > 0 || opts.P5Secrets > 0 || opts.P5CRDs > 0 || len(opts.Phases) > 0}
	budget := opts.Budget
	if budget == 0 {
		budget = 24 * time.Minute
		if opts.Smoke {
			budget = 5 * time.Minute
		}
	}
	b.deadline = time.Now().Add(budget)
	b.report.Budget = budget
	stopLoad := b.watchLoad()
	err := b.run(ctx)
	stopLoad()
	b.report.Duration = time.Since(b.report.Started)
	return b.report, err
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "bench %s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func (b *bench) run(ctx context.Context) (retErr error) {
	ctrllog.SetLogger(logr.Discard())
	var err error
	if b.root, err = repoRoot(b.opts.Root); err != nil {
		return err
	}
	if b.work, err = os.MkdirTemp("", "hw-bench-"); err != nil {
		return err
	}
	defer func() {
		if !b.opts.KeepWork {
			_ = os.RemoveAll(b.work)
		}
	}()

	b.report.Commit = gitDescribe(b.root)
	b.logf("building the operator and the cert-controller anchor")
	b.opBin, b.ccBin = b.opts.OperatorBin, b.opts.AnchorBin
	if b.opBin == "" {
		b.opBin = filepath.Join(b.work, "hookwright")
		if err := build(ctx, b.root, ".", b.opBin, b.log); err != nil {
			return err
		}
	}
	if b.ccBin == "" {
		b.ccBin = filepath.Join(b.work, "certcontroller")
		if err := build(ctx, b.root, "./bench/certcontroller", b.ccBin, b.log); err != nil {
			return err
		}
	}

	// The Go benchmarks run first, on an otherwise empty machine: in P5's
	// wait for an idle operator (tried at 3202d95) they ran 1.4 to 1.6
	// times slower, beside a control plane whose thousands of CRDs keep
	// it and kube-controller-manager busy even when nothing changes.
	b.goBenchmarks(ctx)

	b.report.ControllerManagerQPS = controllerManagerQPS
	b.logf("starting the control plane (kube-apiserver %s with a Metadata audit log)", testcluster.KubeVersion)
	b.cluster, err = testcluster.Start(testcluster.Options{
		Scheme:            harness.Scheme(),
		CRDDirectoryPaths: []string{filepath.Join(b.root, "config", "crd", "bases")},
		Objects:           []client.Object{guard.Policy(), guard.Binding()}, // the admission guard, as config/default ships it
		AuditLog:          true,
		// envtest's default /24 holds 254 ClusterIPs; the run makes ~1,700 Services.
		// The audit log is read by offset: it must never rotate (the
		// default rotates at 100 MB, and a full run writes more).
		APIServerFlags: map[string]string{"service-cluster-ip-range": "10.0.0.0/16", "audit-log-maxsize": "1000000"},
		// The operator runs unthrottled (QPS -1, as main.go); the
		// controller manager must keep up with it (see the report).
		ControllerManagerQPS: controllerManagerQPS,
	})
	if err != nil {
		return err
	}
	defer func() {
		b.operator.stop()
		if b.observer != nil {
			b.observer.stop()
		}
		if b.opts.KeepWork {
			b.keepAuditLog()
		}
		if err := b.cluster.Stop(); err != nil && retErr == nil {
			retErr = err
		}
	}()
	b.c = b.cluster.Client
	b.audit = newAuditLog(b.cluster.AuditLogPath, operatorUser, anchorUser)
	for user, path := range map[string]*string{operatorUser: &b.opKube, anchorUser: &b.ccKube} {
		cfg, err := b.cluster.UserConfig(user, "system:masters")
		if err != nil {
			return err
		}
		*path = filepath.Join(b.work, user+".kubeconfig")
		if err := writeKubeconfig(cfg, *path); err != nil {
			return err
		}
	}
	if b.observer, err = startObserver(b.cluster.Config); err != nil {
		return err
	}
	// The first process lives through P1 to P4, whose largest batch its
	// CPU profile covers (profile.go); later ones run as shipped.
	pprofPort, err := freePort()
	if err != nil {
		return err
	}
	pprofAddr := fmt.Sprintf("127.0.0.1:%d", pprofPort)
	if err := b.startOperator("--pprof-bind-address=" + pprofAddr); err != nil {
		return err
	}
	b.operator.pprofAddr = pprofAddr
	b.recordStartHeap()
	defer func() {
		// Every operator process's peak is sampled before it stops; the
		// last one's and the API server's now.
		b.notePeak(ctx, "the last process, by the end of the run")
		b.noteAPIServerPeak(ctx)
		b.memoryLimitRow()
	}()

	var errs []error
	for _, phase := range []struct {
		name string
		fn   func(context.Context) error
	}{
		{"P1 Hookwright", b.p1Hookwright},
		{"P1 floor", b.p1Floor},
		{"P1 cert-controller", b.p1Anchor},
		{"P2", b.p2},
		{"Migration", b.migration},
		{"P4 floor", b.p4Floor},
		{"P4", b.p4},
		{"P3", b.p3},
		{"P5", b.p5},
		// Last: rotations the storm leaves unfinished when its wait ends
		// go on, and would be counted by the idle measures and slow the
		// profile if any came after it.
		{"Rotation storm floor", b.stormFloor}, // on the storm's cluster, before it
		{"Rotation storm", b.storm},
	} {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !b.opts.runs(phase.name) {
			continue
		}
		b.logf("== %s", phase.name)
		if err := phase.fn(ctx); err != nil {
			b.logf("%s FAILED: %v", phase.name, err)
			errs = append(errs, fmt.Errorf("%s: %w", phase.name, err))
			b.record(phase.name, err)
		}
		if b.operatorDown {
			continue
		}
		b.notePeak(ctx, "by the end of "+phase.name)
		if err := b.operator.alive(); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	return errors.Join(errs...)
}

// goBenchmarks runs the Go benchmarks the run selects: certificate
// issuance, and the conversion kit against controller-runtime's handler
// (P6).
func (b *bench) goBenchmarks(ctx context.Context) {
	if b.opts.runs("cert") {
		b.logf("cert issuance Go benchmarks (-benchtime=%s)", b.sz.certBenchtime)
		b.record("cert", b.certBench(ctx))
	}
	if b.opts.runs("kit") {
		b.logf("conversion kit versus controller-runtime Go benchmark (-benchtime=%s)", b.sz.certBenchtime)
		b.record("kit", b.kitBench(ctx))
	}
}

// record notes a failed measure in the report.
func (b *bench) record(name string, err error) {
	if err != nil {
		b.report.Failures = append(b.report.Failures, fmt.Sprintf("%s: %v", name, err))
	}
}

func (b *bench) startOperator(extraArgs ...string) error {
	// Plain-HTTP metrics on loopback: the bench scrapes them itself, and
	// TokenReviews per scrape would load the API server it measures.
	args := append([]string{"--leader-elect=false", "--health-probe-bind-address=0", "--metrics-secure=false"}, extraArgs...)
	// As its Deployment does (config/manager/manager.yaml): the container's
	// memory limit, from which the operator sets its soft limit.
	limit, err := shippedMemoryLimit(b.root)
	if err != nil {
		return err
	}
	env := []string{fmt.Sprintf("%s=%d", memlimit.EnvVar, limit)}
	p, err := startProcess("hookwright", b.opBin, b.opKube, filepath.Join(b.work, fmt.Sprintf("hookwright-%d.log", time.Now().UnixNano())), env, args...)
	if err != nil {
		return err
	}
	b.operator, b.operatorDown = p, false
	return nil
}

// namespace creates a namespace.
func (b *bench) namespace(ctx context.Context, name string) error {
	err := b.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// createCRD creates a CRD and waits until it is established.
func (b *bench) createCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	if err := b.c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := b.c.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err == nil {
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CRD %s not established within 2 minutes", crd.Name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// watchLoad samples the 1-minute load average every 10 s, so the report
// shows whether anything else competed for the cores during the run.
func (b *bench) watchLoad() func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
				if f := strings.Fields(string(raw)); len(f) > 0 {
					if v, err := strconv.ParseFloat(f[0], 64); err == nil && v > b.report.MaxLoad {
						b.report.MaxLoad = v
					}
				}
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Second):
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// gitDescribe names the commit the run measured ("+ local changes" when
// the work tree differs from it).
func gitDescribe(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown commit"
	}
	commit := strings.TrimSpace(string(out))
	if status, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(status))) > 0 {
		commit += " + local changes"
	}
	return commit
}

// repoRoot is root, or the folder above the working directory holding
// this module's go.mod.
func repoRoot(root string) (string, error) {
	if root != "" {
		return filepath.Abs(root)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if raw, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(raw), "module github.com/hookwright/hookwright\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no hookwright module above %s", dir)
		}
	}
}

// keepAuditLog copies the API server's audit log into the run's folder,
// which KeepWork keeps, and says where.
func (b *bench) keepAuditLog() {
	kept := filepath.Join(b.work, "audit.log")
	if err := exec.Command("cp", b.cluster.AuditLogPath, kept).Run(); err != nil {
		b.logf("keeping the audit log: %v", err)
		return
	}
	b.logf("kept the run's folder %s (audit.log, operator logs)", b.work)
}
