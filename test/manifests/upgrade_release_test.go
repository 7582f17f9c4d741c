package manifests_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/controllers/guard"
	"github.com/hookwright/hookwright/internal/testcluster"
	"github.com/hookwright/hookwright/internal/testfixtures"
)

// The upgrade of Hookwright itself, as OLM (or `kubectl apply
// --server-side -k config/default` of the new release) does it: the
// previous release runs installs; the new release's CRDs, guard and RBAC
// are applied; the new manager starts next to the old one, waits for the
// Lease, and takes over when the old one shuts down. The upgrade alone must
// not break a read nor issue a certificate: every install stays Succeeded
// and verified, its Secrets keep their resourceVersion, its CRD its
// caBundle and Service, its status its fingerprints and rotation records.
// Allowed, and reported: a rolled webhook Deployment (a pod template built
// differently), a rewritten CRD with the same conversion, and reads that
// failed while the previous release installed (its own defect, fixed
// since; see readFromHere).

// leaseName is the manager's leader-election Lease (main.go's LeaderElectionID,
// the same in both releases).
const leaseName = "hookwright.operators.hookwright.dev"

// previousRelease is the commit hack/previous-release records: the first
// line that is not blank.
func previousRelease() string {
	GinkgoHelper()
	for _, line := range strings.Split(readFile("hack/previous-release"), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		commit := strings.Fields(line)[0]
		Expect(commit).To(MatchRegexp(`^[0-9a-f]{40}$`), "hack/previous-release starts with the previous release's full commit hash")
		return commit
	}
	Fail("hack/previous-release is empty")
	return ""
}

// goBuild builds the operator in dir, as a developer would.
func goBuild(ctx context.Context, dir, binary string) {
	GinkgoHelper()
	start := time.Now()
	build := exec.CommandContext(ctx, "go", "build", "-o", binary, ".")
	build.Dir = dir
	build.Stdout, build.Stderr = GinkgoWriter, GinkgoWriter
	Expect(build.Run()).To(Succeed(), "go build in %s", dir)
	fmt.Fprintf(GinkgoWriter, "built %s in %s\n", binary, time.Since(start).Round(time.Second))
}

