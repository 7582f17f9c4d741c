// Command bench is `make bench`: it measures Hookwright against its goals
// and against open-policy-agent/cert-controller v0.16.0 on a local control
// plane, prints the results as a markdown table and writes them to --out.
// --smoke runs every measure at a tiny size (make test runs it so the
// harness cannot rot); its figures mean nothing.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hookwright/hookwright/bench/runner"
)

func main() {
	smoke := flag.Bool("smoke", false, "tiny sizes: check that every measure runs")
	out := flag.String("out", "", "write the markdown results to this file (e.g. bench/results.md)")
	operator := flag.String("operator", "", "the operator binary (default: built from the repository)")
	anchor := flag.String("anchor", "", "the cert-controller anchor binary (default: built from bench/certcontroller)")
	budget := flag.Duration("budget", 0, "time budget of the whole run (default 19m, smoke 5m)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	report, err := runner.Run(ctx, runner.Options{Smoke: *smoke, OperatorBin: *operator, AnchorBin: *anchor, Budget: *budget, Log: os.Stderr})
	if report != nil {
		md := report.Markdown()
		fmt.Print(md)
		if *out != "" {
			if werr := os.WriteFile(*out, []byte(md), 0o644); werr != nil {
				fmt.Fprintln(os.Stderr, "bench:", werr)
				os.Exit(1)
			}
			fmt.Fprintf(os.Stderr, "bench: wrote %s (%s)\n", *out, report.Duration.Round(time.Second))
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: FAILED:", err)
		os.Exit(1)
	}
}
