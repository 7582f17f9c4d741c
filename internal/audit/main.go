package audit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

const usage = `usage: hookwright audit [-n NAMESPACE] [--since DURATION|TIME] [-o table|json|yaml] [--kubeconfig FILE]
   or: kubectl hookwright audit ...   (with the binary on PATH as kubectl-hookwright)

Prints every WebhookInstall (all namespaces unless -n): its CRDs and their
conversion state, the earliest CA and serving-certificate expiry, the next
rotation, the last rotation (kind, outcome, when, reason), the number of
failed rotations and the CRDs whose conversion another writer keeps
changing; then every certificate rotation, oldest first, each once, with
kind, reason, outcome and the old and new certificate fingerprints.

Rotations come from each install's status.rotations (the last 20 per
install) and, for older ones, from the installs' Events while the API
server keeps them (one hour by default, --event-ttl). --since keeps the
rotations started in the period: a duration back from now (24h) or an
RFC 3339 time. The json and yaml schema is docs/audit-schema.yaml.

Read-only; needs list on webhookinstalls.operators.hookwright.dev and on
events in the namespaces audited.

Exit status: 0 printed, 1 the cluster could not be read, 2 usage errors.

Flags:
`

// Main runs `hookwright audit` with args (after "audit") and returns its
// exit status. config, when non-nil, replaces the kubeconfig lookup.
func Main(args []string, stdout, stderr io.Writer, config *rest.Config) int {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	var namespace, since, output, kubeconfig string
	fs.StringVar(&namespace, "n", "", "audit this namespace only (default: all namespaces)")
	fs.StringVar(&namespace, "namespace", "", "same as -n")
	fs.StringVar(&since, "since", "", "list the rotations started in this period: a duration back from now (24h) or an RFC 3339 time")
	fs.StringVar(&output, "o", "table", "output format: table, json or yaml")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "hookwright audit: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if output != "table" && output != "json" && output != "yaml" {
		fmt.Fprintf(stderr, "hookwright audit: unknown output format %q: use table, json or yaml\n", output)
		return 2
	}
	now := time.Now()
	from, err := parseSince(since, now)
	if err != nil {
		fmt.Fprintln(stderr, "hookwright audit:", err)
		return 2
	}
	if config == nil {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = kubeconfig
		config, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			fmt.Fprintln(stderr, "hookwright audit: no Kubernetes configuration:", err)
			return 1
		}
	}
	report, err := read(context.Background(), config, namespace, from, now)
	if err != nil {
		fmt.Fprintln(stderr, "hookwright audit:", err)
		return 1
	}
	if err := Print(stdout, report, output); err != nil {
		fmt.Fprintln(stderr, "hookwright audit:", err)
		return 1
	}
	return 0
}

func parseSince(since string, now time.Time) (time.Time, error) {
	if since == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(since); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("--since %s: give a positive duration (24h) or a time", since)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, since); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q is neither a duration (24h, 90m) nor an RFC 3339 time (2026-11-01T00:00:00Z)", since)
}

// read lists the installs and the Events regarding them.
func read(ctx context.Context, config *rest.Config, namespace string, since, now time.Time) (Report, error) {
	scheme := runtime.NewScheme()
	if err := errors.Join(corev1.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		return Report{}, err
	}
	c, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		return Report{}, err
	}
	var installs v1alpha1.WebhookInstallList
	if err := c.List(ctx, &installs, client.InNamespace(namespace)); err != nil {
		return Report{}, fmt.Errorf("listing WebhookInstalls: %w", err)
	}
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(namespace), client.MatchingFields{"involvedObject.kind": "WebhookInstall"}); err != nil {
		return Report{}, fmt.Errorf("listing the WebhookInstalls' Events: %w", err)
	}
	return Build(installs.Items, events.Items, since, now), nil
}
