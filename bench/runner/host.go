package runner

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hookwright/hookwright/internal/testcluster"
)

// converterHost is the pod stand-in's program for every benchmark webhook:
// testcluster.WidgetConverter over TLS with the certificate the Deployment
// mounts. Unlike testcluster.HandlerHost it uses no inotify watch (the
// kernel allows 128 per user; the benchmark runs ~1,600 pods): it reloads
// the key pair when the volume's ..data link moves, which is exactly when
// kubelet (and its stand-in) publishes a new Secret payload. It drains on
// the way out as testcluster.HandlerHost does: a Shutdown straight away
// failed one storm read with EOF (a pooled connection closed under the
// API server).
//
// served, when set, counts each ConversionReview it answers: a dry-run
// that succeeded while the CRD still said None converted without it.
type converterHost struct{ served *servedReviews }

func (h converterHost) Run(ctx context.Context, env *testcluster.PodEnv) error {
	dir, err := env.MountDir(testcluster.DefaultCertMount)
	if err != nil {
		return err
	}
	var (
		mu     sync.Mutex
		cached *tls.Certificate
		target string
	)
	getCertificate := func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		now, _ := os.Readlink(filepath.Join(dir, "..data"))
		mu.Lock()
		defer mu.Unlock()
		if cached != nil && now == target {
			return cached, nil
		}
		pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
		if err != nil {
			if cached != nil {
				return cached, nil
			}
			return nil, err
		}
		cached, target = &pair, now
		return cached, nil
	}
	if _, err := getCertificate(nil); err != nil {
		return err
	}
	var handler http.Handler = &testcluster.WidgetConverter{}
	if h.served != nil {
		handler = h.served.counting(env.Namespace, handler)
	}
	srv := &http.Server{
		Handler:           handler,
		TLSConfig:         &tls.Config{GetCertificate: getCertificate, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	return testcluster.ServeDraining(ctx, env, srv, 0)
}

// servedReviews counts, per namespace, the ConversionReviews the
// stand-in webhooks answered.
type servedReviews struct {
	mu sync.Mutex
	n  map[string]int
}

func newServedReviews() *servedReviews { return &servedReviews{n: map[string]int{}} }

func (s *servedReviews) count(ns string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[ns]
}

// counting wraps a webhook's handler: each request it answered counts
// once the answer is written, before the API server can reply to the
// request that made it call.
func (s *servedReviews) counting(ns string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		s.mu.Lock()
		s.n[ns]++
		s.mu.Unlock()
	})
}
