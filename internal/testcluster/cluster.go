package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options configures a test control plane.
type Options struct {
	// Scheme for the cluster's clients; client-go's scheme plus
	// apiextensions when nil.
	Scheme *runtime.Scheme
	// CRDDirectoryPaths and CRDs are installed before Start returns.
	CRDDirectoryPaths []string
	CRDs              []*apiextensionsv1.CustomResourceDefinition
	// Objects are created, in order, once the API server serves (for
	// example Hookwright's admission guard).
	Objects []client.Object
	// APIServerFlags are extra kube-apiserver flags (name without dashes).
	APIServerFlags map[string]string
	// AuditLog makes the API server write a Metadata-level audit log to
	// Cluster.AuditLogPath, so tests can count writes as the server saw them.
	AuditLog bool
	// StorageVersionMigration runs kube-controller-manager's storage
	// version migrator, which serves storagemigration.k8s.io/v1 (GA and on
	// by default since Kubernetes v1.37).
	StorageVersionMigration bool
	// ControllerManagerQPS is kube-controller-manager's --kube-api-qps
	// (its burst twice that); 0 keeps its default, 20 QPS with a burst of
	// 30, as kubeadm runs it. The default caps what the controller manager
	// writes for every new Deployment (its ReplicaSet, Pod, their status,
	// EndpointSlices) at 20 per second, which makes it, not the operator
	// under test, the bottleneck of hundreds of installs at once.
	ControllerManagerQPS int
	// Log receives the stand-ins' logs; discarded when unset.
	Log logr.Logger
}

// Cluster is a running control plane (kube-apiserver, etcd,
// kube-controller-manager) with its stand-in network and node.
type Cluster struct {
	Config         *rest.Config
	Client         client.Client
	Scheme         *runtime.Scheme
	Kubelet        *Kubelet
	Dir            string // private folder, removed by Stop
	KubeconfigPath string
	AuditLogPath   string

	binDir            string
	env               *envtest.Environment
	controllerManager *controllerManager
	proxy             *connectProxy
	network           *network
	apiLog            *os.File
	stopInformers     context.CancelFunc
}

