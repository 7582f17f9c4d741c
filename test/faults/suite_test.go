// Package faults_test proves that Hookwright survives crashes and leader
// changes: an operator process is killed after every write of an install
// and of a CA rotation, or a leader is killed mid-rotation, and a fresh
// operator converges without a failed conversion or a rotation done twice.
// Operators come and go per spec, so this suite has its own control plane
// and never runs one operator for the whole suite.
package faults_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/guard"
	"github.com/hookwright/hookwright/internal/harness"
	"github.com/hookwright/hookwright/internal/specreport"
	"github.com/hookwright/hookwright/internal/testcluster"
	"github.com/hookwright/hookwright/internal/testfixtures"
)

var (
	cluster *testcluster.Cluster
	k8s     client.Client
)

func TestFaults(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	specreport.RunSpecs(t, "Crash and failover suite")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(GinkgoLogr)
	var err error
	cluster, err = testcluster.Start(testcluster.Options{
		Scheme:            harness.Scheme(),
		CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
		Objects:           []client.Object{guard.Policy(), guard.Binding()}, // the admission guard, as config/default ships it
		Log:               GinkgoLogr,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cluster.Stop()).To(Succeed()) })
	k8s = cluster.Client
})

// fixture is one widget CRD with a served webhook and some widgets, in a
// namespace of its own, read continuously at the non-storage version.
type fixture struct {
	ns, group, crdName string
	readers            *testfixtures.Reader
}

func newFixture(ctx context.Context) *fixture {
	GinkgoHelper()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "faults-"}}
	Expect(k8s.Create(ctx, nsObj)).To(Succeed())
	f := &fixture{ns: nsObj.Name, group: nsObj.Name + ".hookwright.test"}
	crd := testcluster.WidgetCRD(f.group, "", "", nil)
	f.crdName = crd.Name
	Expect(k8s.Create(ctx, crd)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: crd.Name}, crd)).To(Succeed())
		established := false
		for _, c := range crd.Status.Conditions {
			established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
		}
		g.Expect(established).To(BeTrue())
	}).Should(Succeed())
	cluster.Kubelet.Serve(f.ns, "widget-webhook", testcluster.HandlerHost{Handler: &testcluster.WidgetConverter{}})
	var names []string
	for i := range 3 {
		names = append(names, fmt.Sprintf("w%d", i))
		w := testfixtures.Widget(f.group, "v1", f.ns, names[i])
		Eventually(func() error { return k8s.Create(ctx, w) }).Should(Succeed())
	}
	// Before any conversion is configured the API server converts by
	// rewriting apiVersion (strategy None): reads succeed from the start,
	// so every failure counted is a conversion Hookwright broke.
	f.readers = testfixtures.StartReaders(ctx, k8s, f.group, f.ns, names, 2)
	DeferCleanup(f.readers.Halt)
	return f
}

func (f *fixture) install() *v1alpha1.WebhookInstall {
	whi := testfixtures.WidgetInstall(f.ns, "widgets", "widget-webhook", f.crdName)
	whi.Spec.Certificates.TrustOverlap = &metav1.Duration{Duration: 2 * time.Second}
	return whi
}

func (f *fixture) get(ctx context.Context) *v1alpha1.WebhookInstall {
	GinkgoHelper()
	whi := &v1alpha1.WebhookInstall{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "widgets"}, whi)).To(Succeed())
	return whi
}

// settled: Succeeded on the current generation, no rotation under way.
func (f *fixture) settled(ctx context.Context, g Gomega) *v1alpha1.WebhookInstall {
	whi := &v1alpha1.WebhookInstall{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "widgets"}, whi)).To(Succeed())
	g.Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), "%s: %s", whi.Status.Reason, whi.Status.Message)
	g.Expect(whi.Status.ObservedGeneration).To(Equal(whi.Generation))
	for _, rec := range whi.Status.Rotations {
		g.Expect(rec.Outcome).To(Equal(v1alpha1.RotationSucceeded), "%+v", rec)
	}
	return whi
}

// requestRotation sets the manual rotation annotation.
func (f *fixture) requestRotation(ctx context.Context, request string) {
	GinkgoHelper()
	whi := f.get(ctx)
	patch := client.MergeFrom(whi.DeepCopy())
	whi.Annotations = map[string]string{v1alpha1.AnnotationRotate: request}
	Expect(k8s.Patch(ctx, whi, patch)).To(Succeed())
}

// expectNoFailedReads stops the readers and checks their counters.
func (f *fixture) expectNoFailedReads(what string) {
	GinkgoHelper()
	f.readers.Halt()
	ok, failed := f.readers.OK.Load(), f.readers.Failed.Load()
	GinkgoWriter.Printf("%s: %d reads ok, %d failed\n", what, ok, failed)
	Expect(ok).To(BeNumerically(">", 0))
	Expect(failed).To(BeZero(), "%s: first errors %v", what, f.readers.FirstErrors())
}

func countRecords(whi *v1alpha1.WebhookInstall, kind v1alpha1.RotationKind, message string) int {
	n := 0
	for _, rec := range whi.Status.Rotations {
		if rec.Kind == kind && (message == "" || rec.Message == message) {
			n++
		}
	}
	return n
}
