package conversion

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/hookwright/hookwright/certs"
)

func init() {
	// certwatcher logs through controller-runtime; keep test output quiet
	// and avoid its "SetLogger was never called" warning.
	crlog.SetLogger(logr.Discard())
}

const serverName = "conv.ns.svc"

// issued is a serving pair and the CA that signed it.
type issued struct {
	pair certs.KeyPair
	pool *x509.CertPool
	ca   *certs.CA
}

func issue(t *testing.T, name string) issued {
	t.Helper()
	now := time.Now()
	ca, err := certs.NewCA(name, certs.ECDSAP256, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.IssueServing(certs.ServiceDNSNames("conv", "ns"), certs.ECDSAP256, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return issued{pair: pair, pool: pool, ca: ca}
}

// mountSecret updates dir the way kubelet updates a Secret volume: write a
// new timestamped directory, point a temporary ..data symlink at it,
// rename that over ..data (the atomic step), make sure the user-visible
// file symlinks go through ..data, and remove the previous directory.
func mountSecret(t *testing.T, dir string, pair certs.KeyPair) {
	t.Helper()
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	ts := fmt.Sprintf("..%s", time.Now().Format("2006_01_02_15_04_05.000000000"))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(dir, ts), 0o755))
	must(os.WriteFile(filepath.Join(dir, ts, "tls.crt"), pair.CertPEM, 0o644))
	must(os.WriteFile(filepath.Join(dir, ts, "tls.key"), pair.KeyPEM, 0o600))
	must(os.Symlink(ts, filepath.Join(dir, "..data_tmp")))
	must(os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	for _, f := range []string{"tls.crt", "tls.key"} {
		if _, err := os.Lstat(filepath.Join(dir, f)); os.IsNotExist(err) {
			must(os.Symlink(filepath.Join("..data", f), filepath.Join(dir, f)))
		}
	}
	if old != "" {
		must(os.RemoveAll(filepath.Join(dir, old)))
	}
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %s: %v", what, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestReadinessWaitsForACertificate(t *testing.T) {
	dir := t.TempDir()
	l := NewCertLoader(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	ready := func() int {
		rec := httptest.NewRecorder()
		l.ReadyHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code
	}
	if code := ready(); code != http.StatusServiceUnavailable {
		t.Fatalf("readyz before start = %d, want 503", code)
	}
	if _, err := l.GetCertificate(nil); err == nil {
		t.Fatal("a certificate before any was loaded")
	}

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- l.Start(ctx) }()
	time.Sleep(100 * time.Millisecond)
	if code := ready(); code != http.StatusServiceUnavailable {
		t.Fatalf("readyz without certificate files = %d, want 503", code)
	}

	want := issue(t, "ca")
	mountSecret(t, dir, want.pair)
	eventually(t, 5*time.Second, "readyz", func() error {
		if code := ready(); code != http.StatusOK {
			return fmt.Errorf("HTTP %d", code)
		}
		return nil
	})
	cert, err := l.GetCertificate(nil)
	if err != nil || cert == nil {
		t.Fatalf("GetCertificate after ready: %v", err)
	}
	if leaf, _ := x509.ParseCertificate(cert.Certificate[0]); leaf == nil || leaf.Subject.CommonName != serverName {
		t.Errorf("loaded certificate is not the mounted one: %v", leaf)
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Errorf("Start returned %v", err)
	}
}

// serve runs Serve on a local port until the test ends; done gets its
// result.
func serve(t *testing.T, wh *Webhook, dir string) (addr string, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A discarding logger also keeps net/http's handshake errors, which
	// these tests provoke, out of the test output.
	ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), logr.Discard()))
	result, returned := make(chan error, 1), make(chan struct{})
	go func() {
		result <- Serve(ctx, wh, Options{CertDir: dir, Listener: ln})
		close(returned)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-returned:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
	})
	return ln.Addr().String(), cancel, result
}

func httpsClient(roots *x509.CertPool) *http.Client {
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12},
			DisableKeepAlives: true, // every request is a new handshake
		},
	}
}

func handshake(addr string, roots *x509.CertPool) error {
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12})
	if err != nil {
		return err
	}
	return conn.Close()
}

