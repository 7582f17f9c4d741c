package conversion

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// certRetry is how often CertLoader looks for certificate files that are
// not there yet.
const certRetry = time.Second

var errNoCertificate = errors.New("no serving certificate loaded yet")

// CertLoader serves the certificate and key mounted from a Secret and
// reloads them when kubelet updates the mount, through controller-runtime's
// certwatcher. Unlike certwatcher.New it tolerates missing files at
// start-up: an optional Secret volume is empty until the Secret exists
// (Hookwright may create it after the Deployment), and the webhook should
// wait, reporting not ready, rather than crash-loop.
type CertLoader struct {
	certFile, keyFile string
	watcher           atomic.Pointer[certwatcher.CertWatcher]
}

// NewCertLoader loads nothing until Start.
func NewCertLoader(certFile, keyFile string) *CertLoader {
	return &CertLoader{certFile: certFile, keyFile: keyFile}
}

// Start waits for a loadable certificate, then watches it until ctx ends.
func (l *CertLoader) Start(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx).WithValues("cert", l.certFile, "key", l.keyFile)
	var w *certwatcher.CertWatcher
	for logged := false; ; logged = true {
		var err error
		if w, err = certwatcher.New(l.certFile, l.keyFile); err == nil {
			break
		}
		if !logged {
			log.Info("Waiting for the serving certificate", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(certRetry):
		}
	}
	l.watcher.Store(w)
	log.Info("Loaded the serving certificate")
	return w.Start(ctx)
}

// GetCertificate is for tls.Config: the certificate currently loaded.
// During a reload the previous certificate is served until the new pair
// parses, so handshakes never see a half-written file.
func (l *CertLoader) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	w := l.watcher.Load()
	if w == nil {
		return nil, errNoCertificate
	}
	return w.GetCertificate(hello)
}

// Ready reports whether a certificate is loaded.
func (l *CertLoader) Ready() bool { return l.watcher.Load() != nil }

// ReadyHandler answers 200 once a certificate is loaded and 503 before: a
// webhook without a certificate fails every handshake, so the Service
// must not route the API server to it.
func (l *CertLoader) ReadyHandler() http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		if !l.Ready() {
			http.Error(rw, errNoCertificate.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = rw.Write([]byte("ok"))
	})
}
