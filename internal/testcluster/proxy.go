package testcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
)

// resolveFunc maps the ClusterIP:port the API server asks for to the
// loopback address of a pod serving it.
type resolveFunc func(ctx context.Context, clusterIP string, port int32) (route, error)

// Connection is one tunnel the proxy opened, as its log records it: which
// Service it was for and which Pod (by its EndpointSlice entry) got it.
type Connection struct {
	Time    time.Time
	Service types.NamespacedName
	Pod     types.NamespacedName
	PodIP   string
	// Ready: the endpoint was ready when dialled; otherwise it was a
	// serving, terminating one (used only when no endpoint was ready).
	Ready bool
	// Stale: ready only in the network's lagging view (SetEndpointLag);
	// the EndpointSlices no longer had it ready.
	Stale bool
}

// maxConnectionLog bounds the proxy's log (oldest dropped first).
const maxConnectionLog = 100_000

// connectProxy is the API server's way into the stand-in cluster network:
// the egress selector sends "CONNECT <clusterIP>:<port>" over a unix socket.
type connectProxy struct {
	listener net.Listener
	resolver atomic.Pointer[resolveFunc] // nil until route: the network starts after the API server
	log      logr.Logger

	// Tunnels counts CONNECT requests that reached a pod; Refused counts
	// those answered with an error because nothing serves the address.
	Tunnels atomic.Int64
	Refused atomic.Int64

	logMu       sync.Mutex
	connections []Connection

	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// startConnectProxy listens on socketPath; it refuses every CONNECT until
// route gives it the network.
func startConnectProxy(socketPath string, log logr.Logger) (*connectProxy, error) {
	ln, err := net.Listen("unix", socketPath)
	if err != nil {
		return nil, fmt.Errorf("listening for the API server's egress on %s: %w", socketPath, err)
	}
	p := &connectProxy{listener: ln, log: log, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// route makes the proxy resolve CONNECT targets with resolve, from now on;
// connections already being served may read it at the same time.
func (p *connectProxy) route(resolve resolveFunc) { p.resolver.Store(&resolve) }

func (p *connectProxy) acceptLoop() {
	defer p.wg.Done()
	for {
		conn, err := p.listener.Accept()
		if err != nil {
			return // closed
		}
		if !p.track(conn) {
			_ = conn.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(conn)
			p.serve(conn)
		}()
	}
}

func (p *connectProxy) serve(client net.Conn) {
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	reader := bufio.NewReader(client)
	req, err := http.ReadRequest(reader)
	if err != nil {
		return
	}
	_ = client.SetReadDeadline(time.Time{})
	if req.Method != http.MethodConnect {
		p.refuse(client, http.StatusMethodNotAllowed, "only CONNECT is supported")
		return
	}
	// The target is the request URI (authority form), not the Host header.
	host, portText, err := net.SplitHostPort(req.URL.Host)
	if err != nil {
		p.refuse(client, http.StatusBadRequest, fmt.Sprintf("bad CONNECT target %q", req.URL.Host))
		return
	}
	port, err := strconv.ParseInt(portText, 10, 32)
	if err != nil {
		p.refuse(client, http.StatusBadRequest, fmt.Sprintf("bad CONNECT port %q", portText))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resolve := p.resolver.Load()
	if resolve == nil {
		p.refuse(client, http.StatusServiceUnavailable, "test cluster network is not started yet")
		return
	}
	target, err := (*resolve)(ctx, host, int32(port))
	if err != nil {
		p.refuse(client, http.StatusServiceUnavailable, err.Error())
		return
	}
	backend, err := dialLoopback(ctx, target.addr)
	if err != nil {
		p.refuse(client, http.StatusServiceUnavailable, err.Error())
		return
	}
	defer func() { _ = backend.Close() }()
	if !p.track(backend) {
		return
	}
	defer p.untrack(backend)
	p.Tunnels.Add(1)
	p.record(target)

	// After the status line the proxy must send nothing else of its own.
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if n := reader.Buffered(); n > 0 {
		buffered, _ := reader.Peek(n)
		if _, err := backend.Write(buffered); err != nil {
			return
		}
	}
	pipe(client, backend)
}

// dialLoopback dials addr only if it is a loopback address: the stand-in
// network must never reach anything outside this machine.
func dialLoopback(ctx context.Context, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("refusing to dial %s: the test network only reaches loopback", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

func (p *connectProxy) record(r route) {
	p.log.V(1).Info("Tunnel", "service", r.service, "pod", r.pod, "podIP", r.podIP, "ready", r.ready, "stale", r.stale)
	p.logMu.Lock()
	defer p.logMu.Unlock()
	if len(p.connections) == maxConnectionLog {
		p.connections = append(p.connections[:0], p.connections[1:]...)
	}
	p.connections = append(p.connections, Connection{Time: time.Now(), Service: r.service, Pod: r.pod, PodIP: r.podIP, Ready: r.ready, Stale: r.stale})
}

// Connections returns the proxy's log of opened tunnels, oldest first.
func (p *connectProxy) Connections() []Connection {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return append([]Connection(nil), p.connections...)
}

func (p *connectProxy) refuse(conn net.Conn, status int, message string) {
	p.Refused.Add(1)
	p.log.V(1).Info("Refused CONNECT", "status", status, "reason", message)
	// The API server reports only the status line of a failed CONNECT, so
	// the reason goes there too.
	reason := strings.NewReplacer("\r", " ", "\n", " ").Replace(message)
	_, _ = fmt.Fprintf(conn, "HTTP/1.1 %d %s: %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), reason, len(message), message)
}

// pipe copies both ways until either side is done, then closes both.
func pipe(a, b net.Conn) {
	done := make(chan struct{}, 2)
	copyHalf := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go copyHalf(a, b)
	go copyHalf(b, a)
	<-done
	_ = a.Close()
	_ = b.Close()
	<-done
}

func (p *connectProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *connectProxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	_ = c.Close()
}

// Close stops accepting, cuts every open tunnel and waits for the goroutines.
func (p *connectProxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	err := p.listener.Close()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
