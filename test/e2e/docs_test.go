package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/internal/testcluster"
	"github.com/hookwright/hookwright/internal/testfixtures"
)

// The rule: every command in the docs is exercised by a test or by the
// demo. Shell commands are written in the docs only in ```sh blocks; this
// file runs each of them against this suite's cluster (Hookwright running,
// the CronTab example installed), or finds it in exercisedElsewhere.

// exercisedElsewhere lists the doc commands that cannot run against this
// suite's cluster, each with what exercises it. Keep it small: a command
// that can run here belongs in the docs as a runnable command instead.
var exercisedElsewhere = map[string]string{
	// Starts its own control plane and waits for Ctrl-C.
	"make demo": "test/e2e/demo_test.go runs cmd/demo, what `make demo` runs, with --exit",
	// The whole test run, this suite included.
	"make test": "CI",
	// Open-ended by design, and its instrumented build takes minutes: a
	// wall-clock budget a loaded machine would miss. Not run here.
	"make fuzz FUZZTIME=30s": "the docs' `go test ./examples/crontab ... -run '...|FuzzRoundTrip|...'` line, run here and by `make test`, runs FuzzRoundTrip's seed corpus; \"name only make targets that the Makefile defines\" checks that `make fuzz` fuzzes that function",
	// Would install a second, never-running manager into this cluster.
	"kubectl apply --server-side -k config/default": "test/manifests/config_test.go applies the same `kubectl kustomize config/default` rendering server-side to a real API server",
	// Release targets: a container engine and a registry (none on the test
	// machine), or rewriting the committed bundle/.
	"make docker-buildx IMG=registry.example.com/hookwright:v0.2.0 PLATFORMS=linux/amd64,linux/arm64": "test/manifests/image_test.go runs the Dockerfile's go build line for linux/amd64 and linux/arm64 and checks the binaries; the image build itself needs a container engine",
	"make bundle IMG=registry.example.com/hookwright:v0.2.0 VERSION=0.2.0":                            "test/manifests/release_test.go runs this very command in a copy of the repository and checks the image everywhere, then validates the bundle",
	"make bundle-build bundle-push BUNDLE_IMG=registry.example.com/hookwright-bundle:v0.2.0":          "needs a container engine and a registry; test/manifests/bundle_test.go checks bundle.Dockerfile against the bundle's annotations",
	"make catalog-build catalog-image catalog-push BUNDLE_IMG=... CATALOG_IMG=...":                    "test/manifests/release_test.go runs make catalog-build and opm validate on its output; catalog-image and catalog-push need a container engine and a registry",
	// Installs controller-gen from the network and rewrites bundle/.
	"make bundle VERSION=0.1.0": "`make test` runs `make verify`, which runs `make bundle` at the default VERSION 0.1.0 and fails if bundle/ changes; test/manifests/bundle_test.go validates the bundle",
	// Needs a webhook serving at localhost:9443 and its ca.crt.
	"hookwright verify --crd examples/crontab/crd.yaml --samples examples/crontab/samples --webhook https://localhost:9443/convert --ca-file ca.crt": "pkg/conversion/verify/verify_test.go (TestBuiltHookwrightVerify) builds hookwright and runs this command against a TLS webhook, with --ca-file: the valid samples pass, a webhook that drops or changes a field fails naming it",
}

// docCommand is one command line of a ```sh block.
type docCommand struct {
	file string // relative to the repository root
	line int
	text string
}

func (c docCommand) String() string { return fmt.Sprintf("%s:%d: %s", c.file, c.line, c.text) }

