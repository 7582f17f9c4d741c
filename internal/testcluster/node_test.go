package testcluster_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hookwright/hookwright/internal/testcluster"
)

var _ = Describe("The node and kube-controller-manager", func() {
	It("registers a Ready node with a renewed Lease", func(ctx context.Context) {
		var node corev1.Node
		Expect(cluster.Client.Get(ctx, client.ObjectKey{Name: testcluster.NodeName}, &node)).To(Succeed())
		Expect(node.Status.Conditions).To(ContainElement(And(
			HaveField("Type", corev1.NodeReady), HaveField("Status", corev1.ConditionTrue))))
		Eventually(func(g Gomega) {
			var lease coordinationv1.Lease
			g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: "kube-node-lease", Name: testcluster.NodeName}, &lease)).To(Succeed())
			g.Expect(lease.Spec.RenewTime).NotTo(BeNil())
			g.Expect(time.Since(lease.Spec.RenewTime.Time)).To(BeNumerically("<", 30*time.Second))
		}).Should(Succeed())
	})

	It("runs one host per replica in Pods the real ReplicaSet controller made, and leaves status to the real controllers", func(ctx context.Context) {
		ns := createNamespace(ctx)
		Expect(cluster.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cert"}, Data: map[string][]byte{"tls.crt": []byte("c")}})).To(Succeed())
		dep := webhookDeployment(ns, "hook", "cert")
		three := int32(3)
		dep.Spec.Replicas = &three
		Expect(cluster.Client.Create(ctx, dep)).To(Succeed())
		started := make(chan string, 10)
		cluster.Kubelet.Serve(ns, "hook", testcluster.HostFunc(func(ctx context.Context, env *testcluster.PodEnv) error {
			started <- env.Pod
			env.MarkReady()
			<-ctx.Done()
			return nil
		}))
		waitAvailable(ctx, ns, "hook")

		var pods corev1.PodList
		Expect(cluster.Client.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
		Expect(pods.Items).To(HaveLen(3))
		var hosts []string
		for range 3 {
			hosts = append(hosts, <-started)
		}
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Name)
			Expect(p.Spec.NodeName).To(Equal(testcluster.NodeName))
			Expect(p.Status.PodIP).NotTo(BeEmpty())
			Expect(metav1.GetControllerOf(&p).Kind).To(Equal("ReplicaSet"))
		}
		Expect(hosts).To(ConsistOf(names), "one host per Pod, each told its own Pod")

		// The status writers are the real controllers: the stand-in writes
		// Pod status only.
		Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep)).To(Succeed())
		Expect(statusManagers(dep.ManagedFields)).To(ConsistOf("kube-controller-manager"))
		var sets appsv1.ReplicaSetList
		Expect(cluster.Client.List(ctx, &sets, client.InNamespace(ns))).To(Succeed())
		Expect(sets.Items).To(HaveLen(1))
		Expect(statusManagers(sets.Items[0].ManagedFields)).To(ConsistOf("kube-controller-manager"))
		Eventually(func(g Gomega) {
			var slices discoveryv1.EndpointSliceList
			g.Expect(cluster.Client.List(ctx, &slices, client.InNamespace(ns))).To(Succeed())
			g.Expect(slices.Items).To(BeEmpty(), "no Service, no EndpointSlice")
		}).Should(Succeed())
	})

	It("lets the garbage collector remove a deleted Deployment's ReplicaSets and Pods, and the namespace controller a namespace", func(ctx context.Context) {
		ns := createNamespace(ctx)
		Expect(cluster.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cert"}, Data: map[string][]byte{"tls.crt": []byte("c")}})).To(Succeed())
		dep := webhookDeployment(ns, "hook", "cert")
		Expect(cluster.Client.Create(ctx, dep)).To(Succeed())
		stopped := make(chan struct{}, 1)
		cluster.Kubelet.Serve(ns, "hook", testcluster.HostFunc(func(ctx context.Context, env *testcluster.PodEnv) error {
			env.MarkReady()
			<-ctx.Done()
			stopped <- struct{}{}
			return nil
		}))
		waitAvailable(ctx, ns, "hook")

		Expect(cluster.Client.Delete(ctx, dep)).To(Succeed()) // background propagation
		Eventually(func(g Gomega) {
			var sets appsv1.ReplicaSetList
			g.Expect(cluster.Client.List(ctx, &sets, client.InNamespace(ns))).To(Succeed())
			g.Expect(sets.Items).To(BeEmpty())
			var pods corev1.PodList
			g.Expect(cluster.Client.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}).Should(Succeed())
		Expect(stopped).To(Receive(), "the host was stopped before its Pod went")

		Expect(cluster.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Eventually(func() bool {
			err := cluster.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
			return apierrors.IsNotFound(err)
		}, time.Minute).Should(BeTrue(), "the namespace controller finalizes the namespace")
	})
})

// statusManagers are the field managers that wrote the status subresource.
func statusManagers(fields []metav1.ManagedFieldsEntry) []string {
	var managers []string
	for _, f := range fields {
		if f.Subresource == "status" {
			managers = append(managers, f.Manager)
		}
	}
	return managers
}
