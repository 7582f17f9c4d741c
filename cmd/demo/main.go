// Command demo runs Hookwright's main job on a local control plane built
// from Go modules (`make demo`): it installs the CronTab conversion webhook
// with Hookwright, converts CronTabs both ways through the API server,
// rotates the CA under continuous reads, prints the audit trail, and then
// leaves the control plane running for exploration until Ctrl-C.
//
// It imports the test ground, so it is a command of its own: the operator
// binary never links it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	exit := flag.Bool("exit", false, "stop at the end instead of leaving the control plane running (used by the demo's test)")
	rotations := flag.Int("rotations", 1, "CA rotations to force while reading")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *exit, *rotations); err != nil {
		fmt.Fprintln(os.Stderr, "demo: FAILED:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) {
	fmt.Printf("==> %s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