var _ = Describe("The docs", SpecPriority(-1), func() {
	// SpecPriority(-1): after the CronTab example's own specs, which create
	// the example install; this spec then uses it as the docs do.

	It("run every command of their ```sh blocks against the example install, or name the test that runs it", func(ctx SpecContext) {
		root := repoRoot()
		commands := docCommands(root)
		Expect(commands).NotTo(BeEmpty())

		used := map[string]bool{}
		var runnable []docCommand
		for _, c := range commands {
			if _, ok := exercisedElsewhere[normalize(c.text)]; ok {
				used[normalize(c.text)] = true
				fmt.Fprintf(GinkgoWriter, "exercised elsewhere (%s): %s\n", exercisedElsewhere[normalize(c.text)], c)
				continue
			}
			runnable = append(runnable, c)
		}
		for command := range exercisedElsewhere {
			Expect(used).To(HaveKey(command), "exercisedElsewhere lists %q, which no doc has any more: remove it", command)
		}

		ensureCronTabExample(ctx)
		binDir := GinkgoT().TempDir()
		build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(binDir, "hookwright"), ".")
		build.Dir = root
		build.Stdout, build.Stderr = GinkgoWriter, GinkgoWriter
		Expect(build.Run()).To(Succeed(), "building hookwright")
		kubectlDir, err := testcluster.BinaryDir()
		Expect(err).NotTo(HaveOccurred())
		env := commandEnv(cluster.KubeconfigPath, binDir, kubectlDir)

		var failures []string
		for _, c := range runnable {
			// Said before it runs: if the spec times out, the last line
			// names the command that was running.
			fmt.Fprintf(GinkgoWriter, "$ %s\n", c)
			out, err := runDocCommand(ctx, root, env, c.text)
			fmt.Fprint(GinkgoWriter, out)
			if err != nil {
				failures = append(failures, fmt.Sprintf("%s\n  %v\n%s", c, err, indent(out)))
			}
		}
		Expect(failures).To(BeEmpty(), "doc commands failed:\n%s", strings.Join(failures, "\n"))
	}, SpecTimeout(30*time.Minute))

	It("write shell commands only in ```sh blocks", func() {
		root := repoRoot()
		other := regexp.MustCompile("^\\s*```(bash|shell|console|zsh|shell-session|sh-session)\\s*$")
		for _, file := range docFiles(root) {
			forEachLine(filepath.Join(root, file), func(n int, line string) {
				Expect(other.MatchString(line)).To(BeFalse(), "%s:%d: write shell commands in a ```sh block, which docs_test.go runs", file, n)
			})
		}
	})

	It("name only make targets that the Makefile defines, and `make fuzz` fuzzes a fuzz test that exists", func() {
		root := repoRoot()
		recipes := makeRecipes(filepath.Join(root, "Makefile"))
		for _, c := range docCommands(root) {
			words := strings.Fields(c.text)
			if words[0] != "make" {
				continue
			}
			for _, w := range words[1:] {
				if !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") {
					Expect(recipes).To(HaveKey(w), "%s: the Makefile has no target %q", c, w)
				}
			}
		}

		// `make fuzz` is not run (see exercisedElsewhere): check instead
		// that it runs `go test <package> -fuzz <pattern>` on a Fuzz
		// function of that package, whose seeds the docs' go test runs.
		Expect(recipes).To(HaveKey("fuzz"))
		fuzzLine := regexp.MustCompile(`go test (\./\S+) .*-fuzz '\^(Fuzz\w+)\$\$'`).FindStringSubmatch(recipes["fuzz"])
		Expect(fuzzLine).NotTo(BeNil(), "make fuzz: want go test ./<package> ... -fuzz '^FuzzName$$', got:\n%s", recipes["fuzz"])
		pkg, fuzz := fuzzLine[1], fuzzLine[2]
		tests, err := filepath.Glob(filepath.Join(root, pkg, "*_test.go"))
		Expect(err).NotTo(HaveOccurred())
		var source strings.Builder
		for _, t := range tests {
			raw, err := os.ReadFile(t)
			Expect(err).NotTo(HaveOccurred())
			source.Write(raw)
		}
		Expect(source.String()).To(MatchRegexp(`(?m)^func `+fuzz+`\(\w+ \*testing\.F\)`), "make fuzz fuzzes %s, which %s does not define", fuzz, pkg)
		seeded := false
		for _, c := range docCommands(root) {
			seeded = seeded || (strings.HasPrefix(c.text, "go test "+pkg+" ") && strings.Contains(c.text, fuzz) && !strings.Contains(c.text, "-fuzz"))
		}
		Expect(seeded).To(BeTrue(), "no doc command runs %s's seed corpus as a plain test (go test %s -run '...%s...')", fuzz, pkg, fuzz)
	})

	It("list every condition type and reason of api/v1alpha1/conditions.go in the admin guide's tables", func() {
		root := repoRoot()
		rows := map[string]bool{}
		forEachLine(filepath.Join(root, "docs", "admin-guide.md"), func(_ int, line string) {
			if strings.HasPrefix(line, "|") {
				cells := strings.Split(line, "|")
				if len(cells) > 1 {
					rows[strings.Trim(strings.TrimSpace(cells[1]), "`")] = true
				}
			}
		})
		constants := conditionConstants(filepath.Join(root, "api", "v1alpha1", "conditions.go"))
		Expect(constants).NotTo(BeEmpty())
		var missing []string
		for name, value := range constants {
			if !rows[value] {
				missing = append(missing, fmt.Sprintf("%s (%q)", name, value))
			}
		}
		sort.Strings(missing)
		Expect(missing).To(BeEmpty(), "docs/admin-guide.md has no table row for these constants of api/v1alpha1/conditions.go: add what each means and what to do")
	})

	It("name only metrics and annotations that the code defines", func() {
		root := repoRoot()
		code := goSource(root, "api", "controllers", "pkg", "cmd", "main.go")
		metric := regexp.MustCompile(`\bhookwright_[a-z_]+[a-z]`)
		annotation := regexp.MustCompile(`\boperators\.hookwright\.dev/[a-z][a-z-]*[a-z]`)
		for _, file := range docFiles(root) {
			forEachLine(filepath.Join(root, file), func(n int, line string) {
				for _, m := range metric.FindAllString(line, -1) {
					name := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_count"), "_sum")
					Expect(code).To(ContainSubstring(strconv.Quote(name)), "%s:%d: metric %s is not defined in the code", file, n, m)
				}
				for _, a := range annotation.FindAllString(line, -1) {
					Expect(code).To(ContainSubstring(strconv.Quote(a)), "%s:%d: annotation %s is not defined in the code", file, n, a)
				}
			})
		}
	})
})

