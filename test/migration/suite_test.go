// Package migration_test proves storage version migration end to end:
// 10,000 CronTabs moved between versions under concurrent clients, a
// migration resumed after the operator is killed, one driven through the
// in-tree StorageVersionMigration API, one stopped by an object the
// webhook refuses, and the old version removed at the end.
package migration_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/guard"
	"github.com/hookwright/hookwright/internal/harness"
	"github.com/hookwright/hookwright/internal/specreport"
	"github.com/hookwright/hookwright/internal/testcluster"
	"github.com/hookwright/hookwright/internal/testfixtures"
)

const (
	crdName               = "crontabs.stable.example.com"
	managerNamespace      = "hookwright-system"
	managerServiceAccount = "hookwright-manager"
	managerUser           = "system:serviceaccount:" + managerNamespace + ":" + managerServiceAccount
)

var (
	cluster *testcluster.Cluster
	// fast is an admin client without client-side throttling, to create
	// and read 10,000 objects quickly.
	fast client.Client
	// managerConfig is the shipped ServiceAccount's identity.
	managerConfig *rest.Config
)

func TestMigration(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(2 * time.Minute)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	specreport.RunSpecs(t, "Storage migration suite")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(GinkgoLogr)
	var err error
	webhook, err := testfixtures.BuildCronTabWebhook(filepath.Join("..", ".."), GinkgoT().TempDir(), GinkgoWriter)
	Expect(err).NotTo(HaveOccurred(), "building crontab-webhook")

	cluster, err = testcluster.Start(testcluster.Options{
		Scheme:                  harness.Scheme(),
		CRDDirectoryPaths:       []string{filepath.Join("..", "..", "config", "crd", "bases")},
		Objects:                 []client.Object{guard.Policy(), guard.Binding()},
		AuditLog:                true,
		StorageVersionMigration: true,
		// etcd compacted every 5 s instead of the default 5 minutes:
		// every listing of the 10,000 objects outlives its snapshot, as a
		// long migration on a real cluster does, and must go on past it
		// rather than start over (a cold make test saw one start over).
		APIServerFlags: map[string]string{"etcd-compaction-interval": "5s"},
		Log:            GinkgoLogr,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cluster.Stop()).To(Succeed()) })
	cfg := rest.CopyConfig(cluster.Config)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit
	// Its own connections, as another client's would be: HTTP/1.1 keeps
	// the test's requests off the operator's HTTP/2 connection.
	cfg.TLSClientConfig.NextProtos = []string{"http/1.1"}
	fast, err = client.New(cfg, client.Options{Scheme: cluster.Scheme})
	Expect(err).NotTo(HaveOccurred())

	ctx := context.Background()
	// The operator runs as its shipped ServiceAccount, with the shipped
	// RBAC and the example's grant on CronTabs (examples/crontab/verifier-rbac.yaml).
	Expect(cluster.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managerNamespace}})).To(Succeed())
	_, err = cluster.Kubectl(ctx, "apply", "--server-side", "-k", filepath.Join("..", "..", "config", "rbac"))
	Expect(err).NotTo(HaveOccurred())
	_, err = cluster.Kubectl(ctx, "apply", "--server-side", "-f", filepath.Join("..", "..", "examples", "crontab", "verifier-rbac.yaml"))
	Expect(err).NotTo(HaveOccurred())
	managerConfig, err = cluster.UserConfig(managerUser, "system:serviceaccounts", "system:serviceaccounts:"+managerNamespace)
	Expect(err).NotTo(HaveOccurred())

	crd := &apiextensionsv1.CustomResourceDefinition{}
	readManifest("examples/crontab/crd.yaml", crd)
	Expect(cluster.Client.Create(ctx, crd)).To(Succeed())
	whi := conversionOnlyInstall()
	Expect(cluster.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: whi.Namespace}})).To(Succeed())
	cluster.Kubelet.Serve(whi.Namespace, "crontab-webhook", testcluster.BinaryHost{
		Path:        webhook,
		Args:        testfixtures.CronTabWebhookArgs,
		GracePeriod: 5e9,
	})
	Expect(cluster.Client.Create(ctx, whi)).To(Succeed())
	_ = os.Setenv("NO_COLOR", "1")
})

