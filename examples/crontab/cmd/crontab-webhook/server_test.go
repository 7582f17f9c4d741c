package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookwright/hookwright/examples/crontab"
)

// writeCert writes a self-signed serving pair for 127.0.0.1 to dir, as
// Hookwright's Secret mount would hold it.
func writeCert(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "crontab-webhook"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// start runs serve on a loopback port and returns its base URL, a client
// and a stop function that returns serve's error.
func start(t *testing.T, webhooks http.Handler, tune func(*options)) (string, *http.Client, func() error) {
	t.Helper()
	dir := t.TempDir()
	writeCert(t, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts := defaultOptions()
	opts.Listener, opts.CertDir = ln, dir
	if tune != nil {
		tune(&opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, webhooks, opts) }()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a test's self-signed certificate
	url := "https://" + ln.Addr().String()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get(url + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready after 10s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { _ = stop() })
	return url, client, stop
}

// The three webhooks on one port and certificate, as the Deployment runs them.
func TestServesAllThreeWebhooksOverTLS(t *testing.T) {
	url, client, stop := start(t, crontab.NewHandler(), nil)
	body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"CREATE",` +
		`"kind":{"group":"stable.example.com","version":"v1","kind":"CronTab"},"resource":{"group":"stable.example.com","version":"v1","resource":"crontabs"},` +
		`"object":{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"c"},"spec":{"cronSpec":"* *"}}}}`
	for path, want := range map[string]string{
		crontab.ValidatePath: `"allowed":false`,
		crontab.MutatePath:   `"patchType":"JSONPatch"`,
		crontab.ConvertPath:  "ConversionReview", // the kit answers a malformed review 400 naming what it wants
	} {
		resp, err := client.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if !strings.Contains(string(got), want) {
			t.Errorf("%s answered %s %s, want it to contain %s", path, resp.Status, got, want)
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("serve returned %v after a clean shutdown", err)
	}
}

func TestRefusesABodyOverTheLimit(t *testing.T) {
	url, client, _ := start(t, crontab.NewHandler(), func(o *options) { o.MaxRequestBytes = 1024 })
	for _, path := range []string{crontab.ValidatePath, crontab.ConvertPath} {
		resp, err := client.Post(url+path, "application/json", strings.NewReader(strings.Repeat("x", 2048)))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: %s, want 413", path, resp.Status)
		}
	}
}

// A review beyond MaxConcurrentReviews waits QueueTimeout, then gets 429
// with Retry-After; the readiness probe is not held up by the limit.
func TestBoundsConcurrentReviews(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		<-release
	})
	url, client, stop := start(t, slow, func(o *options) {
		o.MaxConcurrentReviews, o.QueueTimeout = 1, 50*time.Millisecond
	})
	first := make(chan error, 1)
	go func() {
		resp, err := client.Post(url+crontab.ValidatePath, "application/json", strings.NewReader("{}"))
		if err == nil {
			_ = resp.Body.Close()
		}
		first <- err
	}()
	<-entered
	resp, err := client.Post(url+crontab.MutatePath, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("second review: %s Retry-After %q, want 429 with Retry-After 1", resp.Status, resp.Header.Get("Retry-After"))
	}
	ready, err := client.Get(url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	_ = ready.Body.Close()
	if ready.StatusCode != http.StatusOK {
		t.Errorf("readyz: %s while the slot is taken", ready.Status)
	}
	// Shutting down waits for the review in flight.
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case err := <-stopped:
		t.Fatalf("serve returned (%v) with a review in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-first; err != nil {
		t.Errorf("the review in flight failed during shutdown: %v", err)
	}
	if err := <-stopped; err != nil {
		t.Errorf("serve returned %v", err)
	}
}
