package runner

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
)

var benchLine = regexp.MustCompile(`^(Benchmark\S+)\s+(\d+)\s+([\d.]+) ns/op`)

// certBench runs the issuance Go benchmarks (certs/bench_test.go, and
// cert-controller's in bench/issue_bench_test.go) and reports ns/op.
func (b *bench) certBench(ctx context.Context) error {
	nsPerOp, out, err := b.goBench(ctx, "^BenchmarkIssue", b.sz.certBenchtime, "./certs", "./bench")
	if err != nil {
		return err
	}
	b.report.CertBench = nsPerOp
	b.report.CertBenchCommand = "go test -run '^$' -bench '^BenchmarkIssue' -benchtime " + b.sz.certBenchtime + " ./certs ./bench"
	for _, alg := range []string{"ECDSA-P256", "ECDSA-P384", "RSA-2048"} {
		ca, okCA := nsPerOp["BenchmarkIssueCA/"+alg]
		serving, okServing := nsPerOp["BenchmarkIssueServing/"+alg]
		if !okCA || !okServing {
			return fmt.Errorf("benchmark output lacks %s:\n%s", alg, out)
		}
		anchor := "— (RSA-2048 only)"
		if alg == "RSA-2048" {
			anchor = fmt.Sprintf("%s / %s", ms(nsPerOp["BenchmarkIssueCertController/CA/RSA-2048"]/1e9), ms(nsPerOp["BenchmarkIssueCertController/Serving/RSA-2048"]/1e9))
		}
		b.report.setRow(Row{
			ID: "Cert " + alg, Measure: "Issue a CA / a serving certificate, " + alg + " (Go benchmark, ns/op)", Goal: "— (reported)",
			Hookwright: fmt.Sprintf("%s / %s", ms(ca/1e9), ms(serving/1e9)), Anchor: anchor, Met: "n/a",
		})
	}
	return nil
}

// goBench runs the Go benchmarks matching pattern in pkgs, one per core as
// -cpu sets it, and returns ns/op by benchmark name (without the -<cpu>
// suffix) and the whole output.
func (b *bench) goBench(ctx context.Context, pattern, benchtime string, pkgs ...string) (map[string]float64, string, error) {
	cpu := runtime.NumCPU()
	// -vet=off: vet is make test's job (go vet ./...); here it would analyze
	// the bench package's whole dependency closure again (2.5 CPU-minutes
	// measured on a cold machine) before a benchmark runs.
	args := append([]string{"test", "-vet=off", "-run", "^$", "-bench", pattern, "-benchtime", benchtime, "-cpu", strconv.Itoa(cpu)}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = b.root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	nsPerOp := map[string]float64{}
	for _, line := range strings.Split(out.String(), "\n") {
		if m := benchLine.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			v, _ := strconv.ParseFloat(m[3], 64)
			name := m[1]
			if cpu > 1 {
				name = strings.TrimSuffix(name, fmt.Sprintf("-%d", cpu))
			}
			nsPerOp[name] = v
		}
	}
	return nsPerOp, out.String(), nil
}
