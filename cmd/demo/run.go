package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/guard"
	"github.com/hookwright/hookwright/internal/harness"
	"github.com/hookwright/hookwright/internal/testcluster"
	"github.com/hookwright/hookwright/internal/testfixtures"
)

func run(ctx context.Context, exitAtEnd bool, rotations int) error {
	ctrllog.SetLogger(logr.Discard())
	root, err := repoRoot()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "hookwright-demo-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()

	step("Building the CronTab sample webhook (examples/crontab/cmd/crontab-webhook)")
	webhookBin := filepath.Join(work, "crontab-webhook")
	build := exec.CommandContext(ctx, "go", "build", "-o", webhookBin, "./examples/crontab/cmd/crontab-webhook")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building crontab-webhook: %w (is Go installed and the module proxy reachable?)", err)
	}

	step("Starting a local control plane: kube-apiserver %s, etcd, kube-controller-manager, a stand-in node and network", testcluster.KubeVersion)
	cluster, err := testcluster.Start(testcluster.Options{
		Scheme:            harness.Scheme(),
		CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")},
		Objects:           []client.Object{guard.Policy(), guard.Binding()}, // the admission guard, as config/default ships it
	})
	if err != nil {
		return fmt.Errorf("%w (run 'make control-plane' first)", err)
	}
	defer func() {
		step("Stopping the control plane")
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "demo: stopping:", err)
		}
	}()
	c := cluster.Client
	step("Installed Hookwright's CRD (webhookinstalls.operators.hookwright.dev)")

	operator, err := harness.StartOperator(cluster.Config, logr.Discard())
	if err != nil {
		return err
	}
	defer func() { _ = operator.Stop() }()
	step("Hookwright operator running")

	crd := &apiextensionsv1.CustomResourceDefinition{}
	whi := &v1alpha1.WebhookInstall{}
	if err := readManifest(root, "examples/crontab/crd.yaml", crd); err != nil {
		return err
	}
	if err := readManifest(root, "examples/crontab/webhookinstall.yaml", whi); err != nil {
		return err
	}
	if err := c.Create(ctx, crd); err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: whi.Namespace}}); err != nil {
		return err
	}
	cluster.Kubelet.SetPropagationDelay(3 * time.Second)
	cluster.Kubelet.Serve(whi.Namespace, "crontab-webhook", testcluster.BinaryHost{
		Path:        webhookBin,
		Args:        testfixtures.CronTabWebhookArgs,
		GracePeriod: 10 * time.Second,
		Stdout:      devNull(),
	})
	// The default overlap, 10 minutes, keeps a replaced CA trusted while
	// every API server of a real control plane catches up; one API server
	// here needs far less, and the demo should not wait 10 minutes.
	whi.Spec.Certificates.TrustOverlap = &metav1.Duration{Duration: 15 * time.Second}
	if err := c.Create(ctx, whi); err != nil {
		return err
	}
	step("Applied CRD crontabs.stable.example.com and WebhookInstall %s/%s; the sample webhook runs as its pod (trustOverlap 15s for the demo)", whi.Namespace, whi.Name)
	if err := waitPhase(ctx, c, whi, v1alpha1.PhaseSucceeded, 2*time.Minute); err != nil {
		return err
	}
	step("WebhookInstall Succeeded: Deployment, Service, CA and serving certificate in place; CRD converts through the webhook")

	if err := c.Create(ctx, cronTab("v1", "nightly", map[string]any{"cronSpec": "30 2 * * *", "image": "backup:1"})); err != nil {
		return err
	}
	got, err := getCronTab(ctx, c, "v2", "nightly")
	if err != nil {
		return err
	}
	step("Created CronTab nightly in v1 {cronSpec: \"30 2 * * *\"}; read in v2: %v", got.Object["spec"])
	if err := c.Create(ctx, cronTab("v2", "weekdays", map[string]any{"minute": "*/5", "hour": "*", "dayOfMonth": "*", "month": "*", "dayOfWeek": "1-5", "image": "poll:2"})); err != nil {
		return err
	}
	got, err = getCronTab(ctx, c, "v1", "weekdays")
	if err != nil {
		return err
	}
	step("Created CronTab weekdays in v2 {minute: \"*/5\", dayOfWeek: \"1-5\"}; read in v1: %v", got.Object["spec"])

	ok, failed, err := rotateWhileReading(ctx, c, whi, rotations)
	if err != nil {
		return err
	}
	step("Forced %d CA rotation(s) while reading CronTabs in v2 continuously: %d reads, %d failed", rotations, ok+failed, failed)
	if failed > 0 {
		return fmt.Errorf("%d reads failed during rotation", failed)
	}

	step("Audit: kubectl get whi -o wide")
	printKubectl(ctx, cluster, "get", "whi", "-A", "-o", "wide")
	step("Audit: rotation history (status.rotations)")
	printKubectl(ctx, cluster, "get", "whi", whi.Name, "-n", whi.Namespace, "-o",
		`jsonpath={range .status.rotations[*]}{.started}  {.kind}  {.reason}  {.outcome}  {.oldFingerprint} -> {.newFingerprint}{"\n"}{end}`)
	step("Audit: Events")
	printKubectl(ctx, cluster, "get", "events.events.k8s.io", "-n", whi.Namespace, "--sort-by=.metadata.creationTimestamp",
		"-o", `custom-columns=TYPE:.type,REASON:.reason,NOTE:.note`)

	if exitAtEnd {
		step("Demo complete")
		return nil
	}
	step("Control plane left running. In another shell: export KUBECONFIG=%s; kubectl get whi,crontabs -A", cluster.KubeconfigPath)
	step("Press Ctrl-C to stop")
	<-ctx.Done()
	return nil
}

