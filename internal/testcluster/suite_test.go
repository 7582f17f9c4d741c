package testcluster_test

import (
	"testing"
	"time"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hookwright/hookwright/internal/specreport"
	"github.com/hookwright/hookwright/internal/testcluster"
)

// One control plane for the whole package: starting one takes seconds.
var cluster *testcluster.Cluster

func TestTestCluster(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	specreport.RunSpecs(t, "Test cluster suite")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(GinkgoLogr) // certwatcher in the pod stand-ins logs through it
	var err error
	cluster, err = testcluster.Start(testcluster.Options{Log: GinkgoLogr})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cluster.Stop()).To(Succeed()) })
})
