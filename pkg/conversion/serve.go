package conversion

import (
	"context"
	"crypto/tls"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
)

// Options configure Serve. Zero values take the defaults; the paths, port
// and certificate files match controller-runtime's webhook server and the
// Deployment Hookwright installs.
type Options struct {
	// CertDir holds the mounted serving Secret; default
	// /tmp/k8s-webhook-server/serving-certs.
	CertDir string
	// CertName and KeyName are file names in CertDir; default tls.crt, tls.key.
	CertName, KeyName string
	// Addr is the listen address; default :9443. Ignored with Listener.
	Addr string
	// Listener, when set, is served instead of listening on Addr (tests,
	// socket activation).
	Listener net.Listener
	// Path serves ConversionReviews; default /convert.
	Path string
	// ReadyPath answers 200 once a certificate is loaded; default /readyz.
	// It is on the TLS port, like the webhook: kubelet's HTTPS probes do
	// not verify the certificate, and before one is loaded the handshake
	// itself fails, which a probe counts as not ready too.
	ReadyPath string
	// MetricsRegistry, when set, gets the webhook's metrics (for example
	// controller-runtime's metrics.Registry, served by the manager).
	MetricsRegistry prometheus.Registerer
	// ShutdownTimeout bounds the wait for in-flight reviews after ctx
	// ends; default 30s, the API server's longest webhook timeout.
	ShutdownTimeout time.Duration

	// The limits below keep one client from taking the webhook down for
	// the API server. For each, a negative value turns it off.

	// MaxRequestBytes bounds a ConversionReview body; a larger one is
	// answered 413 Request Entity Too Large without being read further.
	// Default 64 MiB. The API server sends one review per object or per
	// LIST page: an object is at most ~1.5 MiB in etcd and a write body
	// at most 3 MiB, so a one-object review is a few MiB at most; the
	// default leaves room for a page of many large objects and still
	// refuses a 100 MiB body.
	MaxRequestBytes int64
	// MaxConcurrentReviews bounds the reviews handled at once (their
	// bodies, decoded objects and conversions); default 8 per CPU
	// (GOMAXPROCS, which Go derives from the container's CPU limit), at
	// least 16. Conversions are CPU-bound, so more only costs memory: up
	// to about MaxConcurrentReviews x MaxRequestBytes plus the decoded
	// objects. The readiness path is not counted.
	MaxConcurrentReviews int
	// QueueTimeout is how long a review beyond MaxConcurrentReviews waits
	// for a slot (or until its client gives up) before it is answered 429
	// Too Many Requests with Retry-After: 1; default 5s. The API server
	// retries such an answer within its 30 s for the call, so a short
	// wait absorbs a burst and leaves it time to retry.
	QueueTimeout time.Duration
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are
	// the http.Server's (where, turned off, the first and last fall back
	// to ReadTimeout); defaults 10s, 30s, 35s and 120s. The API server
	// gives a conversion call 30 s in all and sends the whole body at
	// once, so a request still arriving after 30 s is of no use to it;
	// the write deadline, counted from the end of the headers, allows the
	// 30 s and a margin; idle connections outlive the API server's 90 s
	// idle timeout so the client, not the webhook, closes them (a close
	// racing a new request would fail that conversion).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
}

func (o Options) withDefaults() Options {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&o.CertDir, "/tmp/k8s-webhook-server/serving-certs")
	def(&o.CertName, "tls.crt")
	def(&o.KeyName, "tls.key")
	def(&o.Addr, ":9443")
	def(&o.Path, "/convert")
	def(&o.ReadyPath, "/readyz")
	defDuration := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	defDuration(&o.ShutdownTimeout, 30*time.Second)
	defDuration(&o.QueueTimeout, 5*time.Second)
	defDuration(&o.ReadHeaderTimeout, 10*time.Second)
	defDuration(&o.ReadTimeout, 30*time.Second)
	defDuration(&o.WriteTimeout, 35*time.Second)
	defDuration(&o.IdleTimeout, 120*time.Second)
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = defaultMaxRequestBytes
	}
	if o.MaxConcurrentReviews == 0 {
		o.MaxConcurrentReviews = max(16, 8*runtime.GOMAXPROCS(0))
	}
	return o
}