func rotateWhileReading(ctx context.Context, c client.Client, whi *v1alpha1.WebhookInstall, rotations int) (int64, int64, error) {
	var ok, failed atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			l := &unstructured.UnstructuredList{}
			l.SetAPIVersion("stable.example.com/v2")
			l.SetKind("CronTabList")
			if err := c.List(ctx, l, client.InNamespace("default")); err != nil {
				failed.Add(1)
				fmt.Fprintln(os.Stderr, "demo: read failed:", err)
				continue
			}
			ok.Add(1)
		}
	}()
	halt := sync.OnceFunc(func() { close(stop); <-done })
	defer halt()
	for i := 1; i <= rotations; i++ {
		request := fmt.Sprintf("ca: demo rotation %d at %s", i, time.Now().Format(time.RFC3339))
		step("Requesting CA rotation %d: kubectl annotate whi %s -n %s %s=%q --overwrite", i, whi.Name, whi.Namespace, v1alpha1.AnnotationRotate, request)
		current := &v1alpha1.WebhookInstall{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(whi), current); err != nil {
			return 0, 0, err
		}
		patch := client.MergeFrom(current.DeepCopy())
		if current.Annotations == nil {
			current.Annotations = map[string]string{}
		}
		current.Annotations[v1alpha1.AnnotationRotate] = request
		if err := c.Patch(ctx, current, patch); err != nil {
			return 0, 0, err
		}
		if err := waitRotationDone(ctx, c, whi, request); err != nil {
			return 0, 0, err
		}
	}
	halt()
	return ok.Load(), failed.Load(), nil
}

func waitRotationDone(ctx context.Context, c client.Client, whi *v1alpha1.WebhookInstall, request string) error {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		current := &v1alpha1.WebhookInstall{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(whi), current); err != nil {
			return err
		}
		done := current.Status.HandledRotationRequest == request
		for _, rec := range current.Status.Rotations {
			done = done && rec.Outcome != v1alpha1.RotationInProgress
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	current := &v1alpha1.WebhookInstall{}
	_ = c.Get(ctx, client.ObjectKeyFromObject(whi), current)
	var detail []string
	for _, cond := range current.Status.Conditions {
		detail = append(detail, fmt.Sprintf("%s=%s (%s: %s)", cond.Type, cond.Status, cond.Reason, cond.Message))
	}
	return fmt.Errorf("rotation %q did not complete within 3 minutes; phase %s; %s", request, current.Status.Phase, strings.Join(detail, "; "))
}

func waitPhase(ctx context.Context, c client.Client, whi *v1alpha1.WebhookInstall, phase v1alpha1.InstallPhase, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	current := &v1alpha1.WebhookInstall{}
	for time.Now().Before(deadline) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(whi), current); err == nil && current.Status.Phase == phase {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("WebhookInstall %s/%s is %s (%s: %s), not %s, after %s", whi.Namespace, whi.Name,
		current.Status.Phase, current.Status.Reason, current.Status.Message, phase, timeout)
}

func cronTab(version, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion("stable.example.com/" + version)
	u.SetKind("CronTab")
	u.SetNamespace("default")
	u.SetName(name)
	return u
}

func getCronTab(ctx context.Context, c client.Client, version, name string) (*unstructured.Unstructured, error) {
	u := cronTab(version, name, nil)
	return u, c.Get(ctx, client.ObjectKeyFromObject(u), u)
}

func printKubectl(ctx context.Context, cluster *testcluster.Cluster, args ...string) {
	out, err := cluster.Kubectl(ctx, args...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
	}
	fmt.Println(strings.TrimRight(out, "\n"))
}

func readManifest(root, path string, into any) error {
	raw, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "examples", "crontab", "crd.yaml")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("run the demo from the Hookwright repository (make demo)")
		}
	}
}

func devNull() *os.File {
	f, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	return f
}