// prefixWriter tags each line with the operator it comes from. exec runs
// one copying goroutine when Stdout and Stderr are the same writer.
type prefixWriter struct {
	prefix  string
	w       io.Writer
	midLine bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	var out []byte
	for _, c := range b {
		if !p.midLine {
			out = append(out, p.prefix...)
		}
		out = append(out, c)
		p.midLine = c != '\n'
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// operatorProcess is one release's manager, run as its Deployment would
// run it (arguments, downward-API environment, ServiceAccount token).
type operatorProcess struct {
	name                string
	cmd                 *exec.Cmd
	output              *testfixtures.SyncBuffer
	exited              chan struct{}
	waitErr             error
	healthAddr, metrics string
	grace               time.Duration
}

// startOperator runs binary with dep's container arguments (addresses moved
// to free loopback ports) and environment (fieldRefs resolved as kubelet
// does), authenticated by kubeconfig; extra arguments come last.
func startOperator(name, binary string, dep *appsv1.Deployment, kubeconfig string, extra ...string) *operatorProcess {
	GinkgoHelper()
	pod := dep.Spec.Template.Spec
	Expect(pod.Containers).To(HaveLen(1))
	container := pod.Containers[0]
	p := &operatorProcess{name: name, output: &testfixtures.SyncBuffer{}, exited: make(chan struct{}),
		healthAddr: freeAddr(), metrics: freeAddr(), grace: 30 * time.Second}
	if pod.TerminationGracePeriodSeconds != nil {
		p.grace = time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	}
	args := []string{}
	for _, a := range container.Args {
		switch {
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=" + p.healthAddr
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=" + p.metrics
		}
		args = append(args, a)
	}
	Expect(args).To(ContainElement("--leader-elect"), "%s: the shipped manager elects a leader", name)
	// In a pod the Lease's namespace comes from the mounted token's folder.
	args = append(args, "--leader-election-namespace="+dep.Namespace)
	args = append(args, extra...)
	env := append(os.Environ(), "KUBECONFIG="+kubeconfig)
	for _, e := range container.Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env = append(env, e.Name+"="+dep.Namespace)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.serviceAccountName":
			env = append(env, e.Name+"="+pod.ServiceAccountName)
		case e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
			limit := container.Resources.Limits.Memory()
			Expect(limit.IsZero()).To(BeFalse(), "%s: %s reads a memory limit the container does not set", name, e.Name)
			env = append(env, fmt.Sprintf("%s=%d", e.Name, limit.Value())) // the downward API's bytes
		default:
			Fail(fmt.Sprintf("%s: environment variable %s: this test resolves only metadata.namespace, spec.serviceAccountName and limits.memory", name, e.Name))
		}
	}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = env
	p.cmd.Stdout = io.MultiWriter(p.output, &prefixWriter{prefix: "[" + name + "] ", w: GinkgoWriter})
	p.cmd.Stderr = p.cmd.Stdout
	fmt.Fprintf(GinkgoWriter, "starting the %s operator: %s %s\n", name, binary, strings.Join(args, " "))
	Expect(p.cmd.Start()).To(Succeed())
	go func() { p.waitErr = p.cmd.Wait(); close(p.exited) }()
	// On a failure: SIGTERM first, so that the Lease is released for the
	// specs after this one, then SIGKILL.
	DeferCleanup(func() {
		if !p.running() {
			return
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(p.grace):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

func (p *operatorProcess) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// healthy: /healthz answers (the manager serves probes before it leads).
func (p *operatorProcess) healthy(g Gomega) {
	g.Expect(p.running()).To(BeTrue(), "the %s operator exited: %v\n%s", p.name, p.waitErr, p.output.String())
	resp, err := http.Get("http://" + p.healthAddr + "/healthz")
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
}

// acquired: client-go's leader election logged taking the Lease.
func (p *operatorProcess) acquired() bool {
	return strings.Contains(strings.ToLower(p.output.String()), "successfully acquired lease")
}

// terminate stops the manager as kubelet does: SIGTERM, then a clean exit
// within the grace period.
func (p *operatorProcess) terminate() {
	GinkgoHelper()
	Expect(p.cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
	Eventually(p.exited).WithTimeout(p.grace).Should(BeClosed(), "the %s operator exits within its grace period", p.name)
	Expect(p.waitErr).NotTo(HaveOccurred(), "the %s operator exits cleanly on SIGTERM", p.name)
}

// metricSum adds up a metric's plain-HTTP samples whose labels include all
// of want.
func (p *operatorProcess) metricSum(g Gomega, name string, want ...string) float64 {
	resp, err := http.Get("http://" + p.metrics + "/metrics")
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	sum := 0.0
	sample := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `(\{[^}]*\})?\s+(\S+)`)
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for scanner.Scan() {
		m := sample.FindStringSubmatch(scanner.Text())
		if m == nil {
			continue
		}
		matches := true
		for _, w := range want {
			matches = matches && strings.Contains(m[1], w)
		}
		if !matches {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		g.Expect(err).NotTo(HaveOccurred())
		sum += v
	}
	g.Expect(scanner.Err()).NotTo(HaveOccurred())
	return sum
}

// leaseHolder is the Lease's holder, "" when free or absent.
func leaseHolder(ctx context.Context, g Gomega, ns string) string {
	lease := &coordinationv1.Lease{}
	err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: leaseName}, lease)
	if apierrors.IsNotFound(err) {
		return ""
	}
	g.Expect(err).NotTo(HaveOccurred())
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// serviceAccountKubeconfig authenticates as ns/sa with a fresh token, as the
// manager's pod does.
func serviceAccountKubeconfig(ctx context.Context, ns, sa string) string {
	GinkgoHelper()
	token, _, err := run(ctx, nil, kubectl, "--kubeconfig", cluster.KubeconfigPath, "create", "token", sa, "--namespace", ns, "--duration=1h")
	Expect(err).NotTo(HaveOccurred())
	kubeconfig := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"test": {Server: cluster.Config.Host, CertificateAuthorityData: cluster.Config.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"manager": {Token: strings.TrimSpace(token)}},
		Contexts:       map[string]*clientcmdapi.Context{"manager": {Cluster: "test", AuthInfo: "manager"}},
		CurrentContext: "manager",
	}, kubeconfig)).To(Succeed())
	return kubeconfig
}

// established waits for a CRD to serve.
func established(ctx context.Context, name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
		ok := false
		for _, c := range crd.Status.Conditions {
			ok = ok || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
		}
		g.Expect(ok).To(BeTrue(), "CRD %s established", name)
	}).WithTimeout(time.Minute).Should(Succeed())
}

