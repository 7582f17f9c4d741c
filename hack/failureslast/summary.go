package main

import (
	"fmt"
	"regexp"
	"strings"
)

const (
	// detailLines bounds what is kept of each failure beyond its first
	// line: a failed test's log lines, a Ginkgo failure's message, a
	// panic's trace.
	detailLines = 12
	// tailLines is how much of a failed package's own output is repeated
	// when nothing in it names the failure (a build error, a TestMain that
	// exits, a crash without "panic:").
	tailLines = 20
)

var (
	// packageEnd matches go test's last line for a package: "ok", "FAIL"
	// or "?" (no test files), a tab, the import path.
	packageEnd = regexp.MustCompile(`^(ok  |FAIL|\?   )\t(\S+)`)
	// testStart matches the lines go test -v prints when a test starts or
	// resumes printing: its log lines follow.
	testStart = regexp.MustCompile(`^=== (?:RUN|CONT|NAME)\s+(\S+)`)
	// testFailed matches a failed test's result line, subtests indented.
	testFailed = regexp.MustCompile(`^\s*--- FAIL: (\S+)`)
)

// Summarizer reads go test -v output line by line and keeps, for each
// package that failed, what names its failures:
//   - "--- FAIL: TestX" and its log lines (t.Errorf's output, which -v
//     prints as it comes, indented, between "=== RUN TestX" and the
//     result);
//   - internal/specreport's "FAILED (...)" lines and their messages
//     (Ginkgo suites), instead of the suite's whole log;
//   - "panic:" and the start of its trace (a crash, or go test's timeout
//     with the tests it found running).
//
// It keeps only the current package's pieces and short buffers, not the
// whole output: a suite's log runs to megabytes.
type Summarizer struct {
	failed []string // a block per failed package

	pieces []string // the current package's failures
	tail   []string // the current package's last tailLines lines

	test     string   // the test whose log lines are being printed
	logged   []string // its first detailLines indented lines
	reported bool     // specreport repeated its failures: its log is not needed

	following int  // lines still to keep of the failure just read
	panicking bool // that failure is a panic: keep its trace, blank lines too
}

// Line takes the next line of output, its newline included or not.
func (s *Summarizer) Line(line string) {
	line = strings.TrimRight(line, "\r\n")
	if m := packageEnd.FindStringSubmatch(line); m != nil {
		if m[1] == "FAIL" {
			s.failed = append(s.failed, s.block(line))
		}
		*s = Summarizer{failed: s.failed}
		return
	}
	s.tail = append(s.tail, line)
	if len(s.tail) > tailLines {
		s.tail = s.tail[1:]
	}

	if s.following > 0 {
		if s.panicking || indented(line) {
			s.pieces = append(s.pieces, line)
			if s.following--; s.following == 0 {
				s.pieces = append(s.pieces, "  ...")
			}
			return
		}
		s.following = 0
	}

	switch m := testStart.FindStringSubmatch(line); {
	case m != nil:
		if m[1] != s.test {
			s.test, s.logged, s.reported = m[1], nil, false
		}
	case strings.HasPrefix(line, "FAILED ("):
		s.pieces = append(s.pieces, line)
		s.following, s.panicking, s.reported = detailLines, false, true
	case strings.HasPrefix(line, "panic: "):
		s.pieces = append(s.pieces, line)
		s.following, s.panicking = detailLines, true
	case testFailed.MatchString(line):
		s.pieces = append(s.pieces, line)
		if testFailed.FindStringSubmatch(line)[1] == s.test && !s.reported {
			s.pieces = append(s.pieces, s.logged...)
		}
		s.test, s.logged, s.reported = "", nil, false
	case indented(line) && len(s.logged) < detailLines:
		s.logged = append(s.logged, line)
	}
}

// indented tells whether a line belongs to what is above it: go test
// indents a test's log lines, specreport a failure's message.
func indented(line string) bool {
	trimmed := strings.TrimLeft(line, " \t")
	return trimmed != line && trimmed != "" && !strings.HasPrefix(trimmed, "--- ") && !strings.HasPrefix(trimmed, "=== ")
}

func (s *Summarizer) block(end string) string {
	lines := s.pieces
	if len(lines) == 0 {
		lines = s.tail
	}
	var b strings.Builder
	b.WriteString(end + "\n")
	for _, l := range lines {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// Summary is the failed packages and their failures, or "" when none
// failed.
func (s *Summarizer) Summary() string {
	if len(s.failed) == 0 {
		return ""
	}
	return fmt.Sprintf("\n=== %d package(s) failed; their failures, repeated:\n%s", len(s.failed), strings.Join(s.failed, ""))
}
