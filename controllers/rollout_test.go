package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/internal/testcluster"
)

// podAnswers counts, per Pod, the conversion requests its host answered,
// and those it answered after SIGTERM (draining).
type podAnswers struct {
	mu       sync.Mutex
	answered map[string]int
	draining map[string]int
}

// servePerPod runs the widget converter in every Pod of the Deployment,
// counting which Pod answered each request.
func servePerPod(ns, deployment string) *podAnswers {
	answers := &podAnswers{answered: map[string]int{}, draining: map[string]int{}}
	converter := &testcluster.WidgetConverter{}
	cluster.Kubelet.Serve(ns, deployment, testcluster.HostFunc(func(ctx context.Context, env *testcluster.PodEnv) error {
		counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			answers.mu.Lock()
			answers.answered[env.Pod]++
			if ctx.Err() != nil {
				answers.draining[env.Pod]++
			}
			answers.mu.Unlock()
			converter.ServeHTTP(w, r)
		})
		return testcluster.HandlerHost{Handler: counted}.Run(ctx, env)
	}))
	return answers
}

// replicaSetOf is the ReplicaSet a Pod's generated name comes from.
func replicaSetOf(pod string) string { return pod[:strings.LastIndex(pod, "-")] }

var _ = Describe("A webhook Deployment rolled by the real deployment controller", func() {
	It("rolls 3 replicas with maxSurge 1 and maxUnavailable 0: every tunnel goes to a ready pod and no conversion fails", func(ctx context.Context) {
		ns, group, crdName := widgetNamespace(ctx)
		answers := servePerPod(ns, "widget-webhook")
		whi := newInstall(ns, "widgets", "widget-webhook", crdName)
		spec := &whi.Spec.Install.Spec.Deployments[0].Spec
		spec.Replicas = ptrTo(int32(3))
		spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxSurge: ptrTo(intstr.FromInt32(1)), MaxUnavailable: ptrTo(intstr.FromInt32(0)),
		}}
		Expect(k8s.Create(ctx, whi)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		service := types.NamespacedName{Namespace: ns, Name: strings.TrimPrefix(conversionService(getCRD(ctx, crdName)), ns+"/")}
		oldSets := replicaSets(ctx, ns)
		Expect(oldSets).To(HaveLen(1))

		readers := startReaders(ctx, group, ns, createWidgets(ctx, group, ns, 5), 4)
		rollStart := time.Now()
		whi = getInstall(ctx, ns, "widgets")
		patch := client.MergeFrom(whi.DeepCopy())
		whi.Spec.Install.Spec.Deployments[0].Spec.Template.Spec.Containers[0].Image = "example.com/widget-webhook:v2"
		Expect(k8s.Patch(ctx, whi, patch)).To(Succeed())

		// The roll is over when the new ReplicaSet runs 3 ready Pods and no
		// Pod of the old one is left, not even terminating.
		Eventually(func(g Gomega) {
			var dep appsv1.Deployment
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widget-webhook"}, &dep)).To(Succeed())
			g.Expect(dep.Status.ObservedGeneration).To(Equal(dep.Generation))
			g.Expect(dep.Status.UpdatedReplicas).To(BeEquivalentTo(3))
			g.Expect(dep.Status.AvailableReplicas).To(BeEquivalentTo(3))
			g.Expect(dep.Status.Replicas).To(BeEquivalentTo(3))
			var pods corev1.PodList
			g.Expect(k8s.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(3))
			for _, p := range pods.Items {
				g.Expect(replicaSetOf(p.Name)).NotTo(Equal(oldSets[0]))
			}
		}, 2*time.Minute).Should(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		time.Sleep(time.Second) // reads after the roll, on the new pods only
		readers.Halt()
		reportReads("rolled under the deployment controller", readers)

		var tunnels, toNew int
		for _, c := range cluster.Connections() {
			if c.Service != service || c.Time.Before(rollStart) {
				continue
			}
			tunnels++
			Expect(c.Ready).To(BeTrue(), "tunnel to %s (%s) at %s went to an endpoint that was not ready", c.Pod, c.PodIP, c.Time.Format(time.RFC3339Nano))
			if replicaSetOf(c.Pod.Name) != oldSets[0] {
				toNew++
			}
		}
		Expect(toNew).To(BeNumerically(">", 0), "the roll moved traffic to the new pods")

		answers.mu.Lock()
		defer answers.mu.Unlock()
		bySet := map[string]int{}
		drained := 0
		for pod, n := range answers.answered {
			bySet[replicaSetOf(pod)] += n
			drained += answers.draining[pod]
		}
		Expect(bySet).To(HaveLen(2), "old and new pods both answered: %v", bySet)
		AddReportEntry("rollout traffic", fmt.Sprintf("%d tunnels since the roll began, all to ready endpoints (%d to new pods); requests answered per ReplicaSet %v; %d answered by a draining pod on a connection it accepted while ready",
			tunnels, toNew, bySet, drained), ReportEntryVisibilityAlways)
	})
})

func replicaSets(ctx context.Context, ns string) []string {
	var sets appsv1.ReplicaSetList
	ExpectWithOffset(1, k8s.List(ctx, &sets, client.InNamespace(ns))).To(Succeed())
	var names []string
	for _, rs := range sets.Items {
		names = append(names, rs.Name)
	}
	return names
}
