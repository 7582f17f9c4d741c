package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/google/pprof/profile"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// apiServerProfile is kube-apiserver's own CPU profile while P4's largest
// batch converges. The operator spends most of a pass waiting on the API
// server (its own CPU is a fifth of the wall time), so where the server's
// CPU goes says what a converging install costs, and which of the
// operator's writes are expensive ones.
type apiServerProfile struct {
	Path    string
	Seconds float64 // wall time profiled
	CPU     float64 // CPU seconds sampled in it (all of the server's threads)
	Shares  []profileShare
}

// profileShare is the cumulative share of the sampled CPU spent under one
// function (a sample counts once however often the function recurs).
type profileShare struct {
	What, Func string
	Share      float64
}

// apiServerCosts: the kube-apiserver functions that together say what a
// converging install costs the server, each with what it does.
var apiServerCosts = []struct{ what, fn string }{
	{"OpenAPI v3 of a CRD rebuilt (on every write to a CRD, metadata included, for each served version)", "k8s.io/apiextensions-apiserver/pkg/controller/openapiv3.(*Controller).sync"},
	{"OpenAPI v2 of a CRD rebuilt (on CRD writes)", "k8s.io/apiextensions-apiserver/pkg/controller/openapi.(*Controller).sync"},
	{"a custom resource's handler and storage rebuilt (after a CRD's spec changed)", "k8s.io/apiextensions-apiserver/pkg/apiserver.(*crdHandler).getOrCreateServingInfoFor"},
	{"updates and patches stored (every resource)", "k8s.io/apiserver/pkg/storage/etcd3.(*store).GuaranteedUpdate"},
	{"creates stored (every resource)", "k8s.io/apiserver/pkg/storage/etcd3.(*store).Create"},
	{"conversion webhooks called", "k8s.io/apiextensions-apiserver/pkg/apiserver/conversion.(*webhookConverter).Convert"},
	{"the audit log written (the bench's instrument)", "k8s.io/apiserver/plugin/pkg/audit/log.(*backend).ProcessEvents"},
	{"garbage collection (background marking)", "runtime.gcBgMarkWorker"},
}

// apiServerProfileChunk bounds one /debug/pprof/profile request: the
// profile is taken in chunks until the batch converges, then merged.
const apiServerProfileChunk = 10 * time.Second

// profileAPIServer samples kube-apiserver's CPU until stop is closed (the
// chunk under way completes) and sends the merged profile, written to
// path, or the error that prevented it.
func profileAPIServer(ctx context.Context, cfg *rest.Config, path string, stop <-chan struct{}) <-chan profileOutcome {
	out := make(chan profileOutcome, 1)
	go func() {
		p, err := collectAPIServerProfile(ctx, cfg, path, stop)
		out <- profileOutcome{profile: p, err: err}
	}()
	return out
}

type profileOutcome struct {
	profile *apiServerProfile
	err     error
}

func collectAPIServerProfile(ctx context.Context, cfg *rest.Config, path string, stop <-chan struct{}) (*apiServerProfile, error) {
	// The way kubectl get --raw reaches a path outside the API groups.
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	merged, err := collectChunks(ctx, stop, func(ctx context.Context) ([]byte, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(int(apiServerProfileChunk.Seconds()))).DoRaw(ctx)
		if err != nil {
			return nil, fmt.Errorf("kube-apiserver /debug/pprof/profile: %w", err)
		}
		return body, nil
	})
	if err != nil {
		return nil, err
	}
	if err := writeProfile(merged, path); err != nil {
		return nil, err
	}
	res := &apiServerProfile{Path: path, Seconds: time.Since(started).Seconds()}
	res.CPU, res.Shares = cumulativeShares(merged)
	return res, nil
}

// collectChunks fetches CPU profiles one chunk after the other until stop
// is closed (the chunk under way completes), and merges them.
func collectChunks(ctx context.Context, stop <-chan struct{}, fetch func(context.Context) ([]byte, error)) (*profile.Profile, error) {
	var chunks []*profile.Profile
	for stopped := false; !stopped; {
		body, err := fetch(ctx)
		if err != nil {
			return nil, err
		}
		p, err := profile.ParseData(body)
		if err != nil {
			return nil, err
		}
		chunks = append(chunks, p)
		select {
		case <-stop:
			stopped = true
		case <-ctx.Done():
			return nil, ctx.Err()
		default:
		}
	}
	return profile.Merge(chunks)
}

func writeProfile(p *profile.Profile, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := p.Write(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// cumulativeShares sums the CPU of the samples under each function of
// apiServerCosts, as a share of all samples (go tool pprof -top -cum).
func cumulativeShares(p *profile.Profile) (cpuSeconds float64, shares []profileShare) {
	cpu := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool { return t.Type == "cpu" })
	if cpu < 0 {
		return 0, nil
	}
	under := make([]int64, len(apiServerCosts))
	var total int64
	for _, s := range p.Sample {
		v := s.Value[cpu]
		total += v
		for i, c := range apiServerCosts {
			if sampleCalls(s, c.fn) {
				under[i] += v
			}
		}
	}
	for i, c := range apiServerCosts {
		share := 0.0
		if total > 0 {
			share = float64(under[i]) / float64(total)
		}
		shares = append(shares, profileShare{What: c.what, Func: c.fn, Share: share})
	}
	return time.Duration(total).Seconds(), shares
}

func sampleCalls(s *profile.Sample, fn string) bool {
	for _, loc := range s.Location {
		for _, line := range loc.Line {
			if line.Function != nil && line.Function.Name == fn {
				return true
			}
		}
	}
	return false
}

// apiServerProfilePath is where a profile of the API server goes:
// p4-apiserver-cpu.pprof for P4's largest batch, storm-apiserver-cpu.pprof
// for the rotation storm.
func (b *bench) apiServerProfilePath(measure string) string {
	dir := b.opts.ProfileDir
	if dir == "" {
		dir = b.work
	}
	return filepath.Join(dir, measure+"-apiserver-cpu.pprof")
}

// apiServerNote renders the profile's shares for the report; title names
// the measure, over says what the profile covers ("the N=1000 batch").
func apiServerNote(p *apiServerProfile, title, over string) string {
	note := fmt.Sprintf("**%s, the API server's side** (`%s`): kube-apiserver's own CPU profile (its /debug/pprof/profile, in chunks of %s, merged) over %s: %s of CPU in %s of wall time (%.2f of the 2 cores on average; etcd, kube-controller-manager, the pod stand-in and the operator share the machine, and the profiling costs the server some CPU of its own). Share of the server's CPU spent under each function (cumulative; the rows overlap: a CRD write's OpenAPI rebuild also allocates, and its garbage is collected):\n",
		title, filepath.Base(p.Path), apiServerProfileChunk, over, secs(p.CPU), secs(p.Seconds), p.CPU/p.Seconds)
	for _, s := range p.Shares {
		note += fmt.Sprintf("\n- %.1f%%: %s (`%s`)", 100*s.Share, s.What, s.Func)
	}
	return note
}
