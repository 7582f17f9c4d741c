package verify

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// Main runs the verify command with args (flags after "verify") and
// returns its exit status: 0 when every sample converts and round-trips,
// 1 on findings, 2 on usage errors. inProcess, when set, is used with
// --in-process (a webhook binary passes its own converter).
func Main(args []string, stdout, stderr io.Writer, inProcess Target) int {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	crdPath := fs.String("crd", "", "the CustomResourceDefinition YAML (required)")
	samplesDir := fs.String("samples", "", "folder of sample objects in several versions (required)")
	url := fs.String("webhook", "", "URL of a running conversion webhook, e.g. https://localhost:9443/convert")
	caFile := fs.String("ca-file", "", "CA bundle to trust for --webhook (default: the system roots)")
	insecure := fs.Bool("insecure-skip-tls-verify", false, "do not verify the webhook's certificate (local testing only)")
	useInProcess := fs.Bool("in-process", false, "convert with the converter built into this binary")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: verify --crd crd.yaml --samples dir/ (--webhook URL [--ca-file ca.crt] | --in-process)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *crdPath == "" || *samplesDir == "" || (*url == "") == !*useInProcess {
		fs.Usage()
		return 2
	}
	target, err := targetFor(*url, *caFile, *insecure, *useInProcess, inProcess)
	if err != nil {
		fmt.Fprintln(stderr, "verify:", err)
		return 2
	}
	crd, err := LoadCRD(*crdPath)
	if err != nil {
		fmt.Fprintln(stderr, "verify:", err)
		return 2
	}
	samples, err := LoadSamples(*samplesDir)
	if err != nil {
		fmt.Fprintln(stderr, "verify:", err)
		return 2
	}
	findings := Run(crd, samples, target)
	for _, f := range findings {
		fmt.Fprintln(stdout, f)
	}
	if len(findings) > 0 {
		fmt.Fprintf(stdout, "%d problem(s) in %d sample(s) of %s\n", len(findings), len(samples), crd.Name)
		return 1
	}
	fmt.Fprintf(stdout, "ok: %d sample(s) of %s convert to every served version and round-trip\n", len(samples), crd.Name)
	return 0
}

func targetFor(url, caFile string, insecure, useInProcess bool, inProcess Target) (Target, error) {
	if useInProcess {
		if inProcess == nil {
			return nil, errors.New("--in-process needs a binary built with its converter (for example crontab-webhook verify); use --webhook here")
		}
		return inProcess, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} //nolint:gosec // opt-in flag for local testing
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
		}
	}
	return Webhook{URL: url, Client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}}, nil
}
