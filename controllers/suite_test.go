package controllers_test

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers"
	"github.com/hookwright/hookwright/internal/testcluster"
	"github.com/hookwright/hookwright/internal/testfixtures"
)

// managerUser is the identity the operator runs as, so the audit log tells
// its writes from the tests' own.
const managerUser = "hookwright-manager"

var (
	cluster    *testcluster.Cluster
	k8s        client.Client
	managerLog = &testfixtures.SyncBuffer{}
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "WebhookInstall controller suite")
}

var _ = BeforeSuite(func() {
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
	var err error
	cluster, err = testcluster.Start(testcluster.Options{
		Scheme:            scheme,
		CRDDirectoryPaths: []string{filepath.Join("..", "config", "crd", "bases")},
		AuditLog:          true,
		Log:               GinkgoLogr,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cluster.Stop()).To(Succeed()) })
	k8s = cluster.Client

	// certwatcher in the pod stand-ins logs through the global logger.
	managerLogger := zap.New(zap.WriteTo(io.MultiWriter(GinkgoWriter, managerLog)), zap.UseDevMode(true))
	ctrl.SetLogger(managerLogger)
	cfg, err := cluster.UserConfig(managerUser, "system:masters")
	Expect(err).NotTo(HaveOccurred())
	// The suite's many installs would otherwise queue Events behind
	// client-side throttling, and late Events blur the write counts.
	cfg.QPS, cfg.Burst = 200, 400
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  controllers.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 managerLogger,
		Controller:             config.Controller{SkipNameValidation: ptrTo(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect((&controllers.WebhookInstallReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("hookwright"), Clock: clock.RealClock{},
	}).SetupWithManager(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	DeferCleanup(func() { cancel(); <-done })
})

func ptrTo[T any](v T) *T { return &v }