func TestServeReloadsCertificateOnSecretUpdate(t *testing.T) {
	dir := t.TempDir()
	first, second := issue(t, "first-ca"), issue(t, "second-ca")
	mountSecret(t, dir, first.pair)
	addr, _, _ := serve(t, NewWebhook(cronConverter()), dir)

	eventually(t, 10*time.Second, "readyz with the first certificate", func() error {
		resp, err := httpsClient(first.pool).Get("https://" + addr + "/readyz")
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil
	})

	// The conversion path is wired.
	body := reviewBody(t, reviewV1, "tls", v2, manyCronV1(2)...)
	resp, err := httpsClient(first.pool).Post("https://"+addr+"/convert", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var rv struct {
		Response struct {
			Result           struct{ Status string } `json:"result"`
			ConvertedObjects []any                   `json:"convertedObjects"`
		} `json:"response"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rv); err != nil || rv.Response.Result.Status != "Success" || len(rv.Response.ConvertedObjects) != 2 {
		t.Fatalf("conversion over TLS: %+v %v", rv, err)
	}
	_ = resp.Body.Close()

	// TLS 1.1 is refused.
	old := &tls.Config{RootCAs: first.pool, ServerName: serverName, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11} //nolint:gosec // the point of the test
	if conn, err := tls.Dial("tcp", addr, old); err == nil {
		_ = conn.Close()
		t.Error("a TLS 1.1 handshake succeeded")
	}

	// Hammer the server with fresh handshakes while the Secret changes. A
	// client trusting both CAs must never fail: the old certificate is
	// served until the new one is loaded.
	both := first.pool.Clone()
	both.AddCert(second.ca.Cert)
	var handshakes, failures atomic.Int64
	var firstFailure atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := handshake(addr, both); err != nil {
					failures.Add(1)
					firstFailure.CompareAndSwap(nil, err.Error())
				}
				handshakes.Add(1)
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	mountSecret(t, dir, second.pair)
	eventually(t, 20*time.Second, "handshake trusting only the second CA", func() error { return handshake(addr, second.pool) })
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()

	if n := failures.Load(); n > 0 {
		t.Errorf("%d of %d handshakes failed during the swap; first: %v", n, handshakes.Load(), firstFailure.Load())
	}
	if handshakes.Load() < 10 {
		t.Errorf("only %d handshakes during the swap: the test proved little", handshakes.Load())
	}
	if err := handshake(addr, first.pool); err == nil {
		t.Error("the first certificate is still served after the swap")
	}
	t.Logf("%d handshakes during the swap, none failed", handshakes.Load())
}

func TestServeShutsDownGracefully(t *testing.T) {
	dir := t.TempDir()
	ca := issue(t, "ca")
	mountSecret(t, dir, ca.pair)
	entered, release := make(chan struct{}), make(chan struct{})
	slow := NewConverter(group, "CronTab").AddPair("v1", "v2", func(in *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		close(entered)
		<-release
		return in, nil
	})
	addr, cancel, done := serve(t, NewWebhook(slow), dir)
	eventually(t, 10*time.Second, "handshake", func() error { return handshake(addr, ca.pool) })

	type result struct {
		status int
		err    error
	}
	answered := make(chan result, 1)
	go func() {
		resp, err := httpsClient(ca.pool).Post("https://"+addr+"/convert", "application/json",
			bytes.NewReader(reviewBody(t, reviewV1, "slow", v2, manyCronV1(1)...)))
		if err != nil {
			answered <- result{err: err}
			return
		}
		_ = resp.Body.Close()
		answered <- result{status: resp.StatusCode}
	}()
	<-entered
	cancel()
	select {
	case err := <-done:
		t.Fatalf("Serve returned %v with a review in flight", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	if r := <-answered; r.err != nil || r.status != http.StatusOK {
		t.Errorf("in-flight review: %+v", r)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve returned %v, want nil after a clean shutdown", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the in-flight review finished")
	}
	if err := handshake(addr, ca.pool); err == nil {
		t.Error("still accepting connections after shutdown")
	}
}

func TestOptionsDefaults(t *testing.T) {
	got := Options{}.withDefaults()
	want := Options{CertDir: "/tmp/k8s-webhook-server/serving-certs", CertName: "tls.crt", KeyName: "tls.key",
		Addr: ":9443", Path: "/convert", ReadyPath: "/readyz", ShutdownTimeout: 30 * time.Second}
	if got != want {
		t.Errorf("defaults = %+v\nwant %+v", got, want)
	}
}
