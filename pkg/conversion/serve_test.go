package conversion

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
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
	return serveWith(t, wh, Options{CertDir: dir})
}

// serveWith is serve with options; Listener is set here.
func serveWith(t *testing.T, wh *Webhook, opts Options) (addr string, cancel context.CancelFunc, done <-chan error) {
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
		opts.Listener = ln
		result <- Serve(ctx, wh, opts)
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
		Addr: ":9443", Path: "/convert", ReadyPath: "/readyz", ShutdownTimeout: 30 * time.Second,
		MaxRequestBytes: 64 << 20, MaxConcurrentReviews: max(16, 8*runtime.GOMAXPROCS(0)), QueueTimeout: 5 * time.Second,
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 35 * time.Second, IdleTimeout: 120 * time.Second}
	if got != want {
		t.Errorf("defaults = %+v\nwant %+v", got, want)
	}
}

// filler is an endless stream of 'a', so a huge body costs no memory.
type filler struct{}

func (filler) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// hugeReview streams a well-formed ConversionReview of exactly n bytes:
// one CronTab whose cronSpec takes up the rest. Read whole, it would be
// answered (with a conversion failure), so only the limit refuses it.
func hugeReview(n int64) io.Reader {
	head := `{"apiVersion":"` + reviewV1 + `","kind":"ConversionReview","request":{"uid":"huge","desiredAPIVersion":"` + v2 +
		`","objects":[{"apiVersion":"` + v1 + `","kind":"CronTab","metadata":{"name":"huge","namespace":"default","uid":"huge"},"spec":{"cronSpec":"`
	tail := `"}}]}}`
	return io.MultiReader(strings.NewReader(head), io.LimitReader(filler{}, n-int64(len(head)+len(tail))), strings.NewReader(tail))
}

// rawPost POSTs body to /convert on a new TLS connection, writing it from
// another goroutine while reading the answer, since a server may answer
// (and stop reading) before the body is sent. A negative length sends
// the body chunked, without a Content-Length.
func rawPost(t *testing.T, addr string, roots *x509.CertPool, length int64, body io.Reader) (status int, answer string) {
	t.Helper()
	d := &net.Dialer{Timeout: 10 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	req, err := http.NewRequest(http.MethodPost, "https://"+serverName+"/convert", io.NopCloser(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = length
	written := make(chan error, 1)
	go func() { written <- req.Write(conn) }()
	// Generous: only a server that never answers gets near it.
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = conn.Close() // ends the writer, if it is still sending
	<-written
	return resp.StatusCode, string(b)
}

// convertOK posts a small valid review and checks it is converted.
func convertOK(client *http.Client, addr, uid string) error {
	var rv struct {
		Response struct {
			UID              string                  `json:"uid"`
			Result           struct{ Status string } `json:"result"`
			ConvertedObjects []any                   `json:"convertedObjects"`
		} `json:"response"`
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": reviewV1, "kind": "ConversionReview",
		"request": map[string]any{"uid": uid, "desiredAPIVersion": v2, "objects": manyCronV1(3)},
	})
	if err != nil {
		return err
	}
	resp, err := client.Post("https://"+addr+"/convert", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(&rv); err != nil {
		return err
	}
	if rv.Response.UID != uid || rv.Response.Result.Status != "Success" || len(rv.Response.ConvertedObjects) != 3 {
		return fmt.Errorf("answer %+v", rv.Response)
	}
	return nil
}

func readyWithCert(t *testing.T, addr string, pool *x509.CertPool) {
	t.Helper()
	eventually(t, 10*time.Second, "readyz", func() error {
		resp, err := httpsClient(pool).Get("https://" + addr + "/readyz")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil
	})
}

// A 100 MiB review is refused with 413, whether it declares its length or
// is sent chunked (then it is cut off at the limit), while other clients'
// reviews go on being converted.
func TestServeRefusesOversizedBodiesWhileServingOthers(t *testing.T) {
	dir := t.TempDir()
	ca := issue(t, "ca")
	mountSecret(t, dir, ca.pair)
	addr, _, _ := serve(t, NewWebhook(cronConverter()), dir) // default MaxRequestBytes
	readyWithCert(t, addr, ca.pool)

	const huge = 100 << 20
	hugeDone := make(chan struct{})
	var (
		wg        sync.WaitGroup
		converted atomic.Int64
		mu        sync.Mutex
		failures  []error
	)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := httpsClient(ca.pool)
			client.Timeout = 30 * time.Second
			// At least 10 each, and on until both huge requests are answered.
			for i := 0; ; i++ {
				if i >= 10 {
					select {
					case <-hugeDone:
						return
					default:
					}
				}
				if err := convertOK(client, addr, fmt.Sprintf("g%d-%d", g, i)); err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
					return
				}
				converted.Add(1)
			}
		}()
	}

	for _, tc := range []struct {
		name   string
		length int64
	}{{"declared length", huge}, {"chunked", -1}} {
		status, answer := rawPost(t, addr, ca.pool, tc.length, hugeReview(huge))
		if status != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: a 100 MiB review got HTTP %d (%.200s), want 413", tc.name, status, answer)
		}
	}
	close(hugeDone)
	wg.Wait()
	for _, err := range failures {
		t.Errorf("a valid review beside the huge ones: %v", err)
	}
	if err := convertOK(httpsClient(ca.pool), addr, "after"); err != nil {
		t.Errorf("a review after the huge ones: %v", err)
	}
	t.Logf("%d valid reviews converted meanwhile", converted.Load())
}

