package conversion

import (
	"context"
	"crypto/tls"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
)

// Options configure Serve. Zero values take the defaults, which match
// controller-runtime's webhook server and the Deployment Hookwright
// installs.
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
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = 30 * time.Second
	}
	return o
}

// Serve serves wh over TLS until ctx ends, then shuts down gracefully:
// it stops accepting connections and waits for in-flight reviews. The
// certificate is reloaded when its files change. Logs go to the
// logr.Logger in ctx, if any. It returns nil after a clean shutdown.
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
	mux.Handle(opts.Path, wh)
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
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
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
