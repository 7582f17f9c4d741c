// Command crontab-webhook serves the CronTab example's three webhooks on
// one HTTPS port with the one certificate Hookwright mounts, reloading it
// when kubelet swaps the files: conversion (/convert, Hookwright's kit),
// validation and defaulting (/validate-stable-example-com-crontab,
// /mutate-stable-example-com-crontab, controller-runtime's admission
// package).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/hookwright/hookwright/examples/crontab"
	"github.com/hookwright/hookwright/pkg/conversion/verify"
)

func main() {
	// crontab-webhook verify --crd crd.yaml --samples dir --in-process
	if len(os.Args) > 1 && os.Args[1] == "verify" {
		os.Exit(verify.Main(os.Args[2:], os.Stdout, os.Stderr, crontab.Converter()))
	}
	opts := defaultOptions()
	flag.StringVar(&opts.Addr, "addr", opts.Addr, "listen address")
	flag.StringVar(&opts.CertDir, "cert-dir", opts.CertDir, "folder of the mounted tls.crt and tls.key")
	flag.Parse()
	// controller-runtime's certwatcher and admission webhooks log through
	// its global logger; the kit logs through the context's.
	logger := zap.New()
	ctrllog.SetLogger(logger)
	ctx, stop := signal.NotifyContext(logr.NewContext(context.Background(), logger), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, crontab.NewHandler(), opts); err != nil {
		fmt.Fprintln(os.Stderr, "crontab-webhook:", err)
		os.Exit(1)
	}
}
