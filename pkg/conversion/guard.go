package conversion

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/go-logr/logr"
)

// guard wraps the Webhook in Serve so that no request can take the
// server down for the others: it bounds the body, the reviews handled at
// once, and answers a panic outside a conversion function with a 500.
// The readiness path does not go through it.
type guard struct {
	next     http.Handler
	metrics  *metrics
	maxBytes int64 // <= 0: unbounded
	// slots holds one token per review being handled; nil: unbounded.
	slots     chan struct{}
	queueWait time.Duration // <= 0: a review beyond the bound is refused at once
}

func newGuard(wh *Webhook, opts Options) *guard {
	g := &guard{next: wh, metrics: wh.metrics, maxBytes: opts.MaxRequestBytes, queueWait: opts.QueueTimeout}
	if opts.MaxConcurrentReviews > 0 {
		g.slots = make(chan struct{}, opts.MaxConcurrentReviews)
	}
	return g
}

// retryAfter is the Retry-After of an overload answer, in seconds. The
// API server's client (client-go) retries a 429 that carries one, after
// that many seconds, within the call's 30 s; the API server's own
// max-in-flight limit answers the same way.
const retryAfter = "1"

func (g *guard) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	log := logr.FromContextOrDiscard(r.Context())
	if g.maxBytes > 0 && r.ContentLength > g.maxBytes {
		// Declared too large: refuse before reading a byte or taking a
		// slot. net/http closes the connection rather than drain it.
		g.metrics.failed(ReasonDecode)
		log.Info("Rejected conversion request", "error", "body too large", "contentLength", r.ContentLength, "limit", g.maxBytes)
		http.Error(rw, tooLargeMessage(g.maxBytes), http.StatusRequestEntityTooLarge)
		return
	}
	if !g.acquire(r.Context()) {
		log.V(1).Info("Refused conversion request: too many reviews in flight", "limit", cap(g.slots))
		rw.Header().Set("Retry-After", retryAfter)
		http.Error(rw, fmt.Sprintf("too many conversion reviews in flight (limit %d); retry later", cap(g.slots)), http.StatusTooManyRequests)
		return
	}
	defer g.release()

	body := &watchedBody{ReadCloser: r.Body, limit: g.maxBytes}
	if g.maxBytes > 0 {
		// With the real ResponseWriter, so net/http closes the
		// connection after the answer instead of reading on.
		body.ReadCloser = http.MaxBytesReader(rw, r.Body, g.maxBytes)
	}
	r = r.WithContext(r.Context()) // a shallow copy: handlers leave the Request alone
	r.Body = body
	w := &guardedWriter{ResponseWriter: rw, body: body}
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler { //nolint:errorlint // net/http compares it the same way
			panic(v)
		}
		// Conversion functions are recovered per object (see convert);
		// this is a panic in the kit itself. Answer rather than drop the
		// connection, so the API server reports an HTTP 500, not an EOF.
		g.metrics.failed(ReasonPanic)
		log.Error(fmt.Errorf("panic: %v", v), "Conversion webhook panicked", "stack", string(debug.Stack()))
		if w.wroteHeader {
			// Part of an answer is out: abort the connection so the
			// client cannot take it for a whole one.
			panic(http.ErrAbortHandler)
		}
		http.Error(rw, "internal error in the conversion webhook", http.StatusInternalServerError)
	}()
	g.next.ServeHTTP(w, r)
}

func (g *guard) acquire(ctx context.Context) bool {
	if g.slots == nil {
		return true
	}
	select {
	case g.slots <- struct{}{}:
		return true
	default:
	}
	if g.queueWait <= 0 {
		return false
	}
	t := time.NewTimer(g.queueWait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

func (g *guard) release() {
	if g.slots != nil {
		<-g.slots
	}
}

func tooLargeMessage(limit int64) string {
	return fmt.Sprintf("ConversionReview body larger than %d bytes (Options.MaxRequestBytes)", limit)
}

// watchedBody remembers why reading the request body failed, so the answer
// can say it with a status: the Webhook answers any unreadable body with a
// 400, which is right for bad JSON but not for a body over the limit (413)
// or one that stopped arriving (408).
type watchedBody struct {
	io.ReadCloser
	limit int64
	err   error
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && b.err == nil {
		b.err = err
	}
	return n, err
}

// failure is the status and message for a body that could not be read,
// or 0.
func (b *watchedBody) failure() (int, string) {
	var tooLarge *http.MaxBytesError
	switch {
	case b.err == nil:
		return 0, ""
	case errors.As(b.err, &tooLarge):
		return http.StatusRequestEntityTooLarge, tooLargeMessage(b.limit)
	case errors.Is(b.err, os.ErrDeadlineExceeded):
		return http.StatusRequestTimeout, "timed out reading the ConversionReview body (Options.ReadTimeout)"
	}
	return 0, ""
}

// guardedWriter replaces the Webhook's answer to a body it could not read
// with watchedBody's status. The Webhook reads the whole body before it
// writes, so the failure is known by the first write.
type guardedWriter struct {
	http.ResponseWriter
	body        *watchedBody
	wroteHeader bool
	discard     bool // the Webhook's own answer is replaced
}

func (w *guardedWriter) WriteHeader(code int) {
	if w.wroteHeader {
		w.ResponseWriter.WriteHeader(code) // net/http logs the superfluous call
		return
	}
	w.wroteHeader = true
	if status, msg := w.body.failure(); status != 0 && status != code {
		w.discard = true
		http.Error(w.ResponseWriter, msg, status)
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *guardedWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.discard {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *guardedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
