// Command failureslast runs a go test command, passes its output through
// unchanged, and repeats what failed as the output's last lines. With
// several packages, go test prints each package's output whole when the
// package ends; CI shows only the tail of make test's output, so a package
// that fails while slower ones still run scrolls out of sight behind them
// and CI says FAIL without saying what failed.
//
// Usage: go run ./hack/failureslast go test ./... -v
//
// It exits with the command's exit status.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// outputGrace is how long the output is still read once the command has
// exited: a process it started and left running may hold the pipe open,
// and make test must not wait for it.
var outputGrace = 10 * time.Second

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: failureslast <command> [args...]")
		os.Exit(2)
	}
	os.Exit(run(os.Args[1], os.Args[2:], os.Stdout))
}

// run runs the command with its stdout and stderr merged into out, then
// writes the summary of its failed packages, and returns its exit status.
func run(name string, args []string, out io.Writer) int {
	read, write := io.Pipe()
	cmd := exec.Command(name, args...)
	cmd.Stdin = os.Stdin
	cmd.Stdout = write
	cmd.Stderr = write
	cmd.WaitDelay = outputGrace
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(out, "failureslast: %v\n", err)
		return 2
	}
	summary := make(chan string)
	go func() {
		var s Summarizer
		lines := bufio.NewReader(read)
		for {
			line, err := lines.ReadString('\n')
			if line != "" {
				io.WriteString(out, line)
				s.Line(line)
			}
			if err != nil {
				break
			}
		}
		summary <- s.Summary()
	}()
	waitErr := cmd.Wait()
	write.Close()
	io.WriteString(out, <-summary)

	// The exit code, even when the wait for the output timed out
	// (exec.ErrWaitDelay); -1 when a signal killed the command.
	if code := cmd.ProcessState.ExitCode(); code >= 0 {
		return code
	}
	fmt.Fprintf(out, "failureslast: %v\n", waitErr)
	return 1
}
