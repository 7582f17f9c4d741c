package manifests_test

import (
	"bytes"
	"crypto/tls"
	"debug/elf"
	"fmt"
	"go/version"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/examples/crontab"
	"github.com/hookwright/hookwright/internal/testcluster"
	"github.com/hookwright/hookwright/internal/testfixtures"
	"github.com/hookwright/hookwright/pkg/conversion"
)

// instruction is one Dockerfile line: its keyword and the rest.
type instruction struct{ keyword, args string }

// stage is one FROM of a Dockerfile and the instructions after it.
type stage struct {
	from         string
	instructions []instruction
}

// parseDockerfile reads a Dockerfile written without line continuations
// (checked), which is what ours is.
func parseDockerfile(text string) []stage {
	GinkgoHelper()
	var stages []stage
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		Expect(line).NotTo(HaveSuffix(`\`), "no line continuations, so this parser reads the Dockerfile as docker does")
		keyword, args, _ := strings.Cut(line, " ")
		keyword = strings.ToUpper(keyword)
		if keyword == "FROM" {
			stages = append(stages, stage{from: args})
			continue
		}
		Expect(stages).NotTo(BeEmpty(), "an instruction before FROM: %s", line)
		stages[len(stages)-1].instructions = append(stages[len(stages)-1].instructions, instruction{keyword, strings.TrimSpace(args)})
	}
	return stages
}

func (s stage) all(keyword string) []string {
	var out []string
	for _, in := range s.instructions {
		if in.keyword == keyword {
			out = append(out, in.args)
		}
	}
	return out
}

// shellWords splits a RUN line as sh would, for the quoting it uses.
func shellWords(line string) []string {
	GinkgoHelper()
	Expect(strings.ContainsAny(line, "$`\\;&|<>")).To(BeFalse(), "a plain command line (no expansions, escapes or operators): %s", line)
	var words []string
	var word strings.Builder
	inWord, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	Expect(quote).To(BeZero(), "unbalanced quotes: %s", line)
	if inWord {
		words = append(words, word.String())
	}
	return words
}

// dockerignored reports whether docker leaves rel (a slash path relative
// to the context) out of the build context: a pattern matches the path or
// one of its parent folders. Only the pattern forms our .dockerignore uses
// are supported (checked): no "!" exceptions, no "**".
func dockerignored(patterns []string, rel string) bool {
	parts := strings.Split(rel, "/")
	for i := range parts {
		prefix := strings.Join(parts[:i+1], "/")
		for _, p := range patterns {
			if ok, _ := filepath.Match(p, prefix); ok {
				return true
			}
		}
	}
	return false
}

// buildContext copies the repository as docker would send it.
func buildContext(dst string) {
	GinkgoHelper()
	var patterns []string
	for _, line := range strings.Split(readFile(".dockerignore"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		Expect(line).NotTo(Or(HavePrefix("!"), ContainSubstring("**")), ".dockerignore: this test supports plain patterns only")
		patterns = append(patterns, filepath.ToSlash(filepath.Clean(strings.TrimPrefix(line, "/"))))
	}
	root, err := filepath.Abs(repoRoot)
	Expect(err).NotTo(HaveOccurred())
	Expect(filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		if dockerignored(patterns, filepath.ToSlash(rel)) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			raw, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(target, raw, 0o644)
		}
		return nil
	})).To(Succeed())
}

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr() string {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// dockerBuild is the builder stage's go build line, as docker runs it for
// one target platform.
type dockerBuild struct {
	line  string   // as written, with ${TARGETOS} and ${TARGETARCH}
	env   []string // the VAR=value words before go
	words []string // go build ...
	out   int      // index of the -o path in words
}

// expandArgs substitutes the build ARGs the line uses, as docker does.
func expandArgs(line string, args map[string]string) string {
	GinkgoHelper()
	expanded := regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`).ReplaceAllStringFunc(line, func(ref string) string {
		name := ref[2 : len(ref)-1]
		value, ok := args[name]
		Expect(ok).To(BeTrue(), "the build line uses ${%s}, which the test does not set", name)
		return value
	})
	return expanded
}

func parseBuildLine(builder stage, targetOS, targetArch string) dockerBuild {
	GinkgoHelper()
	var line string
	for _, l := range builder.all("RUN") {
		if strings.Contains(l, "go build") {
			Expect(line).To(BeEmpty(), "one go build line")
			line = l
		}
	}
	Expect(line).NotTo(BeEmpty(), "the builder stage runs go build")
	Expect(builder.all("ARG")).To(ContainElements("TARGETOS", "TARGETARCH"), "the platform ARGs BuildKit sets")
	b := dockerBuild{line: line}
	words := shellWords(expandArgs(line, map[string]string{"TARGETOS": targetOS, "TARGETARCH": targetArch}))
	for len(words) > 0 && regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`).MatchString(words[0]) {
		b.env, words = append(b.env, words[0]), words[1:]
	}
	Expect(b.env).To(ContainElements("CGO_ENABLED=0", "GOOS="+targetOS, "GOARCH="+targetArch))
	Expect(words[:2]).To(Equal([]string{"go", "build"}))
	Expect(words).To(ContainElements("-trimpath", "-ldflags=-s -w"))
	b.out = -1
	for i, w := range words {
		if w == "-o" {
			b.out = i + 1
		}
	}
	Expect(b.out).To(BeNumerically(">", 0), "go build -o <path>")
	Expect(b.out).To(BeNumerically("<", len(words)))
	b.words = words
	return b
}

