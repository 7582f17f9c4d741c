package e2e_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/hookwright/hookwright/controllers/guard"
	"github.com/hookwright/hookwright/internal/harness"
	"github.com/hookwright/hookwright/internal/specreport"
	"github.com/hookwright/hookwright/internal/testcluster"
	"github.com/hookwright/hookwright/internal/testfixtures"
)

var (
	cluster        *testcluster.Cluster
	crontabWebhook string // the built crontab-webhook binary
)

func TestEndToEnd(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	specreport.RunSpecs(t, "End-to-end suite")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(GinkgoLogr)
	var err error
	crontabWebhook, err = testfixtures.BuildCronTabWebhook(filepath.Join("..", ".."), GinkgoT().TempDir(), GinkgoWriter)
	Expect(err).NotTo(HaveOccurred(), "building crontab-webhook")

	cluster, err = testcluster.Start(testcluster.Options{
		Scheme:            harness.Scheme(),
		CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
		Objects:           []client.Object{guard.Policy(), guard.Binding()}, // the admission guard, as config/default ships it
		Log:               GinkgoLogr,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cluster.Stop()).To(Succeed()) })

	operator, err := harness.StartOperator(cluster.Config, GinkgoLogr.WithName("operator"))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(operator.Stop()).To(Succeed()) })
	_ = os.Setenv("NO_COLOR", "1")
})
