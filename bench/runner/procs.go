package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// build compiles a package of the repository into dir and returns the binary.
func build(ctx context.Context, root, pkg, out string, log io.Writer) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build -o %s %s: %w", out, pkg, err)
	}
	return nil
}

// writeKubeconfig writes a kubeconfig for cfg (a test-cluster user).
func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["bench"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["bench"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken,
	}
	kc.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "bench"}
	kc.CurrentContext = "bench"
	return clientcmd.WriteToFile(*kc, path)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// process is an operator (Hookwright or the anchor) running as a separate
// process with its own kubeconfig, its log in a file, and a metrics endpoint.
type process struct {
	name        string
	cmd         *exec.Cmd
	done        chan struct{}
	err         error
	metricsAddr string
	pprofAddr   string // the operator's /debug/pprof, when started with it
	logFile     *os.File
}

// startProcess runs bin with args (plus the metrics flag) under kubeconfig,
// with env added to the bench's own environment.
func startProcess(name, bin, kubeconfig, logPath string, env []string, args ...string) (*process, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p := &process{name: name, done: make(chan struct{}), metricsAddr: fmt.Sprintf("127.0.0.1:%d", port), logFile: logFile}
	p.cmd = exec.Command(bin, append(args, "--metrics-bind-address="+p.metricsAddr)...)
	p.cmd.Env = append(append(os.Environ(), env...), "KUBECONFIG="+kubeconfig)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	// Up once its metrics endpoint answers.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := p.metrics(); err == nil {
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited at start: %v (log: %s)", name, p.err, logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
	p.stop()
	return nil, fmt.Errorf("%s did not serve metrics within 60 s (log: %s)", name, logPath)
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// alive reports an error when the process has exited.
func (p *process) alive() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited: %v (log: %s)", p.name, p.err, p.logFile.Name())
	default:
		return nil
	}
}

// stop sends SIGTERM, as kubelet does, and SIGKILL after 30 s.
func (p *process) stop() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	_ = p.logFile.Close()
}

// memory is a procfs sample: resident set size now and its high-water mark.
type memory struct{ RSS, HWM int64 } // bytes

// sampleMemory reads VmRSS and VmHWM from /proc/<pid>/status.
func sampleMemory(pid int) (memory, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return memory{}, err
	}
	defer func() { _ = f.Close() }()
	var m memory
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			m.RSS = kb * 1024
		case "VmHWM:":
			m.HWM = kb * 1024
		}
	}
	if m.RSS == 0 {
		return m, errors.New("no VmRSS in /proc status")
	}
	return m, nil
}

// cpuSeconds is the user+system CPU time the process used so far
// (/proc/<pid>/stat, in clock ticks of 1/100 s).
func cpuSeconds(pid int) float64 {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) in parentheses.
	rest := string(raw)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	fields := strings.Fields(rest)
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100
}

// settledMemory samples every 2 s until the last 10 RSS samples (20 s)
// lie within 3% of their median (a Go process returns freed heap to the
// OS over minutes), or until limit; it returns that median, the last HWM,
// and whether it settled.
func settledMemory(pid int, limit time.Duration) (memory, bool, error) {
	const n = 10
	deadline := time.Now().Add(limit)
	var window []float64
	for {
		m, err := sampleMemory(pid)
		if err != nil {
			return memory{}, false, err
		}
		window = append(window, float64(m.RSS))
		if len(window) > n {
			window = window[1:]
		}
		if len(window) == n {
			med := percentile(window, 50)
			lo, hi := percentile(window, 0), percentile(window, 100)
			if (hi-lo)/med <= 0.03 {
				return memory{RSS: int64(med), HWM: m.HWM}, true, nil
			}
			if time.Now().After(deadline) {
				return memory{RSS: int64(med), HWM: m.HWM}, false, nil
			}
		}
		time.Sleep(2 * time.Second)
	}
}

// metrics fetches the Prometheus text exposition of the process.
func (p *process) metrics() (promText, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + p.metricsAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: HTTP %d", resp.StatusCode)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return parseProm(string(raw)), nil
}

// promText is a parsed exposition: one sample per line.
type promText []promSample

type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

func parseProm(text string) promText {
	var out promText
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		value, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		head := line[:sp]
		s := promSample{name: head, labels: map[string]string{}, value: value}
		if i := strings.IndexByte(head, '{'); i >= 0 {
			s.name = head[:i]
			for _, kv := range splitLabels(strings.TrimSuffix(head[i+1:], "}")) {
				if eq := strings.IndexByte(kv, '='); eq > 0 {
					s.labels[kv[:eq]] = strings.Trim(kv[eq+1:], `"`)
				}
			}
		}
		out = append(out, s)
	}
	return out
}

// splitLabels splits a="x",b="y,z" on commas outside quotes.
func splitLabels(s string) []string {
	var parts []string
	inQuote, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			inQuote = !inQuote
		case ',':
			if !inQuote {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	if start < len(s) {
		parts = append(parts, s[start:])
	}
	return parts
}

// sum adds the samples of name whose labels include every given pair.
func (t promText) sum(name string, labels ...string) float64 {
	total := 0.0
samples:
	for _, s := range t {
		if s.name != name {
			continue
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if s.labels[labels[i]] != labels[i+1] {
				continue samples
			}
		}
		total += s.value
	}
	return total
}
