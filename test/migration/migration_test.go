package migration_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers"
	"github.com/hookwright/hookwright/internal/harness"
	"github.com/hookwright/hookwright/internal/testcluster"
	"github.com/hookwright/hookwright/internal/testfixtures"
)

const (
	namespaces   = 10
	perNamespace = 1000
	// keptNamespaces keep their CronTabs after the first spec.
	keptNamespaces = 2
	kept           = keptNamespaces * perNamespace
)

// allRan: every spec of the ordered container ran to its end.
var allRan bool

func namespaceName(i int) string { return fmt.Sprintf("tenant-%d", i) }
func objectName(i int) string    { return fmt.Sprintf("job-%04d", i) }

// startOperator runs Hookwright in process with the given migration
// settings; the spec stops it at its end.
func startOperator(opts controllers.MigrationOptions) *harness.Operator {
	GinkgoHelper()
	op, err := harness.StartOperator(managerConfig, GinkgoLogr.WithName("operator"), harness.WithMigration(opts))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(op.Stop)
	return op
}

// ownMigrator: Hookwright's own migrator even though the cluster serves
// the in-tree API.
var ownMigrator = controllers.MigrationOptions{Workers: 8, QPS: 1000, InTree: ptr.To(false)}

// specs reads every CronTab's spec at version, by namespace/name.
func specs(ctx context.Context, version string) map[string]map[string]any {
	GinkgoHelper()
	out := map[string]map[string]any{}
	for n := range namespaces {
		if err := fast.Get(ctx, client.ObjectKey{Name: namespaceName(n)}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
			continue
		}
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("stable.example.com/" + version)
		l.SetKind("CronTabList")
		Expect(fast.List(ctx, l, client.InNamespace(namespaceName(n)))).To(Succeed())
		for _, item := range l.Items {
			spec, _, _ := unstructured.NestedMap(item.Object, "spec")
			out[item.GetNamespace()+"/"+item.GetName()] = spec
		}
	}
	return out
}

// traffic is other clients of the CronTabs while a migration runs:
// readers list and get at both versions, writers change spec.replicas of
// their own objects with optimistic concurrency and remember the last
// value each write stored.
type traffic struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	reads, failedReads atomic.Int64
	writes             atomic.Int64
	mu                 sync.Mutex
	written            map[string]*writeLog // by namespace/name
	readErrors         []string
}

func startTraffic(parent context.Context) *traffic {
	ctx, cancel := context.WithCancel(parent)
	t := &traffic{cancel: cancel, written: map[string]*writeLog{}}
	for reader := range 4 {
		t.wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer t.wg.Done()
			version := []string{"v1", "v2"}[reader%2]
			// Paced reads of small pages: every read must succeed, and
			// thousands spread over the migration prove it; pages of 50 every
			// 10 ms made the readers most of the API server's work, and a
			// loaded cold make test timed out at 9,000 of 10,000 objects.
			for ; ctx.Err() == nil; time.Sleep(25 * time.Millisecond) {
				ns := namespaceName(rand.IntN(namespaces))
				var err error
				if reader < 2 {
					l := &unstructured.UnstructuredList{}
					l.SetAPIVersion("stable.example.com/" + version)
					l.SetKind("CronTabList")
					err = fast.List(ctx, l, client.InNamespace(ns), client.Limit(10))
				} else {
					err = fast.Get(ctx, client.ObjectKey{Namespace: ns, Name: objectName(rand.IntN(perNamespace))}, cronTab(version, "", "", nil))
				}
				if ctx.Err() != nil {
					return
				}
				t.reads.Add(1)
				if err != nil {
					t.failedReads.Add(1)
					t.mu.Lock()
					t.readErrors = append(t.readErrors, err.Error())
					t.mu.Unlock()
				}
			}
		}()
	}
	for writer := range 2 {
		t.wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer t.wg.Done()
			for i := int64(1); ctx.Err() == nil; i++ {
				time.Sleep(10 * time.Millisecond) // paced: load, not a flood
				// Each writer owns the objects of its namespaces.
				ns := namespaceName(writer + 2*rand.IntN(namespaces/2))
				name := objectName(rand.IntN(perNamespace))
				obj := cronTab([]string{"v1", "v2"}[i%2], ns, name, nil)
				err := fast.Get(ctx, client.ObjectKeyFromObject(obj), obj)
				if err == nil {
					replicas, token := i%100+1, fmt.Sprintf("%d-%d", writer, i)
					Expect(unstructured.SetNestedField(obj.Object, replicas, "spec", "replicas")).To(Succeed())
					obj.SetAnnotations(map[string]string{writeToken: token})
					err = fast.Update(ctx, obj)
					t.mu.Lock()
					log := t.written[ns+"/"+name]
					if log == nil {
						log = &writeLog{ambiguous: map[string]int64{}}
						t.written[ns+"/"+name] = log
					}
					switch {
					case err == nil:
						t.writes.Add(1)
						log.confirmed, log.replicas, log.ambiguous = token, replicas, map[string]int64{}
					case apierrors.IsConflict(err) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || ctx.Err() != nil:
						// client-go retries a write the server answered with
						// Retry-After: the first try may have been stored; and
						// a write cancelled by the end of the traffic, or timed
						// out at a loaded API server, may have been stored too.
						log.ambiguous[token] = replicas
					}
					t.mu.Unlock()
				}
				if err != nil && !apierrors.IsConflict(err) && !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err) && ctx.Err() == nil {
					Fail(fmt.Sprintf("a concurrent write failed for another reason than a conflict: %v", err))
				}
			}
		}()
	}
	return t
}

