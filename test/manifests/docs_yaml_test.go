package manifests_test

import (
	"bufio"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// yamlBlock is one ```yaml block of a Markdown file.
type yamlBlock struct {
	file string // relative to the repository root
	line int    // of the opening fence
	text string
	// notApplied is the reason given in a `<!-- not applied: reason -->`
	// comment on the line before the block: a fragment or a file of
	// another tool that is no Kubernetes object to dry-run.
	notApplied string
}

func (b yamlBlock) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

var notAppliedComment = regexp.MustCompile(`^<!-- not applied: (.+) -->$`)

// docFiles are the Markdown files users read.
func docFiles() []string {
	GinkgoHelper()
	files := []string{"README.md"}
	for _, pattern := range []string{"docs/*.md", "examples/*/*.md", "config/*/*.md"} {
		matches, err := filepath.Glob(filepath.Join(repoRoot, pattern))
		Expect(err).NotTo(HaveOccurred())
		for _, m := range matches {
			rel, err := filepath.Rel(repoRoot, m)
			Expect(err).NotTo(HaveOccurred())
			files = append(files, rel)
		}
	}
	return files
}

func yamlBlocks(file string) []yamlBlock {
	GinkgoHelper()
	var blocks []yamlBlock
	sc := bufio.NewScanner(strings.NewReader(readFile(file)))
	var cur *yamlBlock
	previous := ""
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && trimmed == "```yaml":
			cur = &yamlBlock{file: file, line: n}
			if m := notAppliedComment.FindStringSubmatch(previous); m != nil {
				cur.notApplied = m[1]
			}
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
		if trimmed != "" {
			previous = trimmed
		}
	}
	Expect(cur).To(BeNil(), "%s: a ```yaml block is not closed", file)
	return blocks
}

// fixtureCRD is a CRD of another project, installed so that its objects in
// the docs can be dry-run: only its kind is known, its schema left open.
func fixtureCRD(group, version, kind, plural string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group,
			"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
			"scope": "Namespaced",
			"versions": []any{map[string]any{
				"name": version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}}
}

var _ = Describe("The docs' YAML", func() {
	It("parses, and every Kubernetes object in it is accepted by a server-side dry run (or the block says why it is not applied)", func(ctx SpecContext) {
		By("installing the CRDs of other projects the docs show objects of, and the example's CRD")
		for _, crd := range []*unstructured.Unstructured{
			fixtureCRD("argoproj.io", "v1alpha1", "Application", "applications"),
			fixtureCRD("helm.toolkit.fluxcd.io", "v2", "HelmRelease", "helmreleases"),
			fixtureCRD("kustomize.toolkit.fluxcd.io", "v1", "Kustomization", "kustomizations"),
			fixtureCRD("monitoring.coreos.com", "v1", "PrometheusRule", "prometheusrules"),
			fixtureCRD("monitoring.coreos.com", "v1", "ServiceMonitor", "servicemonitors"),
		} {
			Expect(client.IgnoreAlreadyExists(k8sClient().Create(ctx, crd))).To(Succeed())
		}
		raw, err := yaml.Marshal(readYAMLFile("examples/crontab/crd.yaml"))
		Expect(err).NotTo(HaveOccurred())
		_, err = applyServerSide(ctx, string(raw))
		Expect(err).NotTo(HaveOccurred())

		var checked, skipped int
		var failures []string
		for _, file := range docFiles() {
			for _, block := range yamlBlocks(file) {
				docs := strings.Split(block.text, "\n---\n")
				var objects []map[string]any
				for _, doc := range docs {
					var obj map[string]any
					if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
						failures = append(failures, fmt.Sprintf("%s: not valid YAML: %v", block, err))
						continue
					}
					if obj != nil {
						objects = append(objects, obj)
					}
				}
				if block.notApplied != "" {
					fmt.Fprintf(GinkgoWriter, "%s: not applied (%s)\n", block, block.notApplied)
					skipped++
					continue
				}
				for _, obj := range objects {
					u := &unstructured.Unstructured{Object: obj}
					if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
						failures = append(failures, fmt.Sprintf("%s: not a complete Kubernetes object (apiVersion, kind, metadata.name): complete it, or mark the block <!-- not applied: why -->", block))
						continue
					}
					if ns := u.GetNamespace(); ns != "" {
						err := k8sClient().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
						Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "%v", err)
					}
					raw, err := yaml.Marshal(obj)
					Expect(err).NotTo(HaveOccurred())
					if stderr, err := applyServerSide(ctx, string(raw), "--dry-run=server"); err != nil {
						failures = append(failures, fmt.Sprintf("%s: %s %s refused by the API server: %v %s", block, u.GetKind(), u.GetName(), err, stderr))
					}
					checked++
				}
			}
		}
		fmt.Fprintf(GinkgoWriter, "dry-run %d objects; %d blocks not applied\n", checked, skipped)
		Expect(failures).To(BeEmpty(), strings.Join(failures, "\n"))
		Expect(checked).To(BeNumerically(">", 0))
	})

	It("cite sources users can open: no path outside the repository", func() {
		for _, file := range docFiles() {
			text := readFile(file)
			for _, outside := range []string{"/work/", "../shared", "anchors.md"} {
				Expect(text).NotTo(ContainSubstring(outside), "%s cites %q, which users do not have: link the upstream issue, PR or file instead", file, outside)
			}
		}
	})
})

func readYAMLFile(path string) map[string]any {
	GinkgoHelper()
	var obj map[string]any
	Expect(yaml.Unmarshal([]byte(readFile(path)), &obj)).To(Succeed())
	return obj
}

// k8sClient is a client of the suite's cluster.
func k8sClient() client.Client {
	GinkgoHelper()
	c, err := client.New(cluster.Config, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	return c
}
