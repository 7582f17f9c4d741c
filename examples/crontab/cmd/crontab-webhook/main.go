// Command crontab-webhook serves the CronTab conversion webhook with the
// certificate Hookwright mounts, reloading it when kubelet swaps the files.
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
	"github.com/hookwright/hookwright/pkg/conversion"
	"github.com/hookwright/hookwright/pkg/conversion/verify"
)

func main() {
	// crontab-webhook verify --crd crd.yaml --samples dir --in-process
	if len(os.Args) > 1 && os.Args[1] == "verify" {
		os.Exit(verify.Main(os.Args[2:], os.Stdout, os.Stderr, crontab.Converter()))
	}
	var opts conversion.Options
	flag.StringVar(&opts.Addr, "addr", ":9443", "listen address")
	flag.StringVar(&opts.CertDir, "cert-dir", "/tmp/k8s-webhook-server/serving-certs", "folder of the mounted tls.crt and tls.key")
	flag.Parse()
	// controller-runtime's certwatcher (inside conversion.Serve) logs
	// through its global logger; the kit logs through the context's.
	logger := zap.New()
	ctrllog.SetLogger(logger)
	ctx, stop := signal.NotifyContext(logr.NewContext(context.Background(), logger), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := conversion.Serve(ctx, conversion.NewWebhook(crontab.Converter()), opts); err != nil {
		fmt.Fprintln(os.Stderr, "crontab-webhook:", err)
		os.Exit(1)
	}
}
