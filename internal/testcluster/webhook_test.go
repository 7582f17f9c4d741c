package testcluster_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/internal/testcluster"
)

// webhookFixture is a namespace with a two-version CRD of its own group, a
// CA, a serving Secret, a Deployment mounting it, a Service, and the
// converter running in the Deployment's pod stand-in.
type webhookFixture struct {
	ns, group, service string
	ca                 *certs.CA
	converter          *testcluster.WidgetConverter
	crd                *apiextensionsv1.CustomResourceDefinition
}

func newWebhookFixture(ctx context.Context) *webhookFixture {
	ns := createNamespace(ctx)
	f := &webhookFixture{ns: ns, group: ns + ".test.hookwright.dev", service: "widget-webhook", converter: &testcluster.WidgetConverter{}}
	var err error
	f.ca, err = certs.NewCA("test-ca", certs.ECDSAP256, time.Hour, time.Now())
	Expect(err).NotTo(HaveOccurred())
	serving, err := f.ca.IssueServing(certs.ServiceDNSNames(f.service, ns), certs.ECDSAP256, time.Hour, time.Now())
	Expect(err).NotTo(HaveOccurred())

	Expect(cluster.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "serving-cert"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": serving.CertPEM, "tls.key": serving.KeyPEM},
	})).To(Succeed())
	Expect(cluster.Client.Create(ctx, webhookDeployment(ns, "widget-webhook", "serving-cert"))).To(Succeed())
	Expect(cluster.Client.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: f.service},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "widget-webhook"},
			Ports:    []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(9443)}},
		},
	})).To(Succeed())
	cluster.Kubelet.Serve(ns, "widget-webhook", testcluster.HandlerHost{Handler: f.converter})
	waitAvailable(ctx, ns, "widget-webhook")

	f.crd = testcluster.WidgetCRD(f.group, ns, f.service, f.ca.Pair.CertPEM)
	createCRD(ctx, f.crd)
	// A spec may break the conversion on purpose (a wrong caBundle, a
	// Service without pods) while objects are stored. Left so, every list
	// of that resource fails, and kube-controller-manager's garbage
	// collector, which lists every resource, stops syncing: later specs'
	// deletions then hang. So the working conversion is restored, and the
	// CRD deleted with its objects, while the webhook still serves.
	working := f.crd.Spec.Conversion.DeepCopy()
	DeferCleanup(func(ctx SpecContext) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(f.crd), crd)).To(Succeed())
		patch := client.MergeFrom(crd.DeepCopy())
		crd.Spec.Conversion = working
		Expect(cluster.Client.Patch(ctx, crd, patch)).To(Succeed())
		Eventually(func() error { // a list at v2 converts every stored object
			list := &unstructured.UnstructuredList{}
			apiVersion, kind := f.gvk("v2")
			list.SetAPIVersion(apiVersion)
			list.SetKind(kind + "List")
			return cluster.Client.List(ctx, list, client.InNamespace(f.ns))
		}).Should(Succeed())
		Expect(cluster.Client.Delete(ctx, crd)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(cluster.Client.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{}))
		}, time.Minute).Should(BeTrue(), "CRD %s deleted with its objects", crd.Name)
	})
	return f
}

func (f *webhookFixture) gvk(version string) (string, string) {
	return f.group + "/" + version, "Widget"
}

func (f *webhookFixture) newWidget(version, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	apiVersion, kind := f.gvk(version)
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(f.ns)
	u.SetName(name)
	return u
}

func (f *webhookFixture) get(ctx context.Context, version, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	apiVersion, kind := f.gvk(version)
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u, cluster.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, u)
}

func webhookDeployment(ns, name, secret string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "webhook", Image: "example.com/webhook:v1",
						Ports:        []corev1.ContainerPort{{Name: "webhook", ContainerPort: 9443}},
						VolumeMounts: []corev1.VolumeMount{{Name: "cert", MountPath: testcluster.DefaultCertMount, ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}},
				},
			},
		},
	}
}

func createNamespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tc-"}}
	Expect(cluster.Client.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

func createCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) {
	Expect(cluster.Client.Create(ctx, crd)).To(Succeed())
	Eventually(func(g Gomega) {
		var got apiextensionsv1.CustomResourceDefinition
		g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(crd), &got)).To(Succeed())
		established := false
		for _, c := range got.Status.Conditions {
			established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
		}
		g.Expect(established).To(BeTrue())
		// Established comes before discovery serves the group; the client
		// maps kinds through discovery.
		_, err := cluster.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind})
		g.Expect(err).NotTo(HaveOccurred())
	}).Should(Succeed())
}

func waitAvailable(ctx context.Context, ns, name string) {
	Eventually(func(g Gomega) {
		var dep appsv1.Deployment
		g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &dep)).To(Succeed())
		g.Expect(dep.Status.ObservedGeneration).To(Equal(dep.Generation))
		g.Expect(dep.Status.AvailableReplicas).To(Equal(*dep.Spec.Replicas))
	}).Should(Succeed(), fmt.Sprintf("deployment %s/%s never became available", ns, name))
}

func specField(u *unstructured.Unstructured, name string) string {
	v, _, _ := unstructured.NestedString(u.Object, "spec", name)
	return v
}