func readManifest(path string, into any) {
	GinkgoHelper()
	raw, err := os.ReadFile(filepath.Join("..", "..", path))
	Expect(err).NotTo(HaveOccurred())
	Expect(yaml.UnmarshalStrict(raw, into)).To(Succeed(), path)
}

// conversionOnlyInstall is the example install with its conversion webhook
// only: without the validating webhook, a test can store a CronTab the
// conversion refuses, as clusters do that stored it before validation
// existed.
func conversionOnlyInstall() *v1alpha1.WebhookInstall {
	GinkgoHelper()
	whi := &v1alpha1.WebhookInstall{}
	readManifest("examples/crontab/webhookinstall.yaml", whi)
	var defs []v1alpha1.WebhookDefinition
	for _, d := range whi.Spec.WebhookDefinitions {
		if d.Type == "ConversionWebhook" {
			defs = append(defs, d)
		}
	}
	whi.Spec.WebhookDefinitions = defs
	return whi
}

func cronTab(version, namespace, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion("stable.example.com/" + version)
	u.SetKind("CronTab")
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// installStatus reads the install.
func installStatus(ctx context.Context, g Gomega) *v1alpha1.WebhookInstall {
	whi := conversionOnlyInstall()
	g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(whi), whi)).To(Succeed())
	return whi
}

// migrationOf is the install's migration record of the CronTab CRD.
func migrationOf(whi *v1alpha1.WebhookInstall) v1alpha1.StorageMigrationStatus {
	for _, m := range whi.Status.StorageMigrations {
		if m.Name == crdName {
			return m
		}
	}
	return v1alpha1.StorageMigrationStatus{}
}

func liveCRD(ctx context.Context, g Gomega) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Name: crdName}, crd)).To(Succeed())
	return crd
}

// setStorageVersion makes version the CRD's storage version, as an author
// shipping a new release does.
func setStorageVersion(ctx context.Context, version string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		crd := liveCRD(ctx, g)
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == version
		}
		g.Expect(cluster.Client.Update(ctx, crd)).To(Succeed())
	}).WithContext(ctx).Should(Succeed())
}

// migratorPatches counts the migrator's rewrites the API server logged
// since offset.
func migratorPatches(offset int64) (patches int, next int64) {
	GinkgoHelper()
	events, next, err := cluster.AuditEvents(offset)
	Expect(err).NotTo(HaveOccurred())
	for _, e := range events {
		if e.Verb == "patch" && e.ObjectRef.Resource == "crontabs" && strings.Contains(e.RequestURI, "fieldManager=hookwright-storage-migrator") {
			patches++
		}
	}
	return patches, next
}

// expiredLists counts the operator's lists of CronTabs since offset that
// the API server answered 410 Gone: continue tokens whose snapshot etcd's
// compaction removed.
func expiredLists(offset int64) int {
	GinkgoHelper()
	events, _, err := cluster.AuditEvents(offset)
	Expect(err).NotTo(HaveOccurred())
	n := 0
	for _, e := range events {
		if e.Verb == "list" && e.ObjectRef.Resource == "crontabs" && e.User.Username == managerUser &&
			e.ResponseStatus.Code == 410 {
			n++
		}
	}
	return n
}

// migratorObjects is the set of objects (namespace/name) the migrator
// patched since offset.
func migratorObjects(offset int64) (map[string]bool, int64) {
	GinkgoHelper()
	events, next, err := cluster.AuditEvents(offset)
	Expect(err).NotTo(HaveOccurred())
	objects := map[string]bool{}
	for _, e := range events {
		if e.Verb == "patch" && e.ObjectRef.Resource == "crontabs" && strings.Contains(e.RequestURI, "fieldManager=hookwright-storage-migrator") {
			objects[e.ObjectRef.Namespace+"/"+e.ObjectRef.Name] = true
		}
	}
	return objects, next
}

// auditOffset is the audit log's current end.
func auditOffset() int64 {
	GinkgoHelper()
	_, offset, err := cluster.AuditEvents(0)
	Expect(err).NotTo(HaveOccurred())
	return offset
}
