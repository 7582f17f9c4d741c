// Command hookwright is the Hookwright operator: it installs CRD conversion
// webhooks declared in WebhookInstalls and keeps their certificates valid.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers"
	"github.com/hookwright/hookwright/internal/audit"
	"github.com/hookwright/hookwright/internal/importcsv"
	"github.com/hookwright/hookwright/internal/memlimit"
	"github.com/hookwright/hookwright/pkg/conversion/verify"
)

func main() {
	// hookwright verify --crd crd.yaml --samples dir --webhook URL
	if len(os.Args) > 1 && os.Args[1] == "verify" {
		os.Exit(verify.Main(os.Args[2:], os.Stdout, os.Stderr, nil))
	}
	// hookwright import-csv [--namespace NS] <CSV file or bundle dir>
	if len(os.Args) > 1 && os.Args[1] == "import-csv" {
		os.Exit(importcsv.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	// hookwright audit [-n NS] [--since 24h] [-o table|json|yaml]
	if len(os.Args) > 1 && os.Args[1] == "audit" {
		os.Exit(audit.Main(os.Args[2:], os.Stdout, os.Stderr, nil))
	}
	// As a kubectl plugin (kubectl-hookwright on PATH), only the commands
	// run: never the operator.
	if filepath.Base(os.Args[0]) == "kubectl-hookwright" {
		fmt.Fprintln(os.Stderr, "usage: kubectl hookwright audit|verify|import-csv [flags]")
		os.Exit(2)
	}
	var (
		metricsAddr    string
		probeAddr      string
		pprofAddr      string
		leaderElection bool
		leaderElectNS  string
		concurrency    int
		metricsSecure  bool
		authority      controllers.Authority
		migration      controllers.MigrationOptions
		inTree         bool
		syncPeriod     time.Duration
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8443", "address of the Prometheus metrics endpoint (0 disables it)")
	flag.BoolVar(&metricsSecure, "metrics-secure", true, "serve metrics over HTTPS, to scrapers the API server authenticates and authorizes (get on the /metrics non-resource URL); false serves plain HTTP to anyone")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "0", "address of Go's /debug/pprof profiles (0 disables them); unauthenticated: bind it to localhost (127.0.0.1:8082) and reach it with kubectl port-forward")
	flag.BoolVar(&leaderElection, "leader-elect", true, "elect a leader so that only one replica reconciles at a time")
	flag.StringVar(&leaderElectNS, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the pod's namespace)")
	flag.IntVar(&concurrency, "max-concurrent-reconciles", controllers.DefaultConcurrency, "how many WebhookInstalls are reconciled at once")
	flag.BoolVar(&authority.AllowSystemNamespaces, "allow-system-namespaces", false, "accept WebhookInstalls in Hookwright's own namespace and in kube-* namespaces")
	flag.Int64Var(&migration.PageSize, "migration-page-size", 500, "objects a storage migration lists and rewrites per pass (its unit of progress after a restart)")
	flag.IntVar(&migration.Workers, "migration-workers", 4, "objects a storage migration rewrites in parallel")
	flag.Float64Var(&migration.QPS, "migration-qps", 200, "rewrites per second, all storage migrations together")
	flag.DurationVar(&syncPeriod, "sync-period", 10*time.Hour, "reconcile every install at least this often even when nothing changed (controller-runtime's SyncPeriod); a pass with nothing to do writes nothing")
	flag.BoolVar(&inTree, "migration-use-in-tree", true, "migrate through the cluster's StorageVersionMigration API (storagemigration.k8s.io) when it is served and its controller runs; false: always Hookwright's own migrator")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	if err := applySoftMemoryLimit(); err != nil {
		fmt.Fprintln(os.Stderr, "hookwright:", err)
		os.Exit(1)
	}

	authority.Namespace, authority.ServiceAccount = ownIdentity()
	migration.InTree = &inTree
	if err := run(metricsServer(metricsAddr, metricsSecure), probeAddr, pprofAddr, leaderElection, leaderElectNS, concurrency, syncPeriod, authority, migration); err != nil {
		fmt.Fprintln(os.Stderr, "hookwright:", err)
		os.Exit(1)
	}
}

func run(metrics metricsserver.Options, probeAddr, pprofAddr string, leaderElection bool, leaderElectNS string, concurrency int, syncPeriod time.Duration,
	authority controllers.Authority, migration controllers.MigrationOptions) error {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("no Kubernetes configuration: %w (set KUBECONFIG or run in a pod)", err)
	}
	cacheOptions := controllers.CacheOptions()
	cacheOptions.SyncPeriod = &syncPeriod
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   cacheOptions,
		Metrics:                 metrics,
		HealthProbeBindAddress:  probeAddr,
		PprofBindAddress:        pprofAddr,
		LeaderElection:          leaderElection,
		LeaderElectionID:        "hookwright.operators.hookwright.dev",
		LeaderElectionNamespace: leaderElectNS,
		// A new leader starts at once when the old one shuts down cleanly.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	reconciler := &controllers.WebhookInstallReconciler{
		Client:      mgr.GetClient(),
		APIReader:   mgr.GetAPIReader(),
		Recorder:    mgr.GetEventRecorder("hookwright"),
		Clock:       clock.RealClock{},
		Concurrency: concurrency,
		Authority:   authority,
		Migration:   migration,
	}
	if err := reconciler.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the WebhookInstall controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.Info("Starting Hookwright", "leaderElection", leaderElection, "namespace", authority.Namespace, "serviceAccount", authority.ServiceAccount)
	return mgr.Start(ctrl.SetupSignalHandler())
}

// applySoftMemoryLimit sets the Go runtime's soft memory limit to 90% of
// the container's, which the manager's Deployment passes in
// HOOKWRIGHT_MEMORY_LIMIT (internal/memlimit says why).
func applySoftMemoryLimit() error {
	limit, set, err := memlimit.FromEnv(os.Getenv)
	if err != nil || !set {
		return err
	}
	debug.SetMemoryLimit(limit)
	ctrl.Log.Info("Soft memory limit set", "limitBytes", limit, "containerLimit", os.Getenv(memlimit.EnvVar))
	return nil
}

// metricsServer serves metrics over HTTPS (a self-signed certificate that
// controller-runtime generates) to callers whose token the API server
// accepts and who may get /metrics, as kubebuilder scaffolds it.
func metricsServer(addr string, secure bool) metricsserver.Options {
	if !secure {
		return metricsserver.Options{BindAddress: addr}
	}
	return metricsserver.Options{BindAddress: addr, SecureServing: true, FilterProvider: filters.WithAuthenticationAndAuthorization}
}

// ownIdentity is the namespace and ServiceAccount Hookwright runs as, from
// the Deployment's downward API (POD_NAMESPACE, POD_SERVICE_ACCOUNT), else
// from the mounted token's namespace file.
func ownIdentity() (namespace, serviceAccount string) {
	namespace, serviceAccount = os.Getenv("POD_NAMESPACE"), os.Getenv("POD_SERVICE_ACCOUNT")
	if namespace == "" {
		if raw, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
			namespace = strings.TrimSpace(string(raw))
		}
	}
	return namespace, serviceAccount
}
