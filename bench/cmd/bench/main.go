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
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hookwright/hookwright/bench/runner"
)

// profileDir keeps the CPU profile next to the results file.
func profileDir(out string) string {
	if out == "" {
		return ""
	}
	return filepath.Dir(out)
}

func main() {
	smoke := flag.Bool("smoke", false, "tiny sizes: check that every measure runs")
	out := flag.String("out", "", "write the markdown results to this file (e.g. bench/results.md)")
	operator := flag.String("operator", "", "the operator binary (default: built from the repository)")
	anchor := flag.String("anchor", "", "the cert-controller anchor binary (default: built from bench/certcontroller)")
	budget := flag.Duration("budget", 0, "time budget of the whole run (default 24m, smoke 5m)")
	p1 := flag.Int("p1", 0, "override: installs per operator in P1")
	p4 := flag.String("p4", "", "override: comma-separated P4 sizes (e.g. 100,300)")
	p4CRDs := flag.Int("p4-crds", 0, "override: conversion CRDs per P4 install (1 or 2)")
	p5Secrets := flag.Int("p5-secrets", 0, "override: foreign Secrets in P5")
	p5CRDs := flag.Int("p5-crds", 0, "override: large foreign CRDs in P5")
	phases := flag.String("phases", "", "comma-separated phase name prefixes to run alone (e.g. P4,cert), or to leave out with a leading - (e.g. P4,-P4 floor); default: all")
	keepWork := flag.Bool("keep-work", false, "keep the run's folder, with the API server's audit log and the operator's logs, for tracing requests")
	flag.Parse()
	var sizes []int
	for _, f := range splitList(*p4) {
		n, err := strconv.Atoi(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: --p4:", err)
			os.Exit(2)
		}
		sizes = append(sizes, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	report, err := runner.Run(ctx, runner.Options{
		Smoke: *smoke, OperatorBin: *operator, AnchorBin: *anchor, Budget: *budget, Log: os.Stderr,
		P1: *p1, P4: sizes, P4CRDs: *p4CRDs, P5Secrets: *p5Secrets, P5CRDs: *p5CRDs, ProfileDir: profileDir(*out),
		Phases: splitList(*phases), KeepWork: *keepWork,
	})
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

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