// writeToken is the annotation each concurrent write sets to its own token.
const writeToken = "test.hookwright.dev/write"

// writeLog is what the writers know of one object: the last write
// confirmed, and the writes after it answered with a conflict, which may
// still have been stored (a retried request whose first try was).
type writeLog struct {
	confirmed string // token
	replicas  int64
	ambiguous map[string]int64 // token -> replicas
}

// survives: the object holds the last confirmed write, or a later one
// (or, never confirmed, no write or one whose answer was lost).
func (l *writeLog) survives(token string, replicas any) bool {
	if token == l.confirmed {
		return l.confirmed == "" || replicas == l.replicas
	}
	want, ok := l.ambiguous[token]
	return ok && replicas == want
}

func (t *traffic) stop() {
	t.cancel()
	t.wg.Wait()
}

var _ = Describe("Storage version migration", Ordered, func() {
	AfterAll(func() {
		By("holding the shipped RBAC to what the migrations did: nothing refused, its migration rules used")
		events, _, err := cluster.AuditEvents(0)
		Expect(err).NotTo(HaveOccurred())
		used, forbidden := testcluster.UsedPermissions(events, managerUser)
		Expect(forbidden).To(BeEmpty(), "requests of the operator that the shipped RBAC refused")
		if !allRan {
			return // a spec failed or was skipped: not every rule had its use
		}
		for _, p := range []testcluster.Permission{
			{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions/status", Verb: "update"},
			{Group: "storagemigration.k8s.io", Resource: "storageversionmigrations", Verb: "create"},
			{Group: "storagemigration.k8s.io", Resource: "storageversionmigrations", Verb: "get"},
			{Group: "storagemigration.k8s.io", Resource: "storageversionmigrations", Verb: "delete"},
			{Group: "stable.example.com", Resource: "crontabs", Verb: "patch"},
		} {
			Expect(used).To(HaveKey(p), "the operator used %v", p)
		}
	})

	BeforeAll(func(ctx context.Context) {
		By(fmt.Sprintf("storing %d CronTabs in %d namespaces as v1", namespaces*perNamespace, namespaces))
		op := startOperator(ownMigrator)
		Eventually(func(g Gomega) {
			whi := installStatus(ctx, g)
			g.Expect(meta.IsStatusConditionTrue(whi.Status.Conditions, v1alpha1.TypeConversionVerified)).To(BeTrue(), "%v", whi.Status.Conditions)
			g.Expect(meta.IsStatusConditionTrue(whi.Status.Conditions, v1alpha1.TypeStorageMigrated)).To(BeTrue(), "one stored version: nothing to migrate")
		}).WithContext(ctx).Should(Succeed())
		Expect(op.Stop()).To(Succeed())
		for n := range namespaces {
			Expect(fast.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceName(n)}})).To(Succeed())
		}
		work := make(chan *unstructured.Unstructured)
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for obj := range work {
					Expect(fast.Create(ctx, obj)).To(Succeed())
				}
			}()
		}
		for n := range namespaces {
			for i := range perNamespace {
				work <- cronTab("v1", namespaceName(n), objectName(i), map[string]any{
					"cronSpec": fmt.Sprintf("%d %d * * *", i%60, n), "image": fmt.Sprintf("example.com/job:%d", i), "replicas": int64(i % 7)})
			}
		}
		close(work)
		wg.Wait()
		Expect(liveCRD(ctx, Default).Status.StoredVersions).To(Equal([]string{"v1"}))
	}, NodeTimeout(10*time.Minute))

	It("rewrites 10,000 CronTabs from v1 to v2 while others read (none fails) and write (every write survives, no content changes), then leaves storedVersions [v2]", func(ctx context.Context) {
		before := specs(ctx, "v2")
		Expect(before).To(HaveLen(namespaces * perNamespace))
		offset := auditOffset()
		succeededBefore := metric("hookwright_storage_migrations_total", map[string]string{"method": v1alpha1.MethodHookwright, "result": "succeeded"})
		objectsBefore := metric("hookwright_storage_migration_objects_total", map[string]string{"method": v1alpha1.MethodHookwright})
		clients := startTraffic(ctx)
		DeferCleanup(clients.stop)
		time.Sleep(time.Second)

		By("moving the storage version to v2, as a new release of the operator does")
		setStorageVersion(ctx, "v2")
		Expect(liveCRD(ctx, Default).Status.StoredVersions).To(ConsistOf("v1", "v2"))
		startOperator(ownMigrator)
		Eventually(func(g Gomega) {
			m := migrationOf(installStatus(ctx, g))
			g.Expect(m.State).To(Equal(v1alpha1.MigrationSucceeded), "%+v", m)
		}).WithContext(ctx).WithTimeout(15 * time.Minute).Should(Succeed())
		time.Sleep(time.Second)
		clients.stop()

		crd := liveCRD(ctx, Default)
		Expect(crd.Status.StoredVersions).To(Equal([]string{"v2"}))
		whi := installStatus(ctx, Default)
		m := migrationOf(whi)
		Expect(m.Method).To(Equal(v1alpha1.MethodHookwright))
		Expect(m.From).To(Equal([]string{"v1"}))
		Expect(m.Migrated).To(BeNumerically(">=", namespaces*perNamespace))
		Expect(m.Restarts).To(BeZero())
		Expect(meta.IsStatusConditionTrue(whi.Status.Conditions, v1alpha1.TypeStorageMigrated)).To(BeTrue())
		removable := meta.FindStatusCondition(whi.Status.Conditions, v1alpha1.TypeOldVersionsRemovable)
		Expect(removable).NotTo(BeNil())
		Expect(removable.Status).To(Equal(metav1.ConditionTrue))
		Expect(removable.Message).To(ContainSubstring("v1 of " + crdName))
		patches, _ := migratorPatches(offset)
		Expect(patches).To(BeNumerically(">=", namespaces*perNamespace), "every object was rewritten (or found rewritten) by the migrator")
		AddReportEntry("listings past an expired snapshot (410, etcd compacted every 5 s)", expiredLists(offset))
		Expect(metric("hookwright_storage_migrations_total", map[string]string{"method": v1alpha1.MethodHookwright, "result": "succeeded"}) - succeededBefore).To(Equal(1.0))
		Expect(metric("hookwright_storage_migration_objects_total", map[string]string{"method": v1alpha1.MethodHookwright}) - objectsBefore).To(BeNumerically(">=", namespaces*perNamespace))
		Eventually(func(g Gomega) {
			g.Expect(installEvents(ctx, g)).To(ContainElements(
				ContainSubstring("Normal MigrationStarted migrating "+crdName+" from v1 to v2 (Hookwright)"),
				ContainSubstring("Normal MigrationSucceeded "+crdName+": ")))
		}).WithContext(ctx).Should(Succeed())

		By(fmt.Sprintf("the other clients: %d reads, none failed; %d writes", clients.reads.Load(), clients.writes.Load()))
		Expect(clients.failedReads.Load()).To(BeZero(), "%v", clients.readErrors)
		Expect(clients.reads.Load()).To(BeNumerically(">", 100))
		Expect(clients.writes.Load()).To(BeNumerically(">", 10))

		after, tokens := specs(ctx, "v2"), writeTokens(ctx)
		Expect(after).To(HaveLen(len(before)))
		for key, spec := range before {
			if log, ok := clients.written[key]; ok {
				if !log.survives(tokens[key], after[key]["replicas"]) {
					explainLostWrite(ctx, key, offset)
				}
				Expect(log.survives(tokens[key], after[key]["replicas"])).To(BeTrue(),
					"the last concurrent write of %s survives: it holds write %q with replicas %v; the last confirmed write was %q with %d", key, tokens[key], after[key]["replicas"], log.confirmed, log.replicas)
				delete(after[key], "replicas")
				delete(spec, "replicas")
			}
			Expect(after[key]).To(Equal(spec), "the content of %s is unchanged", key)
		}

		// Each rewrite costs the API server a call to the webhook: the
		// specs below keep 2,000 objects, to stay within make test's budget.
		for n := keptNamespaces; n < namespaces; n++ {
			Expect(fast.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceName(n)}})).To(Succeed())
		}
		Eventually(func(g Gomega) {
			for n := keptNamespaces; n < namespaces; n++ {
				err := fast.Get(ctx, client.ObjectKey{Name: namespaceName(n)}, &corev1.Namespace{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "namespace %s is deleted", namespaceName(n))
			}
		}).WithContext(ctx).WithTimeout(5 * time.Minute).Should(Succeed())
	}, NodeTimeout(25*time.Minute))

	It("resumes a migration where it stopped when the operator is killed halfway, and finishes it", func(ctx context.Context) {
		offset := auditOffset()
		setStorageVersion(ctx, "v1")
		slow := controllers.MigrationOptions{PageSize: 200, Workers: 4, QPS: 400, InTree: ptr.To(false)}
		first := startOperator(slow)
		var stoppedAt v1alpha1.StorageMigrationStatus
		Eventually(func(g Gomega) {
			stoppedAt = migrationOf(installStatus(ctx, g))
			g.Expect(stoppedAt.State).To(Equal(v1alpha1.MigrationRunning))
			g.Expect(stoppedAt.To).To(Equal("v1"))
			g.Expect(stoppedAt.Migrated).To(BeNumerically(">=", 600))
		}).WithContext(ctx).Should(Succeed())
		Expect(first.Stop()).To(Succeed())
		stoppedAt = migrationOf(installStatus(ctx, Default))
		Expect(stoppedAt.Continue).NotTo(BeEmpty(), "a resume point is recorded")
		By(fmt.Sprintf("killed after %d of %d objects", stoppedAt.Migrated, stoppedAt.Total))

		startOperator(slow)
		var seen []int64
		Eventually(func(g Gomega) {
			m := migrationOf(installStatus(ctx, g))
			seen = append(seen, m.Migrated)
			g.Expect(m.State).To(Equal(v1alpha1.MigrationSucceeded), "%+v", m)
		}).WithContext(ctx).WithTimeout(5 * time.Minute).Should(Succeed())
		for _, migrated := range seen {
			Expect(migrated).To(BeNumerically(">=", stoppedAt.Migrated), "progress never went back: it did not start over")
		}
		m := migrationOf(installStatus(ctx, Default))
		Expect(m.StartedAt.Equal(stoppedAt.StartedAt)).To(BeTrue(), "the same migration went on")
		Expect(m.Restarts).To(BeZero())
		patches, _ := migratorPatches(offset)
		rewritten, _ := migratorObjects(offset)
		By(fmt.Sprintf("the migrator patched %d times, %d distinct objects; the record counts %d", patches, len(rewritten), m.Migrated))
		Expect(rewritten).To(HaveLen(kept), "every object was rewritten")
		Expect(patches).To(BeNumerically("<=", kept+2*int(slow.PageSize)), "the API server saw no second pass over the objects: at most the pages in flight around the kill again")
		Expect(m.Migrated).To(BeNumerically(">=", int64(kept-int(slow.PageSize))), "the record counts the objects")
		Expect(liveCRD(ctx, Default).Status.StoredVersions).To(Equal([]string{"v1"}))
	}, NodeTimeout(10*time.Minute))

	It("drives the in-tree StorageVersionMigration when the cluster serves it and kube-controller-manager runs it", func(ctx context.Context) {
		setStorageVersion(ctx, "v2")
		startOperator(controllers.MigrationOptions{}) // as shipped: the in-tree API when served
		Eventually(func(g Gomega) {
			m := migrationOf(installStatus(ctx, g))
			g.Expect(m.Method).To(Equal(v1alpha1.MethodStorageVersionMigration))
			g.Expect(m.State).To(Equal(v1alpha1.MigrationSucceeded), "%+v", m)
		}).WithContext(ctx).WithTimeout(5 * time.Minute).Should(Succeed())
		Expect(liveCRD(ctx, Default).Status.StoredVersions).To(Equal([]string{"v2"}))
		m := migrationOf(installStatus(ctx, Default))
		Expect(m.MigrationName).To(BeEmpty(), "the StorageVersionMigration is deleted once done")
	}, NodeTimeout(10*time.Minute))

	It("stops at an object the webhook cannot convert, names it in a condition, and leaves storedVersions untouched", func(ctx context.Context) {
		By("storing, with v1 the storage version again and no operator running, a CronTab whose schedule v2 cannot express")
		setStorageVersion(ctx, "v1")
		broken := cronTab("v1", namespaceName(1), "broken-schedule", map[string]any{"cronSpec": "* *", "image": "x"})
		// The API server loads the CRD's new storage version moments after
		// the update: until then the create is converted to v2 and refused
		// (nothing is stored), so it is tried again.
		Eventually(func() error {
			err := fast.Create(ctx, broken.DeepCopy())
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		}).WithContext(ctx).Should(Succeed())
		setStorageVersion(ctx, "v2")
		Expect(liveCRD(ctx, Default).Status.StoredVersions).To(ConsistOf("v1", "v2"))

		op := startOperator(ownMigrator)
		Eventually(func(g Gomega) {
			whi := installStatus(ctx, g)
			m := migrationOf(whi)
			g.Expect(m.State).To(Equal(v1alpha1.MigrationFailed), "%+v", m)
			c := meta.FindStatusCondition(whi.Status.Conditions, v1alpha1.TypeStorageMigrated)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonMigrationFailed))
			g.Expect(c.Message).To(ContainSubstring(namespaceName(1) + "/broken-schedule"))
		}).WithContext(ctx).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(liveCRD(ctx, g).Status.StoredVersions).To(ConsistOf("v1", "v2"))
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(installEvents(ctx, g)).To(ContainElement(And(
				ContainSubstring("Warning MigrationFailed "+crdName+": "), ContainSubstring(namespaceName(1)+"/broken-schedule"))))
		}).WithContext(ctx).Should(Succeed())

		By("deleting the object (any write decodes it in the storage version, which v2 cannot: v1 stores it for that moment) and changing the install: the migration resumes and finishes")
		Expect(op.Stop()).To(Succeed()) // so that no migration towards v1 starts meanwhile
		setStorageVersion(ctx, "v1")
		Eventually(func() error { return fast.Delete(ctx, broken) }).WithContext(ctx).Should(Succeed())
		setStorageVersion(ctx, "v2")
		startOperator(ownMigrator)
		Eventually(func(g Gomega) {
			whi := installStatus(ctx, g)
			whi.Spec.DisplayName = "CronTab operator (broken object removed)"
			g.Expect(cluster.Client.Update(ctx, whi)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			m := migrationOf(installStatus(ctx, g))
			g.Expect(m.State).To(Equal(v1alpha1.MigrationSucceeded), "%+v", m)
			g.Expect(m.Restarts).To(BeNumerically(">=", 1), "the listing started over from a fresh snapshot, without the deleted object")
		}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())
		Expect(liveCRD(ctx, Default).Status.StoredVersions).To(Equal([]string{"v2"}))
	}, NodeTimeout(10*time.Minute))

	It("lets the author remove v1 and the webhook: every object reads in v2 with no conversion at all", func(ctx context.Context) {
		By("removing v1 from the CRD, as OldVersionsRemovable says it may be")
		Eventually(func(g Gomega) {
			crd := liveCRD(ctx, g)
			crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{crd.Spec.Versions[1]}
			g.Expect(crd.Spec.Versions[0].Name).To(Equal("v2"))
			g.Expect(cluster.Client.Update(ctx, crd)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())

		By("deleting the install: one version and one stored version make conversion None safe, and Hookwright sets it")
		startOperator(ownMigrator)
		Expect(cluster.Client.Delete(ctx, conversionOnlyInstall())).To(Succeed())
		Eventually(func(g Gomega) {
			crd := liveCRD(ctx, g)
			g.Expect(crd.Spec.Conversion.Strategy).To(Equal(apiextensionsv1.NoneConverter))
		}).WithContext(ctx).Should(Succeed())

		By("reading every object at v2 with no webhook: each was stored in v2, so each has v2's fields")
		after := specs(ctx, "v2")
		Expect(after).To(HaveLen(kept))
		for key, spec := range after {
			Expect(spec).To(HaveKey("minute"), "%s is stored in v2", key)
			Expect(spec).NotTo(HaveKey("cronSpec"), "%s is stored in v2", key)
		}
		allRan = true
	}, NodeTimeout(10*time.Minute))
})

