package controllers_test

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers"
	"github.com/hookwright/hookwright/controllers/guard"
	"github.com/hookwright/hookwright/internal/specreport"
	"github.com/hookwright/hookwright/internal/testcluster"
	"github.com/hookwright/hookwright/internal/testfixtures"
)

// The operator runs as the shipped ServiceAccount's user, with exactly the
// shipped RBAC (config/rbac), so the audit log tells its requests from the
// tests' own and rbac_test.go can hold the shipped roles to what it did.
const (
	managerNamespace      = "hookwright-system"
	managerServiceAccount = "hookwright-manager"
	managerUser           = "system:serviceaccount:" + managerNamespace + ":" + managerServiceAccount
)

// metricsAddr is where the operator serves its metrics (HTTPS, with
// authentication and authorization, as shipped).
var metricsAddr string

var (
	cluster    *testcluster.Cluster
	k8s        client.Client
	managerLog = &testfixtures.SyncBuffer{}
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	specreport.RunSpecs(t, "WebhookInstall controller suite")
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
		Objects:           []client.Object{guard.Policy(), guard.Binding()}, // the admission guard, as config/default ships it
		AuditLog:          true,
		Log:               GinkgoLogr,
		// On in OpenShift and hardened clusters: owner references with
		// blockOwnerDeletion need update on the owner's finalizers.
		APIServerFlags: map[string]string{"enable-admission-plugins": "OwnerReferencesPermissionEnforcement"},
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cluster.Stop()).To(Succeed()) })
	k8s = cluster.Client

	metricsAddr = freeLoopbackAddr()
	// certwatcher in the pod stand-ins logs through the global logger.
	managerLogger := zap.New(zap.WriteTo(io.MultiWriter(GinkgoWriter, managerLog)), zap.UseDevMode(true))
	ctrl.SetLogger(managerLogger)
	installShippedRBAC()
	cfg, err := cluster.UserConfig(managerUser, "system:serviceaccounts", "system:serviceaccounts:"+managerNamespace)
	Expect(err).NotTo(HaveOccurred())
	// The suite's many installs would otherwise queue Events behind
	// client-side throttling, and late Events blur the write counts.
	cfg.QPS, cfg.Burst = 200, 400
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  controllers.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: metricsAddr, SecureServing: true, FilterProvider: filters.WithAuthenticationAndAuthorization},
		HealthProbeBindAddress: "0",
		Logger:                 managerLogger,
		Controller:             config.Controller{SkipNameValidation: ptrTo(true)},
		// Leader election as shipped: a Lease in the manager's namespace.
		LeaderElection:          true,
		LeaderElectionID:        "hookwright.operators.hookwright.dev",
		LeaderElectionNamespace: managerNamespace,
		LeaseDuration:           ptrTo(15 * time.Second),
		RenewDeadline:           ptrTo(10 * time.Second),
		RetryPeriod:             ptrTo(2 * time.Second),
	})
	Expect(err).NotTo(HaveOccurred())
	Expect((&controllers.WebhookInstallReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("hookwright"), Clock: clock.RealClock{},
		Authority: controllers.Authority{Namespace: managerNamespace, ServiceAccount: managerServiceAccount},
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

// installShippedRBAC applies config/rbac (the manager's ServiceAccount,
// ClusterRole, leader-election Role, metrics reader) as an admin would,
// and the verifier role an author ships for the suite's widget CRDs.
func installShippedRBAC() {
	ctx := context.Background()
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managerNamespace}})).To(Succeed())
	_, err := cluster.Kubectl(ctx, "apply", "--server-side", "-k", filepath.Join("..", "config", "rbac"))
	Expect(err).NotTo(HaveOccurred())
	// Every widget CRD has its own group: one rule for all groups stands in
	// for the per-CRD ClusterRole an author ships (examples/crontab/verifier-rbac.yaml).
	verifier := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "widget-verifier"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"widgets"}, Verbs: []string{"list", "create"}}},
	}
	Expect(k8s.Create(ctx, verifier)).To(Succeed())
	Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "widget-verifier"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: verifier.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: managerNamespace, Name: managerServiceAccount}},
	})).To(Succeed())
}

func freeLoopbackAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}
