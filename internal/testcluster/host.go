package testcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// Host is the program a pod stand-in runs. It serves on env.Listener until
// ctx ends, reads files only through env.MountDir, and calls env.MarkReady
// once it serves (the stand-in's readiness probe).
type Host interface {
	Run(ctx context.Context, env *PodEnv) error
}

// PodEnv is what a host sees of its pod: its loopback listener and the
// folders the Deployment mounts into the container, nothing else.
type PodEnv struct {
	Namespace  string
	Deployment string
	Pod        string // the Pod's name
	Listener   net.Listener

	mounts    map[string]string // container mountPath -> local folder
	readyOnce sync.Once
	ready     chan struct{}
}

// MountDir returns the local folder behind a container mountPath. A path the
// Deployment does not mount is an error: a host cannot read a Secret that
// its Deployment does not mount.
func (e *PodEnv) MountDir(mountPath string) (string, error) {
	if dir, ok := e.mounts[filepath.Clean(mountPath)]; ok {
		return dir, nil
	}
	mounted := make([]string, 0, len(e.mounts))
	for p := range e.mounts {
		mounted = append(mounted, p)
	}
	sort.Strings(mounted)
	return "", fmt.Errorf("deployment %s/%s mounts nothing at %s (mounted: %v)", e.Namespace, e.Deployment, mountPath, mounted)
}

// MarkReady tells the stand-in the host serves; it is idempotent.
func (e *PodEnv) MarkReady() { e.readyOnce.Do(func() { close(e.ready) }) }

// DefaultCertMount is controller-runtime's default serving-cert folder,
// where Hookwright mounts the serving Secret.
const DefaultCertMount = "/tmp/k8s-webhook-server/serving-certs"

// HandlerHost serves an http.Handler over TLS with the certificate the
// Deployment mounts, hot-reloaded by controller-runtime's certwatcher as a
// real webhook pod would.
type HandlerHost struct {
	Handler   http.Handler
	CertMount string // default DefaultCertMount
	CertFile  string // default tls.crt
	KeyFile   string // default tls.key
	// DrainPeriod is how long the host keeps answering after it is told
	// to stop (SIGTERM), with keep-alive off so clients move their pooled
	// connections to other pods. Default DefaultDrainPeriod.
	DrainPeriod time.Duration
}

// DefaultDrainPeriod is a well-behaved webhook pod's drain after SIGTERM.
const DefaultDrainPeriod = 3 * time.Second

// closeWhenDraining answers with "Connection: close" once draining, so
// clients retire their pooled connections to this pod one by one.
func closeWhenDraining(next http.Handler, draining *atomic.Bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining.Load() {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// Run implements Host.
func (h HandlerHost) Run(ctx context.Context, env *PodEnv) error {
	mount := valueOr(h.CertMount, DefaultCertMount)
	dir, err := env.MountDir(mount)
	if err != nil {
		return err
	}
	watcher, err := certwatcher.New(filepath.Join(dir, valueOr(h.CertFile, "tls.crt")), filepath.Join(dir, valueOr(h.KeyFile, "tls.key")))
	if err != nil {
		return fmt.Errorf("loading serving certificate from %s: %w", mount, err)
	}
	watcher = watcher.WithWatchInterval(time.Second)
	go func() { _ = watcher.Start(ctx) }()

	srv := &http.Server{
		Handler:           h.Handler,
		TLSConfig:         &tls.Config{GetCertificate: watcher.GetCertificate, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		// Failed handshakes are expected (tests present wrong CAs on purpose).
		ErrorLog: log.New(io.Discard, "", 0),
	}
	return ServeDraining(ctx, env, srv, h.DrainPeriod)
}

// ServeDraining serves srv over TLS on env.Listener, marks the pod ready,
// and when ctx ends drains for drain (DefaultDrainPeriod when 0) before it
// shuts down, as a well-behaved webhook pod does on SIGTERM: the pod is
// already out of the Service, so it answers what still comes on pooled
// connections, each answer telling the client to close that connection
// itself. (SetKeepAlivesEnabled(false), or a Shutdown straight away,
// would close idle connections under a client about to use them: the
// client's request then fails with EOF.)
func ServeDraining(ctx context.Context, env *PodEnv, srv *http.Server, drain time.Duration) error {
	var draining atomic.Bool
	srv.Handler = closeWhenDraining(srv.Handler, &draining)
	if drain == 0 {
		drain = DefaultDrainPeriod
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		draining.Store(true)
		time.Sleep(drain)
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	env.MarkReady()
	err := srv.ServeTLS(env.Listener, "", "")
	if !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-stopped
	return nil
}

func valueOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// HostFunc adapts a function to Host.
type HostFunc func(ctx context.Context, env *PodEnv) error

// Run implements Host.
func (f HostFunc) Run(ctx context.Context, env *PodEnv) error { return f(ctx, env) }