// upgradeFixture is one install of the widget webhook in a namespace of its
// own, its widgets read continuously at the non-storage version.
type upgradeFixture struct {
	ns, group, crdName, deployment string
	widgets                        []string
	readers                        *testfixtures.Reader
}

// readFromHere halts the readers and starts new ones, so that what is
// counted from here on is the upgrade's. Reads that failed before are
// reported, not held against it: the previous release pointed a CRD at
// its Service as soon as the Deployment was available, before the
// EndpointSlice controller listed the pod as ready, and reads in that
// moment fail (fixed since: awaitReadyEndpoints, controllers/endpoints.go).
func (f *upgradeFixture) readFromHere(ctx context.Context) {
	f.readers.Halt()
	if failed := f.readers.Failed.Load(); failed > 0 {
		AddReportEntry(fmt.Sprintf("%s: %d of %d reads failed while the previous release installed (before the upgrade)", f.ns, failed, failed+f.readers.OK.Load()),
			strings.Join(f.readers.FirstErrors(), "\n"))
	}
	f.readers = testfixtures.StartReaders(ctx, cluster.Client, f.group, f.ns, f.widgets, 2)
	DeferCleanup(f.readers.Halt)
}

func (f *upgradeFixture) install(ctx context.Context, g Gomega) *v1alpha1.WebhookInstall {
	whi := &v1alpha1.WebhookInstall{}
	g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "widgets"}, whi)).To(Succeed())
	return whi
}

// settledInstall: Succeeded on its generation, conversion verified through
// the API server, no rotation under way.
func (f *upgradeFixture) settledInstall(ctx context.Context, g Gomega) *v1alpha1.WebhookInstall {
	whi := f.install(ctx, g)
	g.Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), "%s: %s: %s", f.ns, whi.Status.Reason, whi.Status.Message)
	g.Expect(whi.Status.ObservedGeneration).To(Equal(whi.Generation), f.ns)
	verified := metav1.Condition{}
	for _, c := range whi.Status.Conditions {
		if c.Type == v1alpha1.TypeConversionVerified {
			verified = c
		}
	}
	g.Expect(verified.Status).To(Equal(metav1.ConditionTrue), "%s: ConversionVerified %s: %s", f.ns, verified.Reason, verified.Message)
	for _, rec := range whi.Status.Rotations {
		g.Expect(rec.Outcome).To(Equal(v1alpha1.RotationSucceeded), "%s: %+v", f.ns, rec)
	}
	g.Expect(whi.Status.Services).NotTo(BeEmpty(), f.ns)
	return whi
}

// secretState is what a Secret holds and its version: a certificate
// reissued, or any write, changes the resourceVersion.
type secretState struct {
	resourceVersion string
	data            map[string][]byte
	annotations     map[string]string
}

// installState is what an upgrade alone must leave as it is.
type installState struct {
	services          []v1alpha1.ServiceStatus
	rotations         []v1alpha1.RotationRecord
	handled           string
	secrets           map[string]secretState
	caBundle          []byte
	conversionService string
	crdVersion        string
	deployment        appsv1.Deployment
	serviceNames      []string
}

func (f *upgradeFixture) snapshot(ctx context.Context, g Gomega) installState {
	whi := f.settledInstall(ctx, g)
	s := installState{services: whi.Status.Services, rotations: whi.Status.Rotations, handled: whi.Status.HandledRotationRequest, secrets: map[string]secretState{}}
	var secrets corev1.SecretList
	g.Expect(cluster.Client.List(ctx, &secrets, client.InNamespace(f.ns))).To(Succeed())
	for _, sec := range secrets.Items {
		s.secrets[sec.Name] = secretState{resourceVersion: sec.ResourceVersion, data: sec.Data, annotations: sec.Annotations}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Name: f.crdName}, crd)).To(Succeed())
	g.Expect(crd.Spec.Conversion).NotTo(BeNil())
	g.Expect(crd.Spec.Conversion.Strategy).To(Equal(apiextensionsv1.WebhookConverter), f.crdName)
	cc := crd.Spec.Conversion.Webhook.ClientConfig
	s.caBundle, s.conversionService, s.crdVersion = cc.CABundle, cc.Service.Name, crd.ResourceVersion
	g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: f.deployment}, &s.deployment)).To(Succeed())
	var services corev1.ServiceList
	g.Expect(cluster.Client.List(ctx, &services, client.InNamespace(f.ns))).To(Succeed())
	for _, svc := range services.Items {
		s.serviceNames = append(s.serviceNames, svc.Name)
	}
	return s
}

