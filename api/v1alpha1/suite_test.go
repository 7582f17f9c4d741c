package v1alpha1_test

import (
	"path/filepath"
	"testing"
	"time"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	hookwrightv1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/internal/specreport"
	"github.com/hookwright/hookwright/internal/testcluster"
)

var cluster *testcluster.Cluster

func TestAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	specreport.RunSpecs(t, "WebhookInstall API validation suite")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(GinkgoLogr) // certwatcher in the pod stand-ins logs through it
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(hookwrightv1alpha1.AddToScheme(scheme)).To(Succeed())
	var err error
	cluster, err = testcluster.Start(testcluster.Options{
		Scheme:            scheme,
		CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
		Log:               GinkgoLogr,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cluster.Stop()).To(Succeed()) })
})
