package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func summarize(output string) string {
	var s Summarizer
	for _, line := range strings.SplitAfter(output, "\n") {
		s.Line(line)
	}
	return s.Summary()
}

func TestSummarizer(t *testing.T) {
	for _, tc := range []struct {
		name, output string
		want         []string // the summary's lines after its heading, in order; none when nothing failed
	}{
		{name: "all passed", output: `=== RUN   TestA
--- PASS: TestA (0.00s)
PASS
ok  	example.com/a	0.01s
?   	example.com/b	[no test files]
`},
		{name: "a failed test and its log lines, not a passing test's", output: `=== RUN   TestA
    a_test.go:9: only logged
--- PASS: TestA (0.00s)
=== RUN   TestB
    b_test.go:5: want 2, got 3
        second line of the message
--- FAIL: TestB (0.00s)
=== RUN   TestC
--- PASS: TestC (0.00s)
FAIL
FAIL	example.com/a	0.01s
ok  	example.com/later	12.0s
`, want: []string{
			"FAIL\texample.com/a\t0.01s",
			"  --- FAIL: TestB (0.00s)",
			"      b_test.go:5: want 2, got 3",
			"          second line of the message",
		}},
		{name: "a Ginkgo suite: specreport's failures, not the suite's log", output: `=== RUN   TestManifests
Running Suite: manifests
    noise indented by Ginkgo
{"level":"info","msg":"Reconciling"}
Summarizing 1 Failure:
  [FAIL] Upgrading replaces the manager
FAILED (failed): Upgrading replaces the manager
  at upgrade_release_test.go:722
  the upgrade alone changed what it must not:
  ns-1: 2 reads failed
--- FAIL: TestManifests (106.00s)
FAIL
FAIL	example.com/test/manifests	106.1s
`, want: []string{
			"FAIL\texample.com/test/manifests\t106.1s",
			"  FAILED (failed): Upgrading replaces the manager",
			"    at upgrade_release_test.go:722",
			"    the upgrade alone changed what it must not:",
			"    ns-1: 2 reads failed",
			"  --- FAIL: TestManifests (106.00s)",
		}},
		{name: "a failed subtest's log is its own", output: `=== RUN   TestA
=== RUN   TestA/one
    a_test.go:7: boom
=== RUN   TestA/two
--- FAIL: TestA (0.00s)
    --- FAIL: TestA/one (0.00s)
    --- PASS: TestA/two (0.00s)
FAIL
FAIL	example.com/a	0.01s
`, want: []string{
			"FAIL\texample.com/a\t0.01s",
			"  --- FAIL: TestA (0.00s)",
			"      --- FAIL: TestA/one (0.00s)",
		}},
		{name: "a timeout's panic and the tests it names", output: `=== RUN   TestSlow
panic: test timed out after 45m0s
	running tests:
		TestSlow (45m0s)

goroutine 1 [running]:
FAIL	example.com/slow	2700.0s
`, want: []string{
			"FAIL\texample.com/slow\t2700.0s",
			"  panic: test timed out after 45m0s",
			"  \trunning tests:",
			"  \t\tTestSlow (45m0s)",
			"  ",
			"  goroutine 1 [running]:",
		}},
		{name: "a build failure: the package's own last lines", output: `ok  	example.com/a	0.01s
# example.com/b
b/b.go:3:2: undefined: x
FAIL	example.com/b [build failed]
`, want: []string{
			"FAIL\texample.com/b [build failed]",
			"  # example.com/b",
			"  b/b.go:3:2: undefined: x",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := summarize(tc.output)
			want := ""
			if tc.want != nil {
				want = "\n=== 1 package(s) failed; their failures, repeated:\n" + strings.Join(tc.want, "\n") + "\n"
			}
			if got != want {
				t.Errorf("summary:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestSummarizerBoundsALongFailure(t *testing.T) {
	output := "=== RUN   TestA\n" + strings.Repeat("    a_test.go:5: again\n", 100) + "--- FAIL: TestA (0.00s)\nFAIL\tex.com/a\t1s\n"
	got := summarize(output)
	if n := strings.Count(got, "again"); n != detailLines {
		t.Errorf("kept %d log lines of 100, want %d:\n%s", n, detailLines, got)
	}
}

// TestRunRepeatsFailuresLast runs go test itself on packages that fail
// the ways the summary reads, one of them before a slower passing one,
// so that the format it parses is go test's own and not this file's.
func TestRunRepeatsFailuresLast(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs go test")
	}
	dir := t.TempDir()
	write := func(name, text string) {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/sample\n\ngo 1.21\n")
	write("fails/fails_test.go", `package fails
import "testing"
func TestPasses(t *testing.T) { t.Log("not repeated") }
func TestFails(t *testing.T) { t.Errorf("the reason it failed") }
`)
	write("slow/slow_test.go", `package slow
import ("testing"; "time")
func TestSlow(t *testing.T) { time.Sleep(2 * time.Second); t.Log("slow output") }
`)

	var out bytes.Buffer
	t.Chdir(dir)
	status := run("go", []string{"test", "-count=1", "-v", "./..."}, &out)

	if status != 1 {
		t.Errorf("exit status %d, want go test's 1", status)
	}
	output := out.String()
	_, summary, found := strings.Cut(output, "=== 1 package(s) failed")
	if !found {
		t.Fatalf("no summary after the output:\n%s", output)
	}
	for _, want := range []string{"FAIL\texample.com/sample/fails", "--- FAIL: TestFails", "the reason it failed"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary misses %q:\n%s", want, summary)
		}
	}
	if strings.Contains(summary, "not repeated") {
		t.Errorf("summary repeats a passing test's log:\n%s", summary)
	}
	if !strings.Contains(output, "slow output") || !strings.Contains(output, "not repeated") {
		t.Errorf("output not passed through:\n%s", output)
	}
}

func TestRunPassesSuccessThrough(t *testing.T) {
	var out bytes.Buffer
	if status := run("sh", []string{"-c", "echo ok; exit 0"}, &out); status != 0 || out.String() != "ok\n" {
		t.Errorf("status %d, output %q; want 0 and the command's output alone", status, out.String())
	}
	out.Reset()
	if status := run("sh", []string{"-c", "echo FAIL; exit 3"}, &out); status != 3 {
		t.Errorf("status %d, want the command's 3", status)
	}
}

// A process the command leaves running with the output pipe open does not
// keep run from returning the command's status.
func TestRunDoesNotWaitForALeftoverProcess(t *testing.T) {
	grace := outputGrace
	outputGrace = 100 * time.Millisecond
	t.Cleanup(func() { outputGrace = grace })

	var out bytes.Buffer
	status := run("sh", []string{"-c", "sleep 600 & echo $!; exit 0"}, &out)

	if pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(out.String(), "\n", 2)[0])); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if status != 0 {
		t.Errorf("status %d, want the command's 0; output %q", status, out.String())
	}
}