// rotationLines prints rotation records one a line.
func rotationLines(records []v1alpha1.RotationRecord) string {
	var lines []string
	for _, r := range records {
		lines = append(lines, fmt.Sprintf("  %s %s %s %q %s new=%s %s", r.Started.UTC().Format(time.RFC3339), r.Service, r.Kind, r.Reason, r.Message, r.NewFingerprint, r.Outcome))
	}
	return strings.Join(lines, "\n")
}

// compare lists how after differs from before in what an upgrade must not
// change.
func (f *upgradeFixture) compare(before, after installState) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, f.ns+": "+fmt.Sprintf(format, args...)) }
	if !equality.Semantic.DeepEqual(before.services, after.services) {
		add("status.services changed:\nbefore %+v\nafter  %+v", before.services, after.services)
	}
	if len(after.rotations) != len(before.rotations) || !equality.Semantic.DeepEqual(before.rotations, after.rotations[:min(len(before.rotations), len(after.rotations))]) {
		add("status.rotations changed: the upgrade recorded rotations:\nbefore\n%s\nafter\n%s", rotationLines(before.rotations), rotationLines(after.rotations))
	}
	if before.handled != after.handled {
		add("status.handledRotationRequest %q -> %q", before.handled, after.handled)
	}
	for name, b := range before.secrets {
		a, ok := after.secrets[name]
		switch {
		case !ok:
			add("Secret %s deleted", name)
		case !equality.Semantic.DeepEqual(b.data, a.data):
			var keys []string
			for k := range b.data {
				if !bytes.Equal(b.data[k], a.data[k]) {
					keys = append(keys, k)
				}
			}
			add("Secret %s reissued: %v changed (resourceVersion %s -> %s)", name, keys, b.resourceVersion, a.resourceVersion)
		case b.resourceVersion != a.resourceVersion:
			add("Secret %s rewritten without a new certificate (resourceVersion %s -> %s); annotations before %v, after %v",
				name, b.resourceVersion, a.resourceVersion, b.annotations, a.annotations)
		}
	}
	for name := range after.secrets {
		if _, ok := before.secrets[name]; !ok {
			add("Secret %s created by the upgrade", name)
		}
	}
	if !bytes.Equal(before.caBundle, after.caBundle) {
		add("CRD %s: spec.conversion caBundle changed", f.crdName)
	}
	if before.conversionService != after.conversionService {
		add("CRD %s: conversion Service %s -> %s", f.crdName, before.conversionService, after.conversionService)
	}
	if !equality.Semantic.DeepEqual(before.serviceNames, after.serviceNames) {
		add("Services %v -> %v", before.serviceNames, after.serviceNames)
	}
	return problems
}