// ensureCronTabExample makes sure the CronTab example is installed and
// healthy, as crontab_test.go installs it. That spec runs first in a full
// run; with -ginkgo.focus=docs this one installs it.
func ensureCronTabExample(ctx context.Context) {
	GinkgoHelper()
	whi := &v1alpha1.WebhookInstall{}
	readManifest("examples/crontab/webhookinstall.yaml", whi)
	err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(whi), &v1alpha1.WebhookInstall{})
	if apierrors.IsNotFound(err) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		readManifest("examples/crontab/crd.yaml", crd)
		Expect(client.IgnoreAlreadyExists(cluster.Client.Create(ctx, crd))).To(Succeed())
		Expect(client.IgnoreAlreadyExists(cluster.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: whi.Namespace}}))).To(Succeed())
		cluster.Kubelet.Serve(whi.Namespace, "crontab-webhook", testcluster.BinaryHost{
			Path:        crontabWebhook,
			Args:        testfixtures.CronTabWebhookArgs,
			GracePeriod: 5 * time.Second,
		})
		Expect(cluster.Client.Create(ctx, whi)).To(Succeed())
	} else {
		Expect(err).NotTo(HaveOccurred())
	}
	// crontab_test.go leaves a CronTab that cannot be converted, on purpose
	// (a LIST fails naming it). The docs describe a healthy install.
	Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, cronTab("v1", "broken-schedule", nil)))).To(Succeed())
	Eventually(func(g Gomega) {
		got := &v1alpha1.WebhookInstall{}
		g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(whi), got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), "%s: %s", got.Status.Reason, got.Status.Message)
	}).WithContext(ctx).Should(Succeed())
}

func repoRoot() string {
	GinkgoHelper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	Expect(err).NotTo(HaveOccurred())
	return root
}

// docFiles are README.md and docs/*.md, relative to root.
func docFiles(root string) []string {
	GinkgoHelper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	Expect(err).NotTo(HaveOccurred())
	sort.Strings(files)
	out := []string{"README.md"}
	for _, f := range files {
		rel, err := filepath.Rel(root, f)
		Expect(err).NotTo(HaveOccurred())
		out = append(out, rel)
	}
	return out
}

