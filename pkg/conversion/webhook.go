package conversion

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Webhook is the http.Handler answering ConversionReviews for a set of
// Converters. Logs go to the logr.Logger in the request's context (Serve
// puts the one from its own context there); without one, nothing is
// logged.
type Webhook struct {
	converters map[schema.GroupKind]*Converter
	metrics    *metrics
}

// NewWebhook serves converters. It panics if two convert the same kind.
func NewWebhook(converters ...*Converter) *Webhook {
	w := &Webhook{converters: make(map[schema.GroupKind]*Converter, len(converters))}
	for _, c := range converters {
		if _, dup := w.converters[c.gk]; dup {
			panic(fmt.Sprintf("conversion: two converters for %s", c.gk))
		}
		w.converters[c.gk] = c
	}
	return w
}

// Handler is NewWebhook(c), for a webhook serving one kind.
func (c *Converter) Handler() http.Handler { return NewWebhook(c) }

// buffers hold request and response bodies between requests: a LIST
// review can be megabytes, and growing a fresh buffer each time is most
// of the garbage a webhook would make.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer keeps one huge review from pinning its buffer forever.
const maxPooledBuffer = 8 << 20

func (w *Webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	log := logr.FromContextOrDiscard(r.Context())
	if r.Method != http.MethodPost {
		w.badRequest(rw, log, fmt.Errorf("a conversion webhook accepts POST, not %s", r.Method))
		return
	}
	buf := buffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			buf.Reset()
			buffers.Put(buf)
		}
	}()
	buf.Reset()
	if _, err := buf.ReadFrom(r.Body); err != nil {
		w.badRequest(rw, log, fmt.Errorf("reading ConversionReview: %w", err))
		return
	}
	rv, err := decodeReview(buf.Bytes())
	if err != nil {
		w.badRequest(rw, log, err)
		return
	}

	resp, cerr := w.review(rv.Request)
	if cerr != nil {
		w.metrics.failed(cerr.Reason)
		logFailure(log, rv.Request.UID, cerr)
	}

	// The request body is decoded into fresh values, so its buffer is
	// free for the response.
	buf.Reset()
	if err := encodeResponse(buf, rv.APIVersion, &resp); err != nil {
		// Only a function storing a value JSON cannot hold (NaN, a
		// channel) gets here; answer so the API server reports it.
		log.Error(err, "Encoding ConversionReview response", "uid", rv.Request.UID)
		w.metrics.failed(ReasonConvert)
		buf.Reset()
		resp = failure(rv.Request.UID, fmt.Errorf("encoding the converted objects: %w", err))
		_ = encodeResponse(buf, rv.APIVersion, &resp) // a failure has nothing that cannot encode
	}
	rw.Header().Set("Content-Type", "application/json")
	_, _ = rw.Write(buf.Bytes())
}

// review converts every object of req in order, converting them in place
// in req.Objects. The first failure fails the whole review, as the API
// server would fail the whole LIST.
func (w *Webhook) review(req *request) (response, *Error) {
	desiredGroup, desiredVersion := splitAPIVersion(req.DesiredAPIVersion)
	var desired any = req.DesiredAPIVersion
	if w.metrics != nil {
		w.metrics.objects.Observe(float64(len(req.Objects)))
	}
	timer := run{m: w.metrics, to: req.DesiredAPIVersion}
	defer timer.end()

	var conv *Converter
	for i, m := range req.Objects {
		apiVersion, _ := m["apiVersion"].(string)
		kind, _ := m["kind"].(string)
		timer.next(apiVersion)
		group, _ := splitAPIVersion(apiVersion)
		// Objects of a review are almost always one kind: check and look
		// up once. A null object or one without a kind never matches.
		if conv == nil || conv.gk.Group != group || conv.gk.Kind != kind {
			var cerr *Error
			if conv, cerr = w.lookup(i, m, apiVersion, kind, group, desiredGroup, desiredVersion); cerr != nil {
				return failure(req.UID, cerr), cerr
			}
		}
		out, err := conv.convert(&unstructured.Unstructured{Object: m}, desiredVersion, desired)
		if err != nil {
			return failure(req.UID, err), err
		}
		req.Objects[i] = out.Object
	}
	return success(req.UID, req.Objects), nil
}

// logFailure logs a failed review; a panic gets its stack, which the
// answer to the API server leaves out.
func logFailure(log logr.Logger, uid types.UID, err *Error) {
	var p *panicError
	if errors.As(err, &p) {
		log.Error(err, "Conversion function panicked", "uid", uid, "stack", string(p.stack))
		return
	}
	log.Info("Conversion failed", "uid", uid, "reason", err.Reason, "error", err.Error())
}

// lookup finds the Converter for an object, rejecting what none can
// handle; an object without apiVersion or kind is named by its index.
func (w *Webhook) lookup(i int, m map[string]any, apiVersion, kind, group, desiredGroup, desiredVersion string) (*Converter, *Error) {
	meta, _ := m["metadata"].(map[string]any)
	switch {
	case m == nil:
		return nil, &Error{Reason: ReasonDecode, ToVersion: desiredVersion, Err: fmt.Errorf("object %d is null", i)}
	case apiVersion == "" || kind == "":
		return nil, newError(ReasonDecode, apiVersion, kind, meta, desiredVersion, fmt.Errorf("object %d has no apiVersion or kind", i))
	case group != desiredGroup:
		return nil, newError(ReasonUnsupported, apiVersion, kind, meta, desiredVersion, fmt.Errorf("cannot convert group %s to group %s", group, desiredGroup))
	}
	conv, ok := w.converters[schema.GroupKind{Group: group, Kind: kind}]
	if !ok {
		return nil, newError(ReasonUnsupported, apiVersion, kind, meta, desiredVersion, fmt.Errorf("this webhook converts %s only", w.kinds()))
	}
	return conv, nil
}

func (w *Webhook) kinds() string {
	kinds := make([]string, 0, len(w.converters))
	for gk := range w.converters {
		kinds = append(kinds, gk.String())
	}
	slices.Sort(kinds)
	return strings.Join(kinds, ", ")
}

func (w *Webhook) badRequest(rw http.ResponseWriter, log logr.Logger, err error) {
	w.metrics.failed(ReasonDecode)
	log.Info("Rejected conversion request", "error", err.Error())
	http.Error(rw, err.Error(), http.StatusBadRequest)
}
