package controllers_test

import (
	"context"
	"encoding/json"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/internal/testcluster"
	"github.com/hookwright/hookwright/internal/testfixtures"
)

// widgetNamespace is a fresh namespace with its own widget CRD, served
// and established: the ground of most specs.
func widgetNamespace(ctx context.Context) (ns, group, crdName string) {
	ns = createNamespace(ctx)
	group = ns + ".hookwright.test"
	crdName = "widgets." + group
	createWidgetCRD(ctx, group)
	return ns, group, crdName
}

func createNamespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ctl-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// createWidgetCRD creates the two-version widget CRD of group with its
// conversion unset, and waits until it is served.
func createWidgetCRD(ctx context.Context, group string) *apiextensionsv1.CustomResourceDefinition {
	crd := testcluster.WidgetCRD(group, "", "", nil)
	Expect(k8s.Create(ctx, crd)).To(Succeed())
	waitEstablished(ctx, crd.Name)
	return crd
}

func waitEstablished(ctx context.Context, name string) {
	Eventually(func(g Gomega) {
		crd := getCRD(ctx, name)
		established := false
		for _, c := range crd.Status.Conditions {
			established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
		}
		g.Expect(established).To(BeTrue())
	}).Should(Succeed())
}

func getCRD(ctx context.Context, name string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
	return crd
}

// newInstall declares one webhook deployment serving crdName's conversion.
func newInstall(ns, name, deployment, crdName string) *v1alpha1.WebhookInstall {
	return testfixtures.WidgetInstall(ns, name, deployment, crdName)
}

// serve makes the kubelet stand-in run the widget converter for a deployment.
func serve(ns, deployment string) *testcluster.WidgetConverter {
	converter := &testcluster.WidgetConverter{}
	cluster.Kubelet.Serve(ns, deployment, testcluster.HandlerHost{Handler: converter})
	return converter
}

// installIn reads an install inside Eventually(func(g Gomega)): a failed
// read retries instead of failing the spec.
func installIn(ctx context.Context, g Gomega, ns, name string) *v1alpha1.WebhookInstall {
	whi := &v1alpha1.WebhookInstall{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, whi)).To(Succeed())
	return whi
}

func getInstall(ctx context.Context, ns, name string) *v1alpha1.WebhookInstall {
	whi := &v1alpha1.WebhookInstall{}
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, whi)).To(Succeed())
	return whi
}

func eventuallyPhase(ctx context.Context, ns, name string, phase v1alpha1.InstallPhase, reason string) *v1alpha1.WebhookInstall {
	var whi *v1alpha1.WebhookInstall
	EventuallyWithOffset(1, func(g Gomega) {
		whi = &v1alpha1.WebhookInstall{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, whi)).To(Succeed())
		g.Expect(whi.Status.Phase).To(Equal(phase), "status: %s/%s", whi.Status.Reason, whi.Status.Message)
		g.Expect(whi.Status.Reason).To(Equal(reason))
		g.Expect(whi.Status.ObservedGeneration).To(Equal(whi.Generation))
	}).Should(Succeed())
	return whi
}

func widget(group, version, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(group + "/" + version)
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func readWidget(ctx context.Context, group, version, ns, name string) (*unstructured.Unstructured, error) {
	u := widget(group, version, ns, name, nil)
	return u, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
}

func specField(u *unstructured.Unstructured, field string) string {
	v, _, _ := unstructured.NestedString(u.Object, "spec", field)
	return v
}

// conversionService is the Service the CRD's conversion calls, or "".
func conversionService(crd *apiextensionsv1.CustomResourceDefinition) string {
	c := crd.Spec.Conversion
	if c == nil || c.Webhook == nil || c.Webhook.ClientConfig == nil || c.Webhook.ClientConfig.Service == nil {
		return ""
	}
	return c.Webhook.ClientConfig.Service.Namespace + "/" + c.Webhook.ClientConfig.Service.Name
}

// conversionManagers lists the field managers owning a field under
// spec.conversion (owning only the map's own entry "." writes nothing).
func conversionManagers(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var managers []string
	for _, mf := range crd.ManagedFields {
		if mf.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Spec struct {
				Conversion map[string]json.RawMessage `json:"f:conversion"`
			} `json:"f:spec"`
		}
		Expect(json.Unmarshal(mf.FieldsV1.Raw, &fields)).To(Succeed())
		for key := range fields.Spec.Conversion {
			if key != "." {
				managers = append(managers, mf.Manager)
				break
			}
		}
	}
	return managers
}

func condition(whi *v1alpha1.WebhookInstall, conditionType string) metav1.Condition {
	for _, c := range whi.Status.Conditions {
		if c.Type == conditionType {
			return c
		}
	}
	return metav1.Condition{}
}

// metricValue reads a metric of the manager's registry (testfixtures.MetricValue).
func metricValue(name string, labels map[string]string) float64 {
	v, err := testfixtures.MetricValue(name, labels)
	Expect(err).NotTo(HaveOccurred())
	return v
}

// reconcileCount reads controller-runtime's own reconcile counter.
func reconcileCount() float64 {
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "webhookinstall" {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// managerWrites returns the write requests the operator made since offset.
func managerWrites(offset int64) ([]testcluster.AuditEvent, int64) {
	events, next, err := cluster.AuditEvents(offset)
	Expect(err).NotTo(HaveOccurred())
	var writes []testcluster.AuditEvent
	for _, e := range events {
		if e.User.Username == managerUser && e.IsWrite() {
			writes = append(writes, e)
		}
	}
	return writes, next
}

var _ = desired.FieldManager // the tests assert on this manager name
