package testcluster_test

import (
	"context"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hookwright/hookwright/internal/testcluster"
)

// idleHost marks itself ready and waits: enough to inspect the pod's files.
var idleHost = testcluster.HostFunc(func(ctx context.Context, env *testcluster.PodEnv) error {
	env.MarkReady()
	<-ctx.Done()
	return nil
})

var _ = Describe("The kubelet stand-in", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = createNamespace(ctx) })

	secret := func(name, crt string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Data:       map[string][]byte{"tls.crt": []byte(crt), "tls.key": []byte("key-of-" + crt)},
		}
	}
	podEnv := func(name string) *testcluster.PodEnv {
		var env *testcluster.PodEnv
		Eventually(func() bool {
			var ok bool
			env, ok = cluster.Kubelet.PodEnv(ns, name)
			return ok
		}).Should(BeTrue(), "pod stand-in never became ready")
		return env
	}

	It("publishes a Secret update only after the propagation delay, by swapping the ..data link", func(ctx context.Context) {
		const delay = 2 * time.Second
		cluster.Kubelet.SetPropagationDelay(delay)
		DeferCleanup(func() { cluster.Kubelet.SetPropagationDelay(0) })

		s := secret("cert", "first")
		Expect(cluster.Client.Create(ctx, s)).To(Succeed())
		Expect(cluster.Client.Create(ctx, webhookDeployment(ns, "hook", "cert"))).To(Succeed())
		cluster.Kubelet.Serve(ns, "hook", idleHost)
		dir, err := podEnv("hook").MountDir(testcluster.DefaultCertMount)
		Expect(err).NotTo(HaveOccurred())
		certPath := filepath.Join(dir, "tls.crt")
		Expect(os.ReadFile(certPath)).To(BeEquivalentTo("first"))
		Expect(os.Readlink(certPath)).To(Equal(filepath.Join("..data", "tls.crt")))
		firstPayload, err := os.Readlink(filepath.Join(dir, "..data"))
		Expect(err).NotTo(HaveOccurred())

		s.Data["tls.crt"] = []byte("second")
		updated := time.Now()
		Expect(cluster.Client.Update(ctx, s)).To(Succeed())
		Consistently(func() ([]byte, error) { return os.ReadFile(certPath) }, delay/2, 100*time.Millisecond).
			Should(BeEquivalentTo("first"), "the update must not show before the propagation delay")
		Eventually(func() ([]byte, error) { return os.ReadFile(certPath) }, 3*delay, 50*time.Millisecond).Should(BeEquivalentTo("second"))
		Expect(time.Since(updated)).To(BeNumerically(">=", delay))

		secondPayload, err := os.Readlink(filepath.Join(dir, "..data"))
		Expect(err).NotTo(HaveOccurred())
		Expect(secondPayload).NotTo(Equal(firstPayload), "a new timestamped folder behind ..data")
		Expect(filepath.Join(dir, firstPayload)).NotTo(BeADirectory(), "the old payload is removed after the swap")
	})

	It("shows a host only the Secrets and keys its Deployment mounts", func(ctx context.Context) {
		Expect(cluster.Client.Create(ctx, secret("mounted", "ours"))).To(Succeed())
		Expect(cluster.Client.Create(ctx, secret("not-mounted", "theirs"))).To(Succeed())
		dep := webhookDeployment(ns, "hook", "mounted")
		dep.Spec.Template.Spec.Volumes[0].Secret.Items = []corev1.KeyToPath{{Key: "tls.crt", Path: "apiserver.crt"}}
		Expect(cluster.Client.Create(ctx, dep)).To(Succeed())
		cluster.Kubelet.Serve(ns, "hook", idleHost)

		env := podEnv("hook")
		dir, err := env.MountDir(testcluster.DefaultCertMount)
		Expect(err).NotTo(HaveOccurred())
		entries, err := os.ReadDir(dir)
		Expect(err).NotTo(HaveOccurred())
		var visible []string
		for _, e := range entries {
			if e.Name()[0] != '.' {
				visible = append(visible, e.Name())
			}
		}
		Expect(visible).To(ConsistOf("apiserver.crt"), "only the projected item, not tls.key")
		Expect(os.ReadFile(filepath.Join(dir, "apiserver.crt"))).To(BeEquivalentTo("ours"))
		_, err = env.MountDir("/var/run/secrets/not-mounted")
		Expect(err).To(MatchError(ContainSubstring("mounts nothing at /var/run/secrets/not-mounted")))
	})

	It("starts the pod once a missing Secret appears, and the deployment controller then reports the Deployment available", func(ctx context.Context) {
		Expect(cluster.Client.Create(ctx, webhookDeployment(ns, "hook", "late"))).To(Succeed())
		cluster.Kubelet.Serve(ns, "hook", idleHost)
		Consistently(func() bool { _, ok := cluster.Kubelet.PodEnv(ns, "hook"); return ok }, time.Second).Should(BeFalse())
		var dep appsv1.Deployment
		Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hook"}, &dep)).To(Succeed())
		Expect(dep.Status.AvailableReplicas).To(BeZero())

		Expect(cluster.Client.Create(ctx, secret("late", "now"))).To(Succeed())
		waitAvailable(ctx, ns, "hook")
		Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hook"}, &dep)).To(Succeed())
		Expect(dep.Status.Conditions).To(ContainElement(And(
			HaveField("Type", appsv1.DeploymentAvailable), HaveField("Status", corev1.ConditionTrue))))
	})

	It("stops the pod when the Deployment scales to zero or is deleted", func(ctx context.Context) {
		Expect(cluster.Client.Create(ctx, secret("cert", "c"))).To(Succeed())
		dep := webhookDeployment(ns, "hook", "cert")
		Expect(cluster.Client.Create(ctx, dep)).To(Succeed())
		stopped := make(chan struct{}, 4)
		cluster.Kubelet.Serve(ns, "hook", testcluster.HostFunc(func(ctx context.Context, env *testcluster.PodEnv) error {
			env.MarkReady()
			<-ctx.Done()
			stopped <- struct{}{}
			return nil
		}))
		podEnv("hook")

		patch := client.MergeFrom(dep.DeepCopy())
		dep.Spec.Replicas = ptr.To[int32](0)
		Expect(cluster.Client.Patch(ctx, dep, patch)).To(Succeed())
		Eventually(stopped).Should(Receive())
		Eventually(func() bool { _, ok := cluster.Kubelet.PodEnv(ns, "hook"); return ok }).Should(BeFalse())

		patch = client.MergeFrom(dep.DeepCopy())
		dep.Spec.Replicas = ptr.To[int32](1)
		Expect(cluster.Client.Patch(ctx, dep, patch)).To(Succeed())
		podEnv("hook")
		Expect(cluster.Client.Delete(ctx, dep)).To(Succeed())
		Eventually(stopped).Should(Receive())
	})
})