// Start builds a control plane: CONNECT proxy, kube-apiserver with the
// egress selector pointing at it, etcd, an admin kubeconfig, the node
// (kubelet stand-in) and kube-controller-manager. Missing binaries are an
// error, never a skip.
func Start(opts Options) (_ *Cluster, retErr error) {
	binDir, err := BinaryDir()
	if err != nil {
		return nil, err
	}
	// Unix socket paths are limited to 108 bytes: keep the folder short.
	dir, err := os.MkdirTemp("", "hw-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, binDir: binDir, Scheme: opts.Scheme}
	defer func() {
		if retErr != nil {
			_ = c.Stop()
		}
	}()
	if c.Scheme == nil {
		c.Scheme = runtime.NewScheme()
		_ = clientgoscheme.AddToScheme(c.Scheme)
		_ = apiextensionsv1.AddToScheme(c.Scheme)
	}
	log := opts.Log
	if log.GetSink() == nil {
		log = logr.Discard()
	}

	// The proxy refuses until the network runs, once the API server serves.
	if c.proxy, err = startConnectProxy(filepath.Join(dir, "egress.sock"), log.WithName("proxy")); err != nil {
		return nil, err
	}
	egressConfig, err := writeEgressSelectorConfig(dir, filepath.Join(dir, "egress.sock"))
	if err != nil {
		return nil, err
	}
	if c.apiLog, err = os.Create(filepath.Join(dir, "kube-apiserver.log")); err != nil {
		return nil, err
	}

	c.env = &envtest.Environment{
		BinaryAssetsDirectory:    binDir,
		CRDDirectoryPaths:        opts.CRDDirectoryPaths,
		CRDs:                     opts.CRDs,
		ErrorIfCRDPathMissing:    true,
		Scheme:                   c.Scheme,
		ControlPlaneStartTimeout: 90 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	api := c.env.ControlPlane.GetAPIServer()
	api.Out, api.Err = c.apiLog, c.apiLog
	args := api.Configure()
	args.Set("egress-selector-config-file", egressConfig)
	if opts.AuditLog {
		if err := c.configureAudit(args); err != nil {
			return nil, err
		}
	}
	for name, value := range opts.APIServerFlags {
		args.Set(name, value)
	}
	started := time.Now()
	if c.Config, err = c.env.Start(); err != nil {
		return nil, fmt.Errorf("starting kube-apiserver %s from %s: %w\n%s", KubeVersion, binDir, err, c.apiServerLogTail(20))
	}
	if err := c.writeKubeconfig(); err != nil {
		return nil, err
	}
	if c.Client, err = client.New(c.Config, client.Options{Scheme: c.Scheme}); err != nil {
		return nil, err
	}
	for _, obj := range opts.Objects {
		if err := c.Client.Create(context.Background(), obj.DeepCopyObject().(client.Object)); err != nil {
			return nil, fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	informers, err := cache.New(c.Config, cache.Options{Scheme: c.Scheme})
	if err != nil {
		return nil, err
	}
	net := newNetwork(informers)
	c.network = net
	c.proxy.route(net.resolve)
	c.Kubelet = newKubelet(c.Client, informers, net, dir, log.WithName("kubelet"))
	ctx, cancel := context.WithCancel(context.Background())
	c.stopInformers = cancel
	go func() { _ = informers.Start(ctx) }()
	if err := c.Kubelet.start(ctx); err != nil {
		return nil, fmt.Errorf("starting the kubelet stand-in: %w", err)
	}
	if !informers.WaitForCacheSync(ctx) {
		return nil, errors.New("the kubelet stand-in's caches did not sync")
	}
	node, err := registerNode(ctx, c.Client)
	if err != nil {
		return nil, fmt.Errorf("registering node %s: %w", NodeName, err)
	}
	go keepNodeAlive(ctx, c.Client, node)
	// Started last: CRDs are installed, so its garbage collector and
	// namespace controller discover them at once.
	apiServerUp := time.Now()
	if c.controllerManager, err = c.startControllerManager(opts.StorageVersionMigration, opts.ControllerManagerQPS); err != nil {
		return nil, err
	}
	if err := c.waitControllerManagerReady(ctx); err != nil {
		return nil, err
	}
	log.Info("Test ground started", "apiServerAndNode", apiServerUp.Sub(started).Round(time.Millisecond).String(),
		"controllerManager", time.Since(apiServerUp).Round(time.Millisecond).String())
	return c, nil
}

func (c *Cluster) configureAudit(args *envtest.Arguments) error {
	policy := filepath.Join(c.Dir, "audit-policy.yaml")
	const metadataPolicy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
	if err := os.WriteFile(policy, []byte(metadataPolicy), 0o600); err != nil {
		return err
	}
	c.AuditLogPath = filepath.Join(c.Dir, "audit.log")
	args.Set("audit-policy-file", policy)
	args.Set("audit-log-path", c.AuditLogPath)
	args.Set("audit-log-mode", "blocking")
	// Never rotate: the API server rotates its audit log at 100 MB by
	// default, and a suite's checks read the whole log from one file (the
	// shipped-RBAC check found "unused" every permission used before a
	// rotation once the controllers suite's audit log passed 100 MB).
	args.Set("audit-log-maxsize", "0") // 0: no rotation
	return nil
}

func (c *Cluster) writeKubeconfig() error {
	admin, err := c.env.ControlPlane.AddUser(envtest.User{Name: "hookwright-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("creating the admin user: %w", err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return err
	}
	c.KubeconfigPath = filepath.Join(c.Dir, "kubeconfig")
	return os.WriteFile(c.KubeconfigPath, kubeconfig, 0o600)
}

// Kubectl runs the kubectl built with the control plane against the
// cluster's admin kubeconfig and returns its standard output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, "kubectl"), append([]string{"--kubeconfig", c.KubeconfigPath}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// ProxyStats reports CONNECT tunnels opened to pods and requests refused.
func (c *Cluster) ProxyStats() (tunnels, refused int64) {
	return c.proxy.Tunnels.Load(), c.proxy.Refused.Load()
}

// Connections is the proxy's log: every tunnel opened, with the Service
// and the Pod that got it, oldest first.
func (c *Cluster) Connections() []Connection { return c.proxy.Connections() }

// Stop stops kube-controller-manager, pods, the proxy, the API server and
// etcd, and removes Dir.
func (c *Cluster) Stop() error {
	var errs []error
	if c.controllerManager != nil {
		c.controllerManager.stop()
	}
	if c.stopInformers != nil {
		c.stopInformers()
	}
	if c.Kubelet != nil {
		c.Kubelet.stopAll()
	}
	if c.env != nil {
		if err := c.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping the control plane: %w", err))
		}
	}
	if c.proxy != nil {
		errs = append(errs, c.proxy.Close())
	}
	if c.apiLog != nil {
		_ = c.apiLog.Close()
	}
	errs = append(errs, os.RemoveAll(c.Dir))
	return errors.Join(errs...)
}

func (c *Cluster) apiServerLogTail(lines int) string {
	return logTail(filepath.Join(c.Dir, "kube-apiserver.log"), lines)
}
