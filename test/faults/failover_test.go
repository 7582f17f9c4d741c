package faults_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/internal/harness"
	"github.com/hookwright/hookwright/internal/testfixtures"
)

var _ = Describe("Two replicas with leader election", func() {
	It("lets the follower complete a rotation the killed leader started, exactly once", func(ctx context.Context) {
		leaseNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "hookwright-system-"}}
		Expect(k8s.Create(ctx, leaseNS)).To(Succeed())
		replica := func(identity string) *harness.Operator {
			op, err := harness.StartOperator(cluster.Config, GinkgoLogr.WithName(identity),
				harness.WithLeaderElection(harness.LeaderElection{Namespace: leaseNS.Name, Identity: identity, LeaseDuration: 4 * time.Second}))
			Expect(err).NotTo(HaveOccurred())
			return op
		}
		a, b := replica("replica-a"), replica("replica-b")
		leader, follower := a, b
		Eventually(func() bool {
			select {
			case <-a.Elected():
				return true
			case <-b.Elected():
				leader, follower = b, a
				return true
			default:
				return false
			}
		}).Should(BeTrue())
		DeferCleanup(func() { Expect(follower.Stop()).To(Succeed()) })

		f := newFixture(ctx)
		whi := f.install()
		// A long trust overlap keeps the rotation open while the leader dies.
		whi.Spec.Certificates.TrustOverlap = &metav1.Duration{Duration: 8 * time.Second}
		Expect(k8s.Create(ctx, whi)).To(Succeed())
		Eventually(func(g Gomega) { f.settled(ctx, g) }).Should(Succeed())

		completedCA := map[string]string{"kind": "CA", "reason": "Manual", "outcome": "Succeeded"}
		completedBefore, err := testfixtures.MetricValue("hookwright_rotations_total", completedCA)
		Expect(err).NotTo(HaveOccurred())
		const request = "ca: failover drill"
		f.requestRotation(ctx, request)
		Eventually(func(g Gomega) {
			whi := &v1alpha1.WebhookInstall{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "widgets"}, whi)).To(Succeed())
			g.Expect(whi.Status.Rotations).To(ContainElement(And(
				HaveField("Kind", v1alpha1.RotationCA), HaveField("Message", "failover drill"), HaveField("Outcome", v1alpha1.RotationInProgress))))
		}).Should(Succeed())
		// Events are written asynchronously after the status: wait for the
		// leader's to land, or stopping it drops it (as a real rotation's
		// would be lost with a dying pod; .status.rotations is the record).
		Eventually(func(g Gomega) {
			g.Expect(eventCount(ctx, g, f.ns, "CARotationStarted")).To(Equal(1))
		}).Should(Succeed())
		By("killing the leader mid-rotation")
		Expect(leader.Stop()).To(Succeed())
		select {
		case <-follower.Elected():
			Fail("the follower led while the leader was alive")
		default:
		}

		Eventually(follower.Elected(), 30*time.Second).Should(BeClosed())
		Eventually(func(g Gomega) {
			whi := f.settled(ctx, g)
			g.Expect(whi.Status.HandledRotationRequest).To(Equal(request))
			g.Expect(countRecords(whi, v1alpha1.RotationCA, "failover drill")).To(Equal(1), "%+v", whi.Status.Rotations)
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(countRecords(f.settled(ctx, g), v1alpha1.RotationCA, "failover drill")).To(Equal(1))
		}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
		f.expectNoFailedReads("leader failover mid-rotation")

		By("checking the audit: Events and metrics count the rotation once")
		Expect(testfixtures.MetricValue("hookwright_rotations_total", completedCA)).To(Equal(completedBefore + 1))
		Eventually(func(g Gomega) {
			g.Expect(eventCount(ctx, g, f.ns, "CARotationCompleted")).To(Equal(1))
		}).Should(Succeed())
		// The follower took the rotation over as under way: it tells the
		// end, not the start a second time.
		Consistently(func(g Gomega) {
			g.Expect(eventCount(ctx, g, f.ns, "CARotationStarted")).To(Equal(1))
			g.Expect(eventCount(ctx, g, f.ns, "CARotationCompleted")).To(Equal(1))
		}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
	})
})

// eventCount is how many times an Event of this reason occurred in the
// namespace, counting each Event's series.
func eventCount(ctx context.Context, g Gomega, ns, reason string) int {
	var events eventsv1.EventList
	g.Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
	n := 0
	for _, e := range events.Items {
		switch {
		case e.Reason != reason:
		case e.Series != nil:
			n += int(e.Series.Count)
		default:
			n++
		}
	}
	return n
}