// run builds into binary from contextDir, as the builder stage does.
func (b dockerBuild) run(ctx SpecContext, contextDir, binary string) {
	GinkgoHelper()
	words := append([]string(nil), b.words...)
	words[b.out] = binary
	build := exec.CommandContext(ctx, words[0], words[1:]...)
	build.Dir = contextDir // the builder's WORKDIR holds the context
	build.Env = append(os.Environ(), b.env...)
	build.Stdout, build.Stderr = GinkgoWriter, GinkgoWriter
	start := time.Now()
	Expect(build.Run()).To(Succeed(), "building as the Dockerfile does: %s", b.line)
	fmt.Fprintf(GinkgoWriter, "built %s (%s) in %s\n", binary, strings.Join(b.env, " "), time.Since(start).Round(time.Second))
}

// expectStatic checks an ELF binary for the machine, with no dynamic
// loader (distroless/static has none).
func expectStatic(binary string, machine elf.Machine) *elf.File {
	GinkgoHelper()
	f, err := elf.Open(binary)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(f.Close)
	Expect(f.Machine).To(Equal(machine))
	for _, p := range f.Progs {
		Expect(p.Type).NotTo(Equal(elf.PT_INTERP), "static: distroless/static has no dynamic loader")
	}
	return f
}

var _ = Describe("The operator image", Ordered, func() {
	var (
		dockerfile []stage
		build      dockerBuild
		binary     string // built as the Dockerfile's builder stage builds it, for amd64
		contextDir string
	)

	BeforeAll(func(ctx SpecContext) {
		dockerfile = parseDockerfile(readFile("Dockerfile"))
		Expect(dockerfile).To(HaveLen(2), "a builder stage and the final stage")
		build = parseBuildLine(dockerfile[0], "linux", "amd64")
		Expect(dockerfile[1].all("COPY")).To(ContainElement("--from=builder "+build.words[build.out]+" /hookwright"), "the final stage copies what the builder built")

		contextDir = GinkgoT().TempDir()
		buildContext(contextDir)
		binary = filepath.Join(GinkgoT().TempDir(), "hookwright")
		build.run(ctx, contextDir, binary)
	}, NodeTimeout(25*time.Minute)) // -trimpath, CGO_ENABLED=0: every dependency rebuilt, slow on a loaded machine

	It("cross-compiles the same build line for arm64", func(ctx SpecContext) {
		arm := parseBuildLine(dockerfile[0], "linux", "arm64")
		armBinary := filepath.Join(GinkgoT().TempDir(), "hookwright-arm64")
		arm.run(ctx, contextDir, armBinary)
		f := expectStatic(armBinary, elf.EM_AARCH64)
		Expect(f.Section(".symtab")).To(BeNil(), "-s strips the symbol table")
	}, NodeTimeout(25*time.Minute))

	It("pins base images by digest, builds on the build platform, labels the version, and runs nonroot on distroless without a shell", func() {
		builder := regexp.MustCompile(`^--platform=\$BUILDPLATFORM golang:(\d+\.\d+\.\d+)-bookworm@sha256:[0-9a-f]{64} AS builder$`).FindStringSubmatch(dockerfile[0].from)
		Expect(builder).NotTo(BeNil(), "FROM --platform=$BUILDPLATFORM golang:<x.y.z>-bookworm@sha256:<digest> AS builder: %s", dockerfile[0].from)
		goDirective := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(readFile("go.mod"))
		Expect(goDirective).NotTo(BeNil())
		Expect(version.Compare("go"+builder[1], "go"+goDirective[1])).To(BeNumerically(">=", 0), "the builder's Go %s is older than go.mod's %s", builder[1], goDirective[1])

		final := dockerfile[1]
		Expect(final.from).To(MatchRegexp(`^gcr\.io/distroless/static-debian12:nonroot@sha256:[0-9a-f]{64}$`))
		Expect(final.all("ARG")).To(ContainElements(HavePrefix("VERSION="), HavePrefix("REVISION=")))
		labels := strings.Join(final.all("LABEL"), " ")
		Expect(labels).To(ContainSubstring(`org.opencontainers.image.version="${VERSION}"`))
		Expect(labels).To(ContainSubstring(`org.opencontainers.image.revision="${REVISION}"`))
		Expect(final.all("USER")).To(Equal([]string{"65532:65532"}))
		Expect(final.all("ENTRYPOINT")).To(Equal([]string{`["/hookwright"]`}), "exec form: there is no shell")
		Expect(final.all("RUN")).To(BeEmpty(), "there is no shell to RUN in")
		Expect(final.all("SHELL")).To(BeEmpty())
	})

	It("builds a static, stripped binary without build paths", func() {
		f := expectStatic(binary, elf.EM_X86_64)
		Expect(f.Section(".symtab")).To(BeNil(), "-s strips the symbol table")
		Expect(f.Section(".debug_info")).To(BeNil(), "-w drops DWARF")
		raw, err := os.ReadFile(binary)
		Expect(err).NotTo(HaveOccurred())
		Expect(bytes.Contains(raw, []byte(contextDir))).To(BeFalse(), "-trimpath keeps the build folder out of the binary")
	})

	It("answers --help with exit code 0 and lists --leader-elect", func(ctx SpecContext) {
		out, err := exec.CommandContext(ctx, binary, "--help").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		Expect(string(out)).To(ContainSubstring("-leader-elect"))
		Expect(string(out)).To(ContainSubstring("-health-probe-bind-address"))
		Expect(string(out)).To(ContainSubstring("-metrics-bind-address"))
		Expect(string(out)).To(MatchRegexp(`-pprof-bind-address string\s+[^\n]*\(default "0"\)`), "profiles are off unless asked for")
	})

	It("runs with the shipped arguments as the shipped ServiceAccount, leads, probes and installs the sample", func(ctx SpecContext) {
		rendered := kustomize(ctx, "config/default")
		_, err := applyServerSide(ctx, rendered)
		Expect(err).NotTo(HaveOccurred())
		dep := into[appsv1.Deployment](find(decode(rendered), "Deployment", managerName))
		container := dep.Spec.Template.Spec.Containers[0]

		By("authenticating with a token of the manager's ServiceAccount, as in its pod")
		token, _, err := run(ctx, nil, kubectl, "--kubeconfig", cluster.KubeconfigPath, "create", "token", dep.Spec.Template.Spec.ServiceAccountName, "--namespace", namespace, "--duration=1h")
		Expect(err).NotTo(HaveOccurred())
		kubeconfig := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		Expect(clientcmd.WriteToFile(clientcmdapi.Config{
			Clusters:       map[string]*clientcmdapi.Cluster{"test": {Server: cluster.Config.Host, CertificateAuthorityData: cluster.Config.CAData}},
			AuthInfos:      map[string]*clientcmdapi.AuthInfo{"manager": {Token: strings.TrimSpace(token)}},
			Contexts:       map[string]*clientcmdapi.Context{"manager": {Cluster: "test", AuthInfo: "manager"}},
			CurrentContext: "manager",
		}, kubeconfig)).To(Succeed())

		By("running the binary with the Deployment's arguments (addresses moved to free loopback ports)")
		healthAddr, metricsAddr := freeAddr(), freeAddr()
		var args []string
		for _, a := range container.Args {
			switch {
			case strings.HasPrefix(a, "--health-probe-bind-address="):
				a = "--health-probe-bind-address=" + healthAddr
			case strings.HasPrefix(a, "--metrics-bind-address="):
				a = "--metrics-bind-address=" + metricsAddr
			}
			args = append(args, a)
		}
		// In a pod the namespace comes from the mounted token's folder.
		args = append(args, "--leader-election-namespace="+namespace)
		output := &testfixtures.SyncBuffer{}
		cmd := exec.Command(binary, args...)
		// The Deployment's downward-API environment.
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "POD_NAMESPACE="+namespace, "POD_SERVICE_ACCOUNT="+dep.Spec.Template.Spec.ServiceAccountName)
		cmd.Stdout = io.MultiWriter(output, GinkgoWriter)
		cmd.Stderr = cmd.Stdout
		Expect(cmd.Start()).To(Succeed())
		// exited is closed when the process has ended, waitErr set before:
		// both the test and the cleanup may wait on it.
		exited := make(chan struct{})
		var waitErr error
		go func() { waitErr = cmd.Wait(); close(exited) }()
		DeferCleanup(func() {
			select {
			case <-exited:
			default:
				_ = cmd.Process.Kill()
				<-exited
			}
		})

		for _, probe := range []*corev1.Probe{container.LivenessProbe, container.ReadinessProbe} {
			url := "http://" + healthAddr + probe.HTTPGet.Path
			Eventually(func(g Gomega) {
				resp, err := http.Get(url)
				g.Expect(err).NotTo(HaveOccurred())
				_ = resp.Body.Close()
				g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
			}).Should(Succeed(), url)
		}
		By("serving metrics over HTTPS to scrapers the API server authenticates and authorizes")
		scrape := func(g Gomega, token string) int {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+metricsAddr+"/metrics", nil)
			g.Expect(err).NotTo(HaveOccurred())
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			// A self-signed certificate: who may read is under test here.
			insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec
			resp, err := insecure.Do(req)
			g.Expect(err).NotTo(HaveOccurred())
			_ = resp.Body.Close()
			return resp.StatusCode
		}
		Eventually(func(g Gomega) { g.Expect(scrape(g, "")).To(Equal(http.StatusUnauthorized)) }).Should(Succeed())
		_, _, err = run(ctx, nil, kubectl, "--kubeconfig", cluster.KubeconfigPath, "create", "serviceaccount", "prometheus", "--namespace", namespace)
		Expect(err).NotTo(HaveOccurred())
		_, _, err = run(ctx, nil, kubectl, "--kubeconfig", cluster.KubeconfigPath, "create", "clusterrolebinding", "prometheus-hookwright-metrics",
			"--clusterrole=hookwright-metrics-reader", "--serviceaccount="+namespace+":prometheus")
		Expect(err).NotTo(HaveOccurred())
		scraper, _, err := run(ctx, nil, kubectl, "--kubeconfig", cluster.KubeconfigPath, "create", "token", "prometheus", "--namespace", namespace, "--duration=1h")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) { g.Expect(scrape(g, strings.TrimSpace(scraper))).To(Equal(http.StatusOK)) }).Should(Succeed())

		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "hookwright.operators.hookwright.dev"}}
		Eventually(func(g Gomega) {
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(lease), lease)).To(Succeed())
			g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
			g.Expect(*lease.Spec.HolderIdentity).NotTo(BeEmpty())
		}).Should(Succeed(), "the manager takes the leader-election Lease in its namespace")

		By("installing the sample's CronTab conversion webhook")
		_, err = applyServerSide(ctx, readFile("examples/crontab/crd.yaml"))
		Expect(err).NotTo(HaveOccurred())
		const sampleNS = "crontab-system"
		err = cluster.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sampleNS}})
		Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
		cluster.Kubelet.Serve(sampleNS, "crontab-webhook", testcluster.HandlerHost{Handler: conversion.NewWebhook(crontab.Converter())})
		_, err = applyServerSide(ctx, kustomize(ctx, "config/samples"), "--namespace="+sampleNS)
		Expect(err).NotTo(HaveOccurred())
		verified := func(g Gomega) metav1.Condition {
			whi := &v1alpha1.WebhookInstall{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: sampleNS, Name: "crontab"}, whi)).To(Succeed())
			g.Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), "%s: %s", whi.Status.Reason, whi.Status.Message)
			for _, c := range whi.Status.Conditions {
				if c.Type == v1alpha1.TypeConversionVerified {
					return c
				}
			}
			return metav1.Condition{}
		}
		By("without a grant to read CronTabs, the conversion serves but is reported unverified, saying what to grant")
		Eventually(func(g Gomega) {
			c := verified(g)
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonVerificationForbidden))
			g.Expect(c.Status).To(Equal(metav1.ConditionUnknown))
			g.Expect(c.Message).To(ContainSubstring("Grant its ServiceAccount the verbs list and create on crontabs.stable.example.com"))
		}).WithTimeout(90 * time.Second).Should(Succeed())
		By("with the example's verifier ClusterRole, Hookwright verifies through the API server")
		_, err = applyServerSide(ctx, readFile("examples/crontab/verifier-rbac.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			g.Expect(verified(g).Status).To(Equal(metav1.ConditionTrue))
		}).WithTimeout(60 * time.Second).Should(Succeed())

		By("stopping it as kubelet does: SIGTERM, then a clean exit that releases the Lease")
		Expect(cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
		Eventually(exited).WithTimeout(time.Duration(*dep.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second).Should(BeClosed())
		Expect(waitErr).NotTo(HaveOccurred(), "a clean exit on SIGTERM")
		Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(lease), lease)).To(Succeed())
		Expect(lease.Spec.HolderIdentity).To(Or(BeNil(), HaveValue(BeEmpty())))

		Expect(strings.ToLower(output.String())).NotTo(ContainSubstring("forbidden"), "the shipped RBAC covers everything the manager does")
	}, NodeTimeout(3*time.Minute))
})
