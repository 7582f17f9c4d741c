package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/internal/testcluster"
)

// endpointLag is how late the network applies an endpoint's removal in
// the spec below: longer than a pod's own drain after SIGTERM
// (testcluster.DefaultDrainPeriod), shorter than the preStop sleep and
// the drain together.
const endpointLag = 5 * time.Second

// serveClosingConnections runs the widget converter for the namespace's
// widget-webhook, closing the connection after every answer, so every
// conversion opens a new tunnel and the network picks an endpoint for
// each: what the API server does whenever it opens a connection (a new
// caBundle, a webhook that closed an idle one).
func serveClosingConnections(ns string) {
	converter := &testcluster.WidgetConverter{}
	cluster.Kubelet.Serve(ns, "widget-webhook", testcluster.HandlerHost{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		converter.ServeHTTP(w, r)
	})})
}

var _ = Describe("A webhook pod removed while the network still routes to it", func() {
	It("keeps serving through its preStop drain: a roll with endpoint removals applied late fails no conversion", func(ctx context.Context) {
		Expect(endpointLag).To(BeNumerically(">", testcluster.DefaultDrainPeriod))
		Expect(endpointLag).To(BeNumerically("<", testcluster.DefaultDrainPeriod+desired.DrainSeconds*time.Second))

		ns, group, crdName := widgetNamespace(ctx)
		serveClosingConnections(ns)
		Expect(k8s.Create(ctx, newInstall(ns, "widgets", "widget-webhook", crdName))).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		var dep appsv1.Deployment
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widget-webhook"}, &dep)).To(Succeed())
		Expect(dep.Spec.Template.Spec.Containers[0].Lifecycle).To(Equal(&corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: desired.DrainSeconds}}}),
			"Hookwright gives a webhook container without a preStop hook the drain sleep")
		oldSets := replicaSets(ctx, ns)
		Expect(oldSets).To(HaveLen(1))

		cluster.SetEndpointLag(endpointLag)
		DeferCleanup(func() { cluster.SetEndpointLag(0) })
		readers := startReaders(ctx, group, ns, createWidgets(ctx, group, ns, 3), 2)
		rollStart := time.Now()
		whi := getInstall(ctx, ns, "widgets")
		patch := client.MergeFrom(whi.DeepCopy())
		whi.Spec.Install.Spec.Deployments[0].Spec.Template.Spec.Containers[0].Image = "example.com/widget-webhook:v2"
		Expect(k8s.Patch(ctx, whi, patch)).To(Succeed())

		By("waiting until the old pod is gone, then until the lagging network has let it go too")
		var gone time.Time
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(k8s.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(1))
			g.Expect(replicaSetOf(pods.Items[0].Name)).NotTo(Equal(oldSets[0]))
			gone = time.Now()
		}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
		time.Sleep(endpointLag + time.Second)
		readers.Halt()
		reportReads("rolled with endpoint removals applied late", readers)

		var stale, toOld int
		var lastToOld time.Time
		for _, c := range cluster.Connections() {
			if c.Service.Namespace != ns || c.Time.Before(rollStart) {
				continue
			}
			if c.Stale {
				stale++
			}
			if replicaSetOf(c.Pod.Name) == oldSets[0] {
				toOld++
				lastToOld = c.Time
			}
		}
		// The network did route to the old pod after its EndpointSlice
		// no longer had it ready: the drain was needed, not idle.
		Expect(stale).To(BeNumerically(">", 0), "no tunnel used the lagging view: the spec did not exercise the lag")
		AddReportEntry("late endpoint removal", fmt.Sprintf("%d tunnels to the old pod since the roll began, %d by the lagging view only; the last %s after the old Pod was gone from the API",
			toOld, stale, lastToOld.Sub(gone).Round(time.Millisecond)), ReportEntryVisibilityAlways)
	})

	It("drains through a CA rotation without trust overlap: with endpoint removals applied late, no conversion fails and no prune is held", func(ctx context.Context) {
		ns, group, crdName := widgetNamespace(ctx)
		serveClosingConnections(ns)
		install := newInstall(ns, "widgets", "widget-webhook", crdName)
		// The old CA may leave as soon as the pods serve the new one.
		install.Spec.Certificates.TrustOverlap = &metav1.Duration{}
		Expect(k8s.Create(ctx, install)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)

		cluster.SetEndpointLag(endpointLag)
		DeferCleanup(func() { cluster.SetEndpointLag(0) })
		readers := startReaders(ctx, group, ns, createWidgets(ctx, group, ns, 3), 2)
		request := "ca: old pods drain"
		requestRotation(ctx, ns, request)
		Eventually(func(g Gomega) {
			whi := installIn(ctx, g, ns, "widgets")
			g.Expect(whi.Status.HandledRotationRequest).To(Equal(request))
			for _, rec := range whi.Status.Rotations {
				g.Expect(rec.Outcome).To(Equal(v1alpha1.RotationSucceeded), "%+v; %s", rec, condition(whi, v1alpha1.TypeCertificatesReady).Message)
			}
		}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
		time.Sleep(endpointLag + time.Second)
		readers.Halt()
		reportReads("CA rotated with endpoint removals applied late", readers)
		Expect(rotationEvents(ctx, Default, ns)).NotTo(HaveKey("CARotationHeld"), "a pod that still served the old chain held the prune")
	})
})
