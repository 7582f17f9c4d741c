package testcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// controllerManagerControllers are the kube-controller-manager controllers
// a webhook's lifecycle touches: rollouts (deployment, replicaset), traffic
// (endpointslice), deletion (garbage collector, namespace) and service
// accounts with their token Secrets. Nothing else runs: no scheduler (the
// kubelet stand-in binds pods to its node) and no node lifecycle controller.
var controllerManagerControllers = []string{
	"deployment-controller",
	"replicaset-controller",
	"garbage-collector-controller",
	"endpointslice-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
}

// storageVersionMigratorController needs the storagemigration.k8s.io API
// (GA and served by default since v1.37) and the garbage collector.
const storageVersionMigratorController = "storage-version-migrator-controller"

// ControllerManagerUser is who kube-controller-manager's controllers act as
// (in the API server's audit log): one identity in system:masters for all
// of them, as with --use-service-account-credentials=false.
const ControllerManagerUser = "system:kube-controller-manager"

// ControllerManagerLog is where kube-controller-manager writes its log
// (klog's text format, --v=1).
func (c *Cluster) ControllerManagerLog() string {
	return filepath.Join(c.Dir, "kube-controller-manager.log")
}

// controllerManager is a running kube-controller-manager process.
type controllerManager struct {
	cmd    *exec.Cmd
	log    *os.File
	exited chan error
}

// startControllerManager runs kube-controller-manager against the API server
// as ControllerManagerUser (one identity for every controller:
// per-controller service account credentials would test Kubernetes' RBAC,
// not Hookwright), without leader election or a serving port.
func (c *Cluster) startControllerManager(storageMigration bool, qps int) (*controllerManager, error) {
	user, err := c.env.ControlPlane.AddUser(envtest.User{Name: ControllerManagerUser, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("creating the controller manager's user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	kubeconfigPath := filepath.Join(c.Dir, "kube-controller-manager.kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	rootCA := filepath.Join(c.Dir, "cluster-ca.crt")
	if err := os.WriteFile(rootCA, c.Config.CAData, 0o600); err != nil {
		return nil, err
	}
	controllers := controllerManagerControllers
	if storageMigration {
		controllers = append(append([]string(nil), controllers...), storageVersionMigratorController)
	}
	args := []string{
		"--kubeconfig=" + kubeconfigPath,
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		// The token controller signs legacy token Secrets with the key the
		// API server verifies service account tokens with.
		"--service-account-private-key-file=" + filepath.Join(c.env.ControlPlane.APIServer.CertDir, "sa-signer.key"),
		"--root-ca-file=" + rootCA,
		// Rollouts and endpoint updates as fast as the informers allow.
		"--endpointslice-updates-batch-period=0s",
		"--v=1",
	}
	if qps > 0 {
		args = append(args, fmt.Sprintf("--kube-api-qps=%d", qps), fmt.Sprintf("--kube-api-burst=%d", 2*qps))
	}
	log, err := os.Create(c.ControllerManagerLog())
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(c.binDir, "kube-controller-manager"), args...)
	cmd.Stdout, cmd.Stderr = log, log
	// client-go gates the storage version migrator needs (on by default since
	// v1.36; set so a default change cannot silently disable the controller).
	cmd.Env = append(os.Environ(), "KUBE_FEATURE_InformerResourceVersion=true", "KUBE_FEATURE_InOrderInformers=true")
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	cm := &controllerManager{cmd: cmd, log: log, exited: make(chan error, 1)}
	go func() { cm.exited <- cmd.Wait() }()
	return cm, nil
}

// waitControllerManagerReady returns once the controllers work: the
// service account controller has created the default namespace's
// "default" ServiceAccount.
func (c *Cluster) waitControllerManagerReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		var sa corev1.ServiceAccount
		err := c.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "default"}, &sa)
		if err == nil {
			return nil
		}
		select {
		case err := <-c.controllerManager.exited:
			c.controllerManager.exited <- err
			return fmt.Errorf("kube-controller-manager exited: %v\n%s", err, logTail(c.ControllerManagerLog(), 20))
		case <-ctx.Done():
			return fmt.Errorf("kube-controller-manager did not start its controllers within 60 s\n%s", logTail(c.ControllerManagerLog(), 20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and waits up to 10 s, then kills.
func (cm *controllerManager) stop() {
	_ = cm.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-cm.exited:
		cm.exited <- err
	case <-time.After(10 * time.Second):
		_ = cm.cmd.Process.Kill()
		<-cm.exited
	}
	_ = cm.log.Close()
}

func logTail(path string, lines int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return filepath.Base(path) + " (last lines):\n" + strings.Join(all, "\n")
}