var _ = Describe("Upgrading Hookwright from the previous release", Ordered, func() {
	var (
		previous             string // hack/previous-release
		oldTree              string // its source, exported with git archive
		oldBinary, newBinary string
	)

	BeforeAll(func(ctx SpecContext) {
		previous = previousRelease()
		root, err := filepath.Abs(repoRoot)
		Expect(err).NotTo(HaveOccurred())
		_, _, err = run(ctx, nil, "git", "-C", root, "cat-file", "-e", previous+"^{commit}")
		Expect(err).NotTo(HaveOccurred(), "the previous release %s is not in this clone's history: fetch it (git fetch --unshallow)", previous)

		By("exporting the previous release's tree, " + previous[:7] + ", without touching this checkout")
		oldTree = GinkgoT().TempDir()
		archive := filepath.Join(GinkgoT().TempDir(), "previous.tar")
		_, _, err = run(ctx, nil, "git", "-C", root, "archive", "--format=tar", "-o", archive, previous)
		Expect(err).NotTo(HaveOccurred())
		_, _, err = run(ctx, nil, "tar", "-x", "-f", archive, "-C", oldTree)
		Expect(err).NotTo(HaveOccurred())

		bin := GinkgoT().TempDir()
		oldBinary, newBinary = filepath.Join(bin, "hookwright-previous"), filepath.Join(bin, "hookwright-current")
		goBuild(ctx, oldTree, oldBinary)
		goBuild(ctx, root, newBinary)
	}, NodeTimeout(25*time.Minute)) // two operator builds; mostly incremental with a warm Go build cache

	It("replaces the previous release's manager on the same Lease: installs stay Succeeded, no read fails, no certificate is reissued", func(ctx SpecContext) {
		start := time.Now()
		oldRendered, stderr, err := run(ctx, nil, kubectl, "kustomize", filepath.Join(oldTree, "config", "default"))
		Expect(err).NotTo(HaveOccurred(), "kubectl kustomize of the previous release's config/default: %s", stderr)
		oldObjs := decode(oldRendered)
		newRendered := kustomize(ctx, "config/default")
		newObjs := decode(newRendered)
		oldDep := into[appsv1.Deployment](find(oldObjs, "Deployment", managerName))
		newDep := into[appsv1.Deployment](find(newObjs, "Deployment", managerName))
		Expect(newDep.Namespace).To(Equal(oldDep.Namespace), "same namespace")
		Expect(newDep.Spec.Template.Spec.ServiceAccountName).To(Equal(oldDep.Spec.Template.Spec.ServiceAccountName), "same ServiceAccount")
		managerNS, managerSA := oldDep.Namespace, oldDep.Spec.Template.Spec.ServiceAccountName

		// Whatever happens, leave the suite's cluster with the current
		// release's CRDs, guard and RBAC (other specs expect them).
		DeferCleanup(func(ctx context.Context) {
			_, err := applyServerSide(ctx, newRendered, "--force-conflicts")
			Expect(err).NotTo(HaveOccurred())
		})

		By("installing the previous release as a cluster running it has it: its CRDs only, no admission guard, its RBAC")
		oldCRDs := map[string]bool{}
		var oldRest []string
		for _, o := range oldObjs {
			if o.GetKind() != "CustomResourceDefinition" {
				raw, err := o.MarshalJSON()
				Expect(err).NotTo(HaveOccurred())
				oldRest = append(oldRest, string(raw))
				continue
			}
			oldCRDs[o.GetName()] = true
			// A PUT replaces the whole CRD: nothing of the current
			// release's CRD (which the suite installed) survives.
			crd := into[apiextensionsv1.CustomResourceDefinition](o)
			live := &apiextensionsv1.CustomResourceDefinition{}
			err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(crd), live)
			if apierrors.IsNotFound(err) {
				Expect(cluster.Client.Create(ctx, crd)).To(Succeed())
			} else {
				Expect(err).NotTo(HaveOccurred())
				crd.ResourceVersion = live.ResourceVersion
				Expect(cluster.Client.Update(ctx, crd)).To(Succeed())
			}
			established(ctx, crd.Name)
		}
		Expect(oldCRDs).To(HaveKey("webhookinstalls.operators.hookwright.dev"))
		for _, o := range newObjs {
			if o.GetKind() == "CustomResourceDefinition" && !oldCRDs[o.GetName()] {
				fmt.Fprintf(GinkgoWriter, "the previous release has no CRD %s: deleting it\n", o.GetName())
				crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: o.GetName()}}
				Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, crd))).To(Succeed())
				Eventually(func() bool {
					return apierrors.IsNotFound(cluster.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd))
				}).WithTimeout(time.Minute).Should(BeTrue(), "CRD %s deleted", o.GetName())
			}
		}
		for _, obj := range []client.Object{
			&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: guard.Name}},
			&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: guard.Name}},
		} {
			Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, obj))).To(Succeed())
		}
		_, err = applyServerSide(ctx, strings.Join(oldRest, "\n"), "--force-conflicts")
		Expect(err).NotTo(HaveOccurred())

		By("starting the previous release's manager, as its Deployment runs it, with its ServiceAccount's token")
		fixtures := []*upgradeFixture{}
		// On a failure, leave no install behind for the next specs'
		// operators: CRDs first (see the end of this spec), then the
		// installs, their finalizers dropped (no operator may be left to
		// run them).
		DeferCleanup(func(ctx context.Context) {
			for _, f := range fixtures {
				_ = cluster.Client.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: f.crdName}})
				whi := &v1alpha1.WebhookInstall{}
				if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "widgets"}, whi); err != nil {
					continue
				}
				_ = cluster.Client.Delete(ctx, whi)
				patch := client.MergeFrom(whi.DeepCopy())
				whi.Finalizers = nil
				_ = client.IgnoreNotFound(cluster.Client.Patch(ctx, whi, patch))
			}
		})
		// Hookwright verifies conversions through the API server with its
		// own identity: grant it the widgets, as an author's bundle would.
		verifier := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "upgrade-widget-verifier-"}}
		Expect(cluster.Client.Create(ctx, verifier)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, verifier))).To(Succeed())
		})
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: verifier.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: verifier.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: managerSA, Namespace: managerNS}},
		}
		Expect(cluster.Client.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, binding))).To(Succeed())
		})

		kubeconfig := serviceAccountKubeconfig(ctx, managerNS, managerSA)
		old := startOperator("previous", oldBinary, oldDep, kubeconfig)
		Eventually(old.healthy).WithTimeout(time.Minute).Should(Succeed())
		Eventually(old.acquired).WithTimeout(time.Minute).Should(BeTrue(), "the previous release leads (a manager another spec left running would hold the Lease)")
		var oldHolder string
		Eventually(func(g Gomega) {
			oldHolder = leaseHolder(ctx, g, managerNS)
			g.Expect(oldHolder).NotTo(BeEmpty())
		}).Should(Succeed())

		By("installing three widget webhooks in three namespaces, one with a long deployment name (a hashed Service name), read continuously")
		deployments := []string{
			"widget-webhook",
			"widget-webhook",
			// 60 characters: its Service name (deployment + "-service")
			// is longer than 63 and is derived with a hash suffix. Derived
			// names are state the previous release left in the cluster
			// (Service, Secrets, the CRD's conversion), so the new release
			// must derive them the same way.
			"widget-conversion-webhook-deployment-with-a-rather-long-name",
		}
		for _, deployment := range deployments {
			nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "upgrade-"}}
			Expect(cluster.Client.Create(ctx, nsObj)).To(Succeed())
			f := &upgradeFixture{ns: nsObj.Name, group: nsObj.Name + ".hookwright.test", deployment: deployment}
			crd := testcluster.WidgetCRD(f.group, "", "", nil)
			f.crdName = crd.Name
			Expect(cluster.Client.Create(ctx, crd)).To(Succeed())
			DeferCleanup(func(ctx context.Context) {
				Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, crd))).To(Succeed())
			})
			established(ctx, crd.Name)
			verifier.Rules = append(verifier.Rules, rbacv1.PolicyRule{APIGroups: []string{f.group}, Resources: []string{"widgets"}, Verbs: []string{"list", "create"}})
			cluster.Kubelet.Serve(f.ns, deployment, testcluster.HandlerHost{Handler: &testcluster.WidgetConverter{}})
			DeferCleanup(func() { cluster.Kubelet.Forget(f.ns, deployment) })
			for i := range 3 {
				f.widgets = append(f.widgets, fmt.Sprintf("w%d", i))
				w := testfixtures.Widget(f.group, "v1", f.ns, f.widgets[i])
				Eventually(func() error { return cluster.Client.Create(ctx, w) }).Should(Succeed())
			}
			// Before a conversion is configured the API server converts by
			// rewriting apiVersion: every failure counted is Hookwright's,
			// the previous release's until readFromHere.
			f.readers = testfixtures.StartReaders(ctx, cluster.Client, f.group, f.ns, f.widgets, 2)
			DeferCleanup(f.readers.Halt)
			fixtures = append(fixtures, f)
		}
		Expect(cluster.Client.Update(ctx, verifier)).To(Succeed())
		for _, f := range fixtures {
			Expect(cluster.Client.Create(ctx, testfixtures.WidgetInstall(f.ns, "widgets", f.deployment, f.crdName))).To(Succeed())
		}
		for _, f := range fixtures {
			Eventually(func(g Gomega) { f.settledInstall(ctx, g) }).WithTimeout(2*time.Minute).Should(Succeed(), "the previous release installs %s", f.ns)
		}
		before := make([]installState, len(fixtures))
		for i, f := range fixtures {
			Eventually(func(g Gomega) { before[i] = f.snapshot(ctx, g) }).Should(Succeed())
			fmt.Fprintf(GinkgoWriter, "%s before the upgrade: services %+v, Secrets %d, rotations %d\n", f.ns, before[i].services, len(before[i].secrets), len(before[i].rotations))
		}
		for _, f := range fixtures {
			f.readFromHere(ctx)
		}

		By("applying the current release's config/default server-side, as the upgrade does before it replaces the manager: CRDs, admission guard, RBAC")
		_, err = applyServerSide(ctx, newRendered, "--force-conflicts")
		Expect(err).NotTo(HaveOccurred())
		for _, o := range newObjs {
			if o.GetKind() != "CustomResourceDefinition" {
				continue
			}
			established(ctx, o.GetName())
			live := &apiextensionsv1.CustomResourceDefinition{}
			Expect(cluster.Client.Get(ctx, client.ObjectKey{Name: o.GetName()}, live)).To(Succeed())
			want := into[apiextensionsv1.CustomResourceDefinition](o)
			Expect(live.Spec.Versions).To(HaveLen(len(want.Spec.Versions)))
			for i := range want.Spec.Versions {
				Expect(equality.Semantic.DeepEqual(live.Spec.Versions[i].Schema, want.Spec.Versions[i].Schema)).To(BeTrue(),
					"CRD %s %s: the live schema is the current release's", o.GetName(), want.Spec.Versions[i].Name)
			}
		}

		By("starting the current manager while the previous one leads: it waits for the Lease")
		// Plain-HTTP metrics, so the test can count the new manager's passes.
		current := startOperator("current", newBinary, newDep, kubeconfig, "--metrics-secure=false")
		Eventually(current.healthy).WithTimeout(time.Minute).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(old.running()).To(BeTrue())
			g.Expect(leaseHolder(ctx, g, managerNS)).To(Equal(oldHolder))
			g.Expect(current.acquired()).To(BeFalse(), "the current manager leads while the previous one holds the Lease")
		}, 6*time.Second, 250*time.Millisecond).Should(Succeed())

		By("stopping the previous manager as the Deployment's rollout does: SIGTERM releases the Lease, the current one takes over")
		old.terminate()
		Eventually(func(g Gomega) {
			g.Expect(current.acquired()).To(BeTrue())
			holder := leaseHolder(ctx, g, managerNS)
			g.Expect(holder).NotTo(BeEmpty())
			g.Expect(holder).NotTo(Equal(oldHolder))
		}).WithTimeout(time.Minute).Should(Succeed(), "the current manager takes the Lease")
		fmt.Fprintf(GinkgoWriter, "Lease %s/%s: %s -> %s\n", managerNS, leaseName, oldHolder, leaseHolder(ctx, Default, managerNS))

		By("letting the current manager reconcile every install: its start-up pass, then one more each (an annotation touched)")
		passes := func(g Gomega) float64 {
			return current.metricSum(g, "controller_runtime_reconcile_total", `controller="webhookinstall"`)
		}
		Eventually(func(g Gomega) {
			g.Expect(passes(g)).To(BeNumerically(">=", len(fixtures)))
			g.Expect(current.metricSum(g, "workqueue_depth", `name="webhookinstall"`)).To(BeZero())
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		touchedAt := passes(Default)
		for _, f := range fixtures {
			Eventually(func(g Gomega) {
				whi := f.install(ctx, g)
				patch := client.MergeFrom(whi.DeepCopy())
				metav1.SetMetaDataAnnotation(&whi.ObjectMeta, "upgrade.hookwright.test/touched", time.Now().Format(time.RFC3339Nano))
				g.Expect(cluster.Client.Patch(ctx, whi, patch)).To(Succeed())
			}).Should(Succeed())
		}
		Eventually(func(g Gomega) {
			g.Expect(passes(g)).To(BeNumerically(">=", touchedAt+float64(len(fixtures))))
			g.Expect(current.metricSum(g, "workqueue_depth", `name="webhookinstall"`)).To(BeZero())
		}).WithTimeout(2 * time.Minute).Should(Succeed())

		By("watching every install for 20 s under the current manager: Succeeded and verified throughout")
		Consistently(func(g Gomega) {
			g.Expect(current.running()).To(BeTrue())
			for _, f := range fixtures {
				f.settledInstall(ctx, g)
			}
		}, 20*time.Second, time.Second).Should(Succeed())
		fmt.Fprintf(GinkgoWriter, "current manager: %v reconcile passes, %v errors\n", passes(Default),
			current.metricSum(Default, "controller_runtime_reconcile_total", `controller="webhookinstall"`, `result="error"`))

		By("every webhook Service selects its own Deployment's pods only, once they all carry the label; the readers still read")
		for i, f := range fixtures {
			Eventually(func(g Gomega) {
				svc := &corev1.Service{}
				g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: before[i].conversionService}, svc)).To(Succeed())
				g.Expect(svc.Spec.Selector).To(HaveKeyWithValue(desired.LabelDeployment, f.deployment), "service %s/%s", f.ns, svc.Name)
			}).Should(Succeed())
		}

		By("comparing with what the previous release left: no Secret written, no rotation recorded, the same caBundle")
		var problems []string
		for i, f := range fixtures {
			var after installState
			Eventually(func(g Gomega) { after = f.snapshot(ctx, g) }).Should(Succeed())
			problems = append(problems, f.compare(before[i], after)...)
			// The current release builds the webhook's pod template
			// differently (e.g. the serving key's file mode and fsGroup), so
			// the upgrade may roll the webhook Deployment: a new pod that
			// mounts the same Secret, no new certificate. Reported, allowed.
			if !equality.Semantic.DeepEqual(before[i].deployment.Spec.Template, after.deployment.Spec.Template) {
				AddReportEntry(f.ns+": the upgrade rolled the webhook Deployment (same Secrets)", fmt.Sprintf("generation %d -> %d", before[i].deployment.Generation, after.deployment.Generation))
			}
			if before[i].crdVersion != after.crdVersion {
				AddReportEntry(f.ns+": the upgrade wrote CRD "+f.crdName+" (same caBundle and Service)", before[i].crdVersion+" -> "+after.crdVersion)
			}
		}
		for _, f := range fixtures {
			f.readers.Halt()
			ok, failed := f.readers.OK.Load(), f.readers.Failed.Load()
			fmt.Fprintf(GinkgoWriter, "%s: %d reads ok, %d failed\n", f.ns, ok, failed)
			if ok == 0 {
				problems = append(problems, f.ns+": no read succeeded")
			}
			if failed > 0 {
				problems = append(problems, fmt.Sprintf("%s: %d reads failed, first errors %v", f.ns, failed, f.readers.FirstErrors()))
			}
		}
		if len(problems) > 0 {
			// Fail, not Expect: Gomega would truncate the list.
			Fail("the upgrade alone changed what it must not:\n" + strings.Join(problems, "\n"))
		}
		Expect(strings.ToLower(current.output.String())).NotTo(ContainSubstring("forbidden"), "the current RBAC covers what the current manager does after an upgrade")

		By("deleting the widget CRDs, then the installs under the current manager, then stopping it")
		// An install keeps serving a CRD whose versions have different
		// schemas (conversion None would make it unreadable) until the CRD
		// is gone: the CRDs go first.
		for _, f := range fixtures {
			crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: f.crdName}}
			Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, crd))).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(cluster.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd))
			}).WithTimeout(time.Minute).Should(BeTrue(), "CRD %s deleted", f.crdName)
		}
		for _, f := range fixtures {
			Expect(cluster.Client.Delete(ctx, &v1alpha1.WebhookInstall{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "widgets"}})).To(Succeed())
		}
		for _, f := range fixtures {
			Eventually(func() bool {
				return apierrors.IsNotFound(cluster.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "widgets"}, &v1alpha1.WebhookInstall{}))
			}).WithTimeout(time.Minute).Should(BeTrue(), "%s: install deleted", f.ns)
		}
		current.terminate()
		fmt.Fprintf(GinkgoWriter, "upgrade spec took %s\n", time.Since(start).Round(time.Second))
	}, NodeTimeout(10*time.Minute))
})