// explainLostWrite prints what the API server says of an object whose last
// write the test did not read back: a GET, and every write of it in the
// audit log, and the API server's log lines about conversion and watches.
func explainLostWrite(ctx context.Context, key string, offset int64) {
	ns, name, _ := strings.Cut(key, "/")
	obj := cronTab("v2", ns, name, nil)
	err := fast.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	fmt.Fprintf(GinkgoWriter, "GET %s: err=%v resourceVersion=%s spec=%v\n", key, err, obj.GetResourceVersion(), spec)
	events, _, _ := cluster.AuditEvents(offset)
	for _, e := range events {
		if e.ObjectRef.Name == name && e.ObjectRef.Namespace == ns && e.Verb != "get" {
			fmt.Fprintf(GinkgoWriter, "audit: %s %s %d %s\n", e.Verb, e.User.Username, e.ResponseStatus.Code, e.RequestURI)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(cluster.Dir, "kube-apiserver.log"))
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, "crontabs") && (strings.Contains(line, "rror") || strings.Contains(line, "watch")) {
			fmt.Fprintln(GinkgoWriter, "apiserver:", line)
		}
	}
}

func metric(name string, labels map[string]string) float64 {
	GinkgoHelper()
	v, err := testfixtures.MetricValue(name, labels)
	Expect(err).NotTo(HaveOccurred())
	return v
}

// installEvents are the install's Events as "<type> <reason> <note>".
func installEvents(ctx context.Context, g Gomega) []string {
	whi := conversionOnlyInstall()
	list := &eventsv1.EventList{}
	g.Expect(fast.List(ctx, list, client.InNamespace(whi.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "WebhookInstall" && e.Regarding.Name == whi.Name {
			out = append(out, e.Type+" "+e.Reason+" "+e.Note)
		}
	}
	return out
}

// writeTokens is each CronTab's writeToken annotation, by namespace/name.
func writeTokens(ctx context.Context) map[string]string {
	GinkgoHelper()
	out := map[string]string{}
	for n := range namespaces {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("stable.example.com/v2")
		l.SetKind("CronTabList")
		Expect(fast.List(ctx, l, client.InNamespace(namespaceName(n)))).To(Succeed())
		for _, item := range l.Items {
			out[item.GetNamespace()+"/"+item.GetName()] = item.GetAnnotations()[writeToken]
		}
	}
	return out
}