// A client that sends its headers and part of a body, then stalls, is cut
// off by ReadTimeout: the server answers 408 and closes the connection.
func TestServeCutsOffAStalledBody(t *testing.T) {
	dir := t.TempDir()
	ca := issue(t, "ca")
	mountSecret(t, dir, ca.pair)
	// ReadTimeout also bounds the TLS handshake and every request: short
	// enough for a quick test, long enough for a loaded machine.
	addr, _, _ := serveWith(t, NewWebhook(cronConverter()), Options{CertDir: dir, ReadTimeout: 2 * time.Second})
	readyWithCert(t, addr, ca.pool)

	var conn *tls.Conn
	eventually(t, 10*time.Second, "TLS handshake", func() (err error) {
		d := &net.Dialer{Timeout: 5 * time.Second}
		conn, err = tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: ca.pool, ServerName: serverName, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
		return err
	})
	defer func() { _ = conn.Close() }()
	partial := "POST /convert HTTP/1.1\r\nHost: " + serverName + "\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n" +
		`{"apiVersion":"` + reviewV1 + `","kind":"ConversionReview","request":{`
	if _, err := io.WriteString(conn, partial); err != nil {
		t.Fatal(err)
	}
	// Then nothing. Allow far more than the 2 s, for a loaded machine; a
	// server without a read timeout never answers.
	if err := conn.SetReadDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to a stalled request: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("stalled request answered HTTP %d, want 408", resp.StatusCode)
	}
	// And the connection is closed: EOF (or a reset), not our deadline.
	if _, err := br.ReadByte(); err == nil {
		t.Error("the server sent more after its answer")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Errorf("the server kept the stalled connection open: %v", err)
	}

	// Others are still served.
	eventually(t, 10*time.Second, "a review after the stalled one", func() error {
		return convertOK(httpsClient(ca.pool), addr, "after")
	})
}

