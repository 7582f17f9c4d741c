// Package manifests_test checks what Hookwright ships: config/ renders and
// a real API server accepts it, the RBAC is exactly what the manager
// needs, the OLM bundle loads and validates, and the Dockerfile's build
// produces a binary that runs with the shipped Deployment's arguments and
// RBAC. One control plane serves the whole suite.
package manifests_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/internal/specreport"
	"github.com/hookwright/hookwright/internal/testcluster"
)

// repoRoot is the repository, seen from this package's folder.
var repoRoot = filepath.Join("..", "..")

var (
	cluster *testcluster.Cluster
	kubectl string // the kubectl built with the control plane
)

func TestManifests(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	specreport.RunSpecs(t, "Shipped manifests suite")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(GinkgoLogr)
	binDir, err := testcluster.BinaryDir()
	Expect(err).NotTo(HaveOccurred())
	kubectl = filepath.Join(binDir, "kubectl")

	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
	cluster, err = testcluster.Start(testcluster.Options{
		Scheme:            scheme,
		CRDDirectoryPaths: []string{filepath.Join(repoRoot, "config", "crd", "bases")},
		Log:               GinkgoLogr,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cluster.Stop()).To(Succeed()) })
})

// kustomize renders a kustomization under the repository, as
// `kubectl kustomize` (the Makefile's KUSTOMIZE) does.
func kustomize(ctx context.Context, dir string) string {
	GinkgoHelper()
	out, stderr, err := run(ctx, nil, kubectl, "kustomize", filepath.Join(repoRoot, dir))
	Expect(err).NotTo(HaveOccurred(), "kubectl kustomize %s: %s", dir, stderr)
	return out
}

// applyServerSide runs `kubectl apply --server-side -f -` against the test
// cluster and returns kubectl's stderr, where the API server's warnings
// (Pod Security among them) are printed.
func applyServerSide(ctx context.Context, manifests string, args ...string) (stderr string, err error) {
	args = append([]string{"--kubeconfig", cluster.KubeconfigPath, "apply", "--server-side", "--field-manager=hookwright-manifests-test", "-f", "-"}, args...)
	out, stderr, err := run(ctx, strings.NewReader(manifests), kubectl, args...)
	GinkgoWriter.Print(out)
	return stderr, err
}

func run(ctx context.Context, stdin io.Reader, name string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errOut
	err = cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s %s: %w: %s", filepath.Base(name), strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), errOut.String(), err
}

// decode splits a multi-document YAML stream into objects.
func decode(manifests string) []*unstructured.Unstructured {
	GinkgoHelper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		Expect(err).NotTo(HaveOccurred())
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

// find returns the one rendered object of a kind and name.
func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	GinkgoHelper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	Fail(fmt.Sprintf("no %s %s rendered", kind, name))
	return nil
}

// into converts an unstructured object to a typed one, failing on unknown fields.
func into[T any](obj *unstructured.Unstructured) *T {
	GinkgoHelper()
	out := new(T)
	Expect(runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, out, true)).To(Succeed(), "%s %s", obj.GetKind(), obj.GetName())
	return out
}

func readFile(path string) string {
	GinkgoHelper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, path))
	Expect(err).NotTo(HaveOccurred())
	return string(raw)
}