// defaultMaxRequestBytes is the default of Options.MaxRequestBytes.
const defaultMaxRequestBytes = 64 << 20

// serverTimeout is d for an http.Server field: a negative d is none.
func serverTimeout(d time.Duration) time.Duration { return max(d, 0) }

// Serve serves wh over TLS until ctx ends, then shuts down gracefully:
// it stops accepting connections and waits for in-flight reviews. The
// certificate is reloaded when its files change. Logs go to the
// logr.Logger in ctx, if any. It returns nil after a clean shutdown.
//
// Requests to Path are bounded as Options describe: a body over
// MaxRequestBytes is answered 413, one that stops arriving 408 (when
// ReadTimeout cuts it off), a review finding no free slot in time 429
// with Retry-After, a malformed review 400. A panicking conversion
// function fails only its review (see Error); a panic elsewhere in
// handling a request is logged and answered 500. None of these affects
// other requests.
func Serve(ctx context.Context, wh *Webhook, opts Options) error {
	opts = opts.withDefaults()
	if opts.MetricsRegistry != nil {
		if err := wh.RegisterMetrics(opts.MetricsRegistry); err != nil {
			return fmt.Errorf("registering conversion metrics: %w", err)
		}
	}
	ln := opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", opts.Addr); err != nil {
			return fmt.Errorf("listening for conversion reviews: %w", err)
		}
	}
	certs := NewCertLoader(filepath.Join(opts.CertDir, opts.CertName), filepath.Join(opts.CertDir, opts.KeyName))

	mux := http.NewServeMux()
	mux.Handle(opts.Path, newGuard(wh, opts))
	mux.Handle(opts.ReadyPath, certs.ReadyHandler())
	srv := &http.Server{
		Handler: mux,
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: certs.GetCertificate,
		},
		// Requests keep the logger but not the cancellation: in-flight
		// reviews must finish during the graceful shutdown.
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ReadHeaderTimeout: serverTimeout(opts.ReadHeaderTimeout),
		ReadTimeout:       serverTimeout(opts.ReadTimeout),
		WriteTimeout:      serverTimeout(opts.WriteTimeout),
		IdleTimeout:       serverTimeout(opts.IdleTimeout),
	}

	if l, err := logr.FromContext(ctx); err == nil {
		// Handshake errors (an API server not trusting our CA, say) go to
		// the structured log instead of stderr.
		srv.ErrorLog = stdlog.New(logWriter{l}, "", 0)
	}

	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watchErr := make(chan error, 1)
	go func() { watchErr <- certs.Start(watchCtx) }()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.ServeTLS(ln, "", "") }()

	log := logr.FromContextOrDiscard(ctx)
	log.Info("Serving conversion webhook", "addr", ln.Addr().String(), "path", opts.Path)
	var err error
	watching := true
	select {
	case <-ctx.Done():
	case serr := <-serveErr:
		err = fmt.Errorf("serving conversion webhook: %w", serr)
	case werr := <-watchErr:
		watching = false
		if werr != nil {
			err = fmt.Errorf("watching the serving certificate: %w", werr)
		}
	}

	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.ShutdownTimeout)
	defer cancel()
	if serr := srv.Shutdown(shutdownCtx); serr != nil && err == nil {
		err = fmt.Errorf("shutting down conversion webhook: %w", serr)
	}
	stopWatch()
	if watching {
		// Wait, so no goroutine outlives Serve.
		if werr := <-watchErr; werr != nil && err == nil {
			err = fmt.Errorf("watching the serving certificate: %w", werr)
		}
	}
	log.Info("Stopped conversion webhook")
	return err
}

// logWriter adapts a logr.Logger to the *log.Logger net/http wants.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info("HTTP server error", "error", strings.TrimSpace(string(p)))
	return len(p), nil
}
