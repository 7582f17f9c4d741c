package manifests_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/pkg/manifests"
)

// releaseCopy is a copy of the repository's sources, configuration and
// bundle in which a release's make targets may rewrite what they generate.
func releaseCopy() string {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	root, err := filepath.Abs(repoRoot)
	Expect(err).NotTo(HaveOccurred())
	for _, path := range []string{"go.mod", "go.sum", "Makefile", "main.go", "PROJECT", "api", "controllers", "certs", "config", "bundle", "hack", "internal", "pkg"} {
		if _, err := os.Stat(filepath.Join(root, path)); os.IsNotExist(err) {
			continue
		}
		cp := exec.Command("cp", "-a", filepath.Join(root, path), dir)
		out, err := cp.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
	}
	return dir
}

// makeIn runs make in dir with the repository's tools (controller-gen,
// kubectl, opm), as a release would.
func makeIn(ctx SpecContext, dir string, args ...string) string {
	GinkgoHelper()
	out, err := tryMakeIn(ctx, dir, args...)
	Expect(err).NotTo(HaveOccurred(), "make %s:\n%s", strings.Join(args, " "), out)
	return out
}

func tryMakeIn(ctx SpecContext, dir string, args ...string) (string, error) {
	GinkgoHelper()
	root, err := filepath.Abs(repoRoot)
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.CommandContext(ctx, "make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"CONTROL_PLANE_DIR="+os.Getenv("HOOKWRIGHT_CONTROL_PLANE_DIR"),
		"CONTROLLER_GEN="+filepath.Join(root, "bin", "tools", "controller-gen-"+makeVar("CONTROLLER_TOOLS_VERSION"), "controller-gen"),
		"OPM="+opmBinary(),
	)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// makeVar is a `NAME ?= value` default of the Makefile.
func makeVar(name string) string {
	GinkgoHelper()
	m := regexp.MustCompile(`(?m)^` + name + ` \?= (\S+)$`).FindStringSubmatch(readFile("Makefile"))
	Expect(m).NotTo(BeNil(), "%s ?= in the Makefile", name)
	return m[1]
}

// opmBinary is the opm `make test` builds (make opm).
func opmBinary() string {
	GinkgoHelper()
	opm := os.Getenv("HOOKWRIGHT_OPM")
	Expect(opm).NotTo(BeEmpty(), "HOOKWRIGHT_OPM names the opm binary: run the tests with make test, which builds it (make opm)")
	_, err := os.Stat(opm)
	Expect(err).NotTo(HaveOccurred(), "run make opm")
	return opm
}

// imagesIn lists every image reference a bundle's manifests name.
func imagesIn(dir string) []string {
	GinkgoHelper()
	var images []string
	pattern := regexp.MustCompile(`(?m)^[ \t]*(?:-[ \t]+)?(?:image|containerImage):[ \t]+(\S+)[ \t]*$`)
	entries, err := os.ReadDir(filepath.Join(dir, "manifests"))
	Expect(err).NotTo(HaveOccurred())
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(dir, "manifests", e.Name()))
		Expect(err).NotTo(HaveOccurred())
		for _, m := range pattern.FindAllStringSubmatch(string(raw), -1) {
			images = append(images, strings.Trim(m[1], `"'`))
		}
	}
	return images
}

var _ = Describe("A release", Ordered, func() {
	var dir string
	BeforeAll(func() { dir = releaseCopy() })

	It("make bundle IMG=... VERSION=... writes that image everywhere an image appears, and the bundle validates", func(ctx SpecContext) {
		const img = "registry.example.com/hookwright:v0.2.0"
		makeIn(ctx, dir, "bundle", "IMG="+img, "VERSION=0.2.0")
		bundle, err := manifests.GetBundleFromDir(filepath.Join(dir, "bundle"))
		Expect(err).NotTo(HaveOccurred())
		expectValid(bundle)
		csv := bundle.CSV
		Expect(csv.Name).To(Equal("hookwright.v0.2.0"))
		Expect(csv.Annotations).To(HaveKeyWithValue("containerImage", img))
		Expect(csv.Spec.RelatedImages).NotTo(BeEmpty())
		for _, r := range csv.Spec.RelatedImages {
			Expect(r.Image).To(Equal(img), "relatedImages %s", r.Name)
		}
		for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
			for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
				Expect(c.Image).To(Equal(img), "container %s of Deployment %s", c.Name, d.Name)
			}
		}
		images := imagesIn(filepath.Join(dir, "bundle"))
		Expect(images).NotTo(BeEmpty())
		for _, image := range images {
			Expect(image).To(Equal(img), "every image the bundle names")
		}
		Expect(os.ReadFile(filepath.Join(dir, "config", "manager", "kustomization.yaml"))).To(ContainSubstring("newTag: v0.2.0"),
			"kustomize installs (config/default) run the same image")

		By("with a digest, the bundle pulls exactly that image")
		digest := "sha256:" + strings.Repeat("0123456789abcdef", 4)
		makeIn(ctx, dir, "bundle", "IMG="+img+"@"+digest, "VERSION=0.2.0")
		for _, image := range imagesIn(filepath.Join(dir, "bundle")) {
			Expect(image).To(Equal("registry.example.com/hookwright@"+digest), "every image the bundle names, by digest")
		}

		By("a floating or unqualified image is refused")
		for img, why := range map[string]string{
			"registry.example.com/hookwright:latest": "latest moves",
			"hookwright:v0.2.0":                      "not fully qualified",
		} {
			out, err := tryMakeIn(ctx, dir, "bundle", "IMG="+img)
			Expect(err).To(HaveOccurred(), "make bundle IMG=%s", img)
			Expect(out).To(ContainSubstring(why))
		}
	}, NodeTimeout(10*time.Minute))

	It("make catalog-build renders a file-based catalog of that bundle that opm validates", func(ctx SpecContext) {
		const bundleImg = "registry.example.com/hookwright-bundle:v0.2.0"
		out := makeIn(ctx, dir, "catalog-build", "BUNDLE_IMG="+bundleImg, "VERSION=0.2.0")
		Expect(out).To(ContainSubstring("validated"))
		raw, err := os.ReadFile(filepath.Join(dir, "bin", "catalog", "hookwright", "catalog.json"))
		Expect(err).NotTo(HaveOccurred())
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		schemas := map[string]map[string]any{}
		for dec.More() {
			var blob map[string]any
			Expect(dec.Decode(&blob)).To(Succeed())
			schemas[blob["schema"].(string)] = blob
		}
		Expect(schemas).To(HaveKey("olm.package"))
		Expect(schemas["olm.package"]).To(HaveKeyWithValue("defaultChannel", "alpha"))
		Expect(schemas).To(HaveKey("olm.channel"))
		Expect(schemas["olm.bundle"]).To(HaveKeyWithValue("name", "hookwright.v0.2.0"))
		Expect(schemas["olm.bundle"]).To(HaveKeyWithValue("image", bundleImg))

		By("opm validate, run here on the output, agrees")
		validate := exec.CommandContext(ctx, opmBinary(), "validate", filepath.Join(dir, "bin", "catalog"))
		vout, err := validate.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", vout)
		dockerfile, err := os.ReadFile(filepath.Join(dir, "bin", "catalog.Dockerfile"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(dockerfile)).To(MatchRegexp(`FROM quay\.io/operator-framework/opm:v\d+\.\d+\.\d+`), "served by the opm release that validated it")
	}, NodeTimeout(10*time.Minute))
})