// With MaxConcurrentReviews 1 and the one slot held by a blocked
// conversion, a second review waits QueueTimeout and gets 429 with
// Retry-After; readiness is not held up; once the first finishes, the
// second goes through.
func TestServeBoundsConcurrentReviews(t *testing.T) {
	dir := t.TempDir()
	ca := issue(t, "ca")
	mountSecret(t, dir, ca.pair)
	entered, release := make(chan struct{}, 16), make(chan struct{})
	blocking := NewConverter(group, "CronTab").AddPair("v1", "v2", func(in *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		if name, _, _ := unstructured.NestedString(in.Object, "metadata", "name"); name == "blocker" {
			entered <- struct{}{}
			<-release
		}
		spec, _ := in.Object["spec"].(map[string]any)
		cronSpec, _ := spec["cronSpec"].(string)
		spec["minute"] = cronSpec
		return in, nil
	})
	addr, _, _ := serveWith(t, NewWebhook(blocking), Options{CertDir: dir, MaxConcurrentReviews: 1, QueueTimeout: 200 * time.Millisecond})
	readyWithCert(t, addr, ca.pool)
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()

	client := httpsClient(ca.pool)
	client.Timeout = 30 * time.Second
	first := make(chan error, 1)
	go func() {
		resp, err := client.Post("https://"+addr+"/convert", "application/json",
			bytes.NewReader(reviewBody(t, reviewV1, "blocker", v2, cronV1("default", "blocker", "b1", "5 * * * *"))))
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("HTTP %d", resp.StatusCode)
			}
		}
		first <- err
	}()
	select {
	case <-entered:
	case err := <-first:
		t.Fatalf("the blocking review returned: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the blocking review never reached its conversion function")
	}

	// The slot is taken: a second review is refused after QueueTimeout.
	second := reviewBody(t, reviewV1, "second", v2, cronV1("default", "second", "s1", "6 * * * *"))
	resp, err := client.Post("https://"+addr+"/convert", "application/json", bytes.NewReader(second))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("review beyond the bound: HTTP %d, Retry-After %q; want 429, 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	// Readiness does not wait for a slot.
	ready, err := client.Get("https://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	_ = ready.Body.Close()
	if ready.StatusCode != http.StatusOK {
		t.Errorf("readyz while the slot is taken: HTTP %d", ready.StatusCode)
	}

	close(release)
	released = true
	if err := <-first; err != nil {
		t.Errorf("the blocking review: %v", err)
	}
	resp, err = client.Post("https://"+addr+"/convert", "application/json", bytes.NewReader(second))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"Success"`) {
		t.Errorf("the second review after release: HTTP %d: %s", resp.StatusCode, body)
	}
}

// A panic outside the conversion functions (a bug in the kit) is answered
// 500 and the server keeps serving; a panic in a conversion function
// fails only its review, answered 200 (TestWebhookRecoversPanics).
func TestGuardAnswersAPanicWith500(t *testing.T) {
	calls := 0
	g := &guard{next: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		calls++
		if calls == 1 {
			panic("bug")
		}
		_, _ = io.WriteString(rw, "fine")
	})}
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", strings.NewReader("{}")))
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("a panicking handler answered HTTP %d, want 500", rec.Code)
	}
	rec = httptest.NewRecorder()
	g.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", strings.NewReader("{}")))
	if rec.Code != http.StatusOK || rec.Body.String() != "fine" {
		t.Errorf("after a panic: HTTP %d %q", rec.Code, rec.Body.String())
	}
}

// Malformed reviews through Serve's guard still get 400, not 413 or 408.
func TestGuardKeepsBadRequest(t *testing.T) {
	g := newGuard(NewWebhook(cronConverter()), Options{}.withDefaults())
	for _, body := range []string{"{", "not json", `{"apiVersion":"` + reviewV1 + `","kind":"ConversionReview","request":{"objects":[1]}}`} {
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", strings.NewReader(body)))
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%q: HTTP %d, want 400", body, rec.Code)
		}
	}
	// And a small limit answers 413 through httptest too (chunked: no length).
	g = newGuard(NewWebhook(cronConverter()), Options{MaxRequestBytes: 64}.withDefaults())
	req := httptest.NewRequest(http.MethodPost, "/convert", hugeReview(1000))
	req.ContentLength = -1
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("over the limit: HTTP %d, want 413", rec.Code)
	}
}