// docCommands parses every ```sh block: one command per line, a trailing
// "# comment" stripped, blank and comment lines skipped, a line ending in
// a backslash joined with the next.
func docCommands(root string) []docCommand {
	GinkgoHelper()
	var commands []docCommand
	for _, file := range docFiles(root) {
		inBlock := false
		var pending *docCommand
		forEachLine(filepath.Join(root, file), func(n int, line string) {
			trimmed := strings.TrimSpace(line)
			switch {
			case !inBlock:
				inBlock = trimmed == "```sh"
				return
			case trimmed == "```":
				Expect(pending).To(BeNil(), "%s:%d: the block ends inside a continued command", file, n)
				inBlock = false
				return
			}
			text := stripComment(trimmed)
			if pending != nil {
				pending.text += " " + strings.TrimSuffix(text, `\`)
			} else if text != "" {
				pending = &docCommand{file: file, line: n, text: strings.TrimSuffix(text, `\`)}
			}
			if pending != nil && !strings.HasSuffix(text, `\`) {
				pending.text = strings.TrimSpace(pending.text)
				commands = append(commands, *pending)
				pending = nil
			}
		})
		Expect(inBlock).To(BeFalse(), "%s: a ```sh block is not closed", file)
	}
	return commands
}

// stripComment drops a trailing "# comment": a # at the start or after a
// blank, outside quotes.
func stripComment(line string) string {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote == '"' && c == '\\':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return strings.TrimSpace(line[:i])
		}
	}
	return strings.TrimSpace(line)
}

// makeRecipes maps each target of a Makefile to its recipe lines.
func makeRecipes(path string) map[string]string {
	GinkgoHelper()
	rule := regexp.MustCompile(`^([a-z][a-z0-9-]*):`)
	recipes := map[string]string{}
	target := ""
	forEachLine(path, func(_ int, line string) {
		switch m := rule.FindStringSubmatch(line); {
		case m != nil:
			target = m[1]
			recipes[target] += ""
		case strings.HasPrefix(line, "\t") && target != "":
			recipes[target] += strings.TrimPrefix(line, "\t") + "\n"
		default:
			target = ""
		}
	})
	return recipes
}

func normalize(command string) string { return strings.Join(strings.Fields(command), " ") }

func forEachLine(path string, fn func(n int, line string)) {
	GinkgoHelper()
	f, err := os.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; scanner.Scan(); n++ {
		fn(n, scanner.Text())
	}
	Expect(scanner.Err()).NotTo(HaveOccurred())
}

// commandEnv is the environment a reader has after installing: kubectl and
// hookwright first on PATH, KUBECONFIG pointing at the cluster.
func commandEnv(kubeconfig string, dirs ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	path := strings.Join(append(dirs, os.Getenv("PATH")), string(os.PathListSeparator))
	return append(env, "KUBECONFIG="+kubeconfig, "PATH="+path)
}

// runDocCommand runs one command with no deadline of its own: the spec's
// SpecTimeout bounds them all. Commands such as `go run` and `go test`
// compile first, which on a loaded machine can take minutes; a
// per-command limit would measure the machine, not the docs.
func runDocCommand(ctx context.Context, dir string, env []string, command string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", command)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (no output)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// conditionConstants maps each Type* and Reason* constant of conditions.go
// to its string value.
func conditionConstants(path string) map[string]string {
	GinkgoHelper()
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	Expect(err).NotTo(HaveOccurred())
	constants := map[string]string{}
	for _, decl := range file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Type") && !strings.HasPrefix(name.Name, "Reason") {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				Expect(ok).To(BeTrue(), "%s is not a string literal", name.Name)
				value, err := strconv.Unquote(lit.Value)
				Expect(err).NotTo(HaveOccurred())
				constants[name.Name] = value
			}
		}
	}
	return constants
}

// goSource concatenates the non-test Go files under the given paths.
func goSource(root string, paths ...string) string {
	GinkgoHelper()
	var all strings.Builder
	for _, p := range paths {
		err := filepath.WalkDir(filepath.Join(root, p), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			raw, err := os.ReadFile(path)
			all.Write(raw)
			return err
		})
		Expect(err).NotTo(HaveOccurred())
	}
	return all.String()
}
