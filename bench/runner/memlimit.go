package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/internal/memlimit"
)

// The P5 limit measure: the operator's peak RSS against the memory limit
// its Deployment ships with, and its Go heap per install.
//
// Every operator process the run starts is sampled before it stops or the
// run ends (VmHWM is the peak since the process started): the first one
// lives through P1 and P4's bursts of installs created at once, the last
// through P5 and the rotation storm.

// shippedManifest is where the manager's Deployment, and its limit, ship.
const shippedManifest = "config/manager/manager.yaml"

type memoryLimitResult struct {
	Limit                   int64 // the manager container's resources.limits.memory
	Peak                    int64 // the highest VmHWM of the operator processes
	PeakWhere               string
	PeakInstalls            int
	StartHeap               int64 // Go heap in use just after the first start, no install yet
	IdleHeap                int64 // Go heap in use idle (P5), IdleInstalls present
	IdleInstalls            int
	APIServerPeak           int64 // kube-apiserver's VmHWM at the end of the run
	APIServerCRDs           int   // the CRDs it served then
	APIServerPeakUnreadable string
}

// perInstall is the idle Go heap's growth per install, from no install to
// IdleInstalls (two points: a slope, not a fit).
func (m *memoryLimitResult) perInstall() float64 {
	if m.IdleInstalls == 0 || m.StartHeap == 0 {
		return 0
	}
	return float64(m.IdleHeap-m.StartHeap) / float64(m.IdleInstalls)
}

// shippedMemoryLimit reads the manager container's memory limit from the
// shipped manifest.
func shippedMemoryLimit(root string) (int64, error) {
	raw, err := os.ReadFile(filepath.Join(root, shippedManifest))
	if err != nil {
		return 0, err
	}
	var dep appsv1.Deployment
	if err := yaml.Unmarshal(raw, &dep); err != nil {
		return 0, fmt.Errorf("%s: %w", shippedManifest, err)
	}
	for _, c := range dep.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			if q, ok := c.Resources.Limits["memory"]; ok {
				return q.Value(), nil
			}
		}
	}
	return 0, fmt.Errorf("%s: no memory limit on container manager", shippedManifest)
}

// recordStartHeap samples the first operator's Go heap before any install
// exists, once its metrics answer.
func (b *bench) recordStartHeap() {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if h := heapInuse(b.operator); h > 0 {
			b.memLimit.StartHeap = h
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// notePeak samples the running operator's VmHWM (its peak so far).
func (b *bench) notePeak(ctx context.Context, where string) {
	if b.operator == nil || b.operatorDown {
		return
	}
	m, err := sampleMemory(b.operator.pid())
	if err != nil || m.HWM <= b.memLimit.Peak {
		return
	}
	b.memLimit.Peak, b.memLimit.PeakWhere, b.memLimit.PeakInstalls = m.HWM, where, b.countInstalls(ctx)
}

func (b *bench) countInstalls(ctx context.Context) int {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("WebhookInstallList"))
	if err := b.c.List(ctx, list); err != nil {
		return 0
	}
	return len(list.Items)
}

// noteAPIServerPeak samples kube-apiserver's VmHWM and the CRDs it serves:
// what growing the cluster further would cost this machine.
func (b *bench) noteAPIServerPeak(ctx context.Context) {
	pid, err := processByExe("kube-apiserver")
	if err != nil {
		b.memLimit.APIServerPeakUnreadable = err.Error()
		return
	}
	m, err := sampleMemory(pid)
	if err != nil {
		b.memLimit.APIServerPeakUnreadable = err.Error()
		return
	}
	if crds, err := b.countCRDs(ctx); err == nil {
		b.memLimit.APIServerPeak, b.memLimit.APIServerCRDs = m.HWM, crds
	}
}

// countCRDs counts the CRDs the API server serves (metadata only).
func (b *bench) countCRDs(ctx context.Context) (int, error) {
	crds := &metav1.PartialObjectMetadataList{}
	crds.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	if err := b.c.List(ctx, crds); err != nil {
		return 0, err
	}
	return len(crds.Items), nil
}

// processByExe finds the one running process whose executable is named
// name (the test ground starts one kube-apiserver).
func processByExe(name string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && filepath.Base(exe) == name {
			return pid, nil
		}
	}
	return 0, errors.New("no " + name + " process found")
}

// memoryLimitRow writes the P5 limit row from what was sampled so far.
func (b *bench) memoryLimitRow() {
	m := &b.memLimit
	if m.Peak == 0 {
		return
	}
	limit, err := shippedMemoryLimit(b.root)
	if err != nil {
		b.report.setRow(Row{ID: "P5 limit", Measure: "Peak RSS against the shipped memory limit", Goal: "limit ≥ 1.3× the peak at 3,000 installs", Hookwright: err.Error(), Anchor: "—", Met: "**no**"})
		return
	}
	m.Limit = limit
	headroom := float64(limit) / float64(m.Peak)
	b.report.MemoryLimit = m
	b.report.setRow(Row{
		ID:      "P5 limit",
		Measure: fmt.Sprintf("Peak RSS (VmHWM of every operator process, bursts included) against the memory limit %s ships; Go heap per install, idle", shippedManifest),
		Goal:    "limit ≥ 1.3× the peak at 3,000 installs",
		Hookwright: fmt.Sprintf("peak %s (%s, %d installs); limit %s = %.2f× it; heap %s with no install, %s with %d: %.0f KiB per install",
			mib(m.Peak), m.PeakWhere, m.PeakInstalls, mib(limit), headroom, mib(m.StartHeap), mib(m.IdleHeap), m.IdleInstalls, m.perInstall()/1024),
		Anchor: "—",
		Met:    limitMet(headroom, m.PeakInstalls),
	})
}

// limitMet says whether the limit held the peak with 30% headroom, and at
// how many installs: the goal's 3,000, or fewer.
func limitMet(headroom float64, installs int) string {
	met := fmt.Sprintf("%s at %d installs", metText(headroom >= 1.3), installs)
	if installs < 3000 {
		met += "; 3,000 not run"
	}
	return met
}

// memoryLimitNote says why 3,000 installs were not run.
func (m *memoryLimitResult) note() string {
	note := "**P5 limit.** The goal is at 3,000 installs."
	if m.PeakInstalls < 3000 {
		note += " The run stops at the installs above."
	}
	if m.APIServerPeak > 0 {
		note += fmt.Sprintf(" This machine's kube-apiserver peaked at %s (VmHWM) serving %d CRDs by the end of the run, and 3,000 installs bring 6,000 more CRDs; the run also has to fit in 25 minutes.",
			mib(m.APIServerPeak), m.APIServerCRDs)
	}
	if per := m.perInstall(); per > 0 {
		note += fmt.Sprintf(" At the measured %.0f KiB of idle Go heap per install, 3,000 installs would hold about %s of heap idle; the peak, a burst's, is not extrapolated.", per/1024, mib(m.StartHeap+int64(per*3000)))
	}
	if m.Limit > 0 {
		note += fmt.Sprintf(" The operator's soft memory limit (%d%% of the shipped limit: %s) makes the collector reclaim a burst's garbage before the heap passes it, so what has to fit at 3,000 installs is what a burst holds live, not the garbage a collector paced by GOGC alone lets pile up; it does not make room for more live memory than that.", memlimit.SharePercent, mib(memlimit.Soft(m.Limit)))
	}
	return note
}
