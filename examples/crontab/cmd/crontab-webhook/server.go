package main

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

	"github.com/hookwright/hookwright/pkg/conversion"
)

// options configure serve. The kit's conversion.Serve serves one
// conversion handler; this binary serves the admission webhooks too, on
// the same port and certificate, so it runs its own server with the kit's
// defaults (see conversion.Options for why each value).
type options struct {
	Addr     string       // listen address
	Listener net.Listener // served instead of listening on Addr (tests)
	CertDir  string       // holds tls.crt and tls.key, reloaded when they change
	// ReadyPath answers 200 once a certificate is loaded (the readiness
	// probe); it is not subject to the limits below.
	ReadyPath string

	// MaxRequestBytes bounds a review's body (413 beyond). The kit's 64
	// MiB leaves room for a ConversionReview of a LIST page; an
	// AdmissionReview is at most two objects, and controller-runtime's
	// admission handler refuses one over 7 MiB by itself.
	MaxRequestBytes int64
	// MaxConcurrentReviews bounds the reviews handled at once, of all
	// three webhooks; one beyond it waits up to QueueTimeout for a slot,
	// then is answered 429 with Retry-After: 1.
	MaxConcurrentReviews int
	QueueTimeout         time.Duration

	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// ShutdownTimeout bounds the wait for in-flight reviews once the
	// context ends (SIGTERM).
	ShutdownTimeout time.Duration
}

// defaultOptions are the kit's defaults (conversion.Options): the API
// server gives a webhook call at most 30 s, and closes idle connections
// after 90 s, before the server's 120 s would.
func defaultOptions() options {
	return options{
		Addr:                 ":9443",
		CertDir:              "/tmp/k8s-webhook-server/serving-certs",
		ReadyPath:            "/readyz",
		MaxRequestBytes:      64 << 20,
		MaxConcurrentReviews: max(16, 8*runtime.GOMAXPROCS(0)),
		QueueTimeout:         5 * time.Second,
		ReadHeaderTimeout:    10 * time.Second,
		ReadTimeout:          30 * time.Second,
		WriteTimeout:         35 * time.Second,
		IdleTimeout:          120 * time.Second,
		ShutdownTimeout:      30 * time.Second,
	}
}

// serve serves webhooks over TLS with the mounted certificate until ctx
// ends, then shuts down gracefully (in-flight reviews finish). Logs go to
// the logr.Logger in ctx.
func serve(ctx context.Context, webhooks http.Handler, opts options) error {
	ln := opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", opts.Addr); err != nil {
			return fmt.Errorf("listening: %w", err)
		}
	}
	certs := conversion.NewCertLoader(filepath.Join(opts.CertDir, "tls.crt"), filepath.Join(opts.CertDir, "tls.key"))
	mux := http.NewServeMux()
	mux.Handle(opts.ReadyPath, certs.ReadyHandler())
	mux.Handle("/", limit(webhooks, opts))
	log := logr.FromContextOrDiscard(ctx)
	srv := &http.Server{
		Handler:   mux,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate},
		// Requests keep the logger but not the cancellation: in-flight
		// reviews finish during the graceful shutdown.
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		ReadTimeout:       opts.ReadTimeout,
		WriteTimeout:      opts.WriteTimeout,
		IdleTimeout:       opts.IdleTimeout,
		// TLS handshake errors (an API server not trusting our CA) go to
		// the structured log.
		ErrorLog: stdlog.New(logWriter{log}, "", 0),
	}

	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watchErr := make(chan error, 1)
	go func() { watchErr <- certs.Start(watchCtx) }()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.ServeTLS(ln, "", "") }()
	log.Info("Serving CronTab webhooks", "addr", ln.Addr().String())

	var err error
	watching := true
	select {
	case <-ctx.Done():
	case serr := <-serveErr:
		err = fmt.Errorf("serving: %w", serr)
	case werr := <-watchErr:
		watching = false
		if werr != nil {
			err = fmt.Errorf("watching the serving certificate: %w", werr)
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.ShutdownTimeout)
	defer cancel()
	if serr := srv.Shutdown(shutdownCtx); serr != nil && err == nil {
		err = fmt.Errorf("shutting down: %w", serr)
	}
	stopWatch()
	if watching {
		if werr := <-watchErr; werr != nil && err == nil {
			err = fmt.Errorf("watching the serving certificate: %w", werr)
		}
	}
	log.Info("Stopped CronTab webhooks")
	return err
}

// limit bounds what one client can cost the webhooks: the body size and
// the reviews handled at once (a review waits QueueTimeout for a slot,
// then gets 429 with Retry-After, which the API server retries).
func limit(next http.Handler, opts options) http.Handler {
	slots := make(chan struct{}, opts.MaxConcurrentReviews)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > opts.MaxRequestBytes {
			http.Error(w, fmt.Sprintf("review body larger than %d bytes", opts.MaxRequestBytes), http.StatusRequestEntityTooLarge)
			return
		}
		if !acquire(r.Context(), slots, opts.QueueTimeout) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, fmt.Sprintf("too many reviews in flight (limit %d); retry later", cap(slots)), http.StatusTooManyRequests)
			return
		}
		defer func() { <-slots }()
		// A body longer than it said fails its read; net/http then closes
		// the connection instead of reading on.
		r.Body = http.MaxBytesReader(w, r.Body, opts.MaxRequestBytes)
		next.ServeHTTP(w, r)
	})
}

func acquire(ctx context.Context, slots chan struct{}, wait time.Duration) bool {
	select {
	case slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// logWriter adapts a logr.Logger to the *log.Logger net/http wants.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info("HTTP server error", "error", strings.TrimSpace(string(p)))
	return len(p), nil
}
