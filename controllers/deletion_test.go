package controllers_test

import (
	"context"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

var _ = Describe("Deleting a WebhookInstall", func() {
	var ns, group, crdName string
	BeforeEach(func(ctx context.Context) {
		ns = createNamespace(ctx)
		group = ns + ".hookwright.test"
		crdName = "widgets." + group
		serve(ns, "widget-webhook")
	})

	deleteAndWait := func(ctx context.Context, name string) {
		Expect(k8s.Delete(ctx, getInstall(ctx, ns, name))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.WebhookInstall{}))
		}).Should(BeTrue())
	}

	It("sets conversion None when one version is stored and all schemas match, and removes what it made, without a failed request", func(ctx context.Context) {
		crd := createWidgetCRD(ctx, group)
		patch := client.MergeFrom(crd.DeepCopy())
		crd.Spec.Versions[1].Schema = crd.Spec.Versions[0].Schema.DeepCopy()
		Expect(k8s.Patch(ctx, crd, patch)).To(Succeed())
		preexisting := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "preexisting"}}
		Expect(k8s.Create(ctx, preexisting)).To(Succeed())
		install := newInstall(ns, "widgets", "widget-webhook", crdName)
		helper := *install.Spec.Install.Spec.Deployments[0].DeepCopy()
		helper.Name = "helper"
		helper.Spec.Selector.MatchLabels = map[string]string{"app": "helper"}
		helper.Spec.Template.Labels = map[string]string{"app": "helper"}
		helper.Spec.Template.Spec.ServiceAccountName = preexisting.Name
		install.Spec.Install.Spec.Deployments = append(install.Spec.Install.Spec.Deployments, helper)
		Expect(k8s.Create(ctx, install)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		created := &corev1.ServiceAccount{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widget-webhook"}, created)).To(Succeed())
		Expect(created.Labels).To(HaveKeyWithValue(desired.LabelManagedBy, desired.ManagedByValue), "Hookwright created it")

		_, offset := managerWrites(0)
		deleteAndWait(ctx, "widgets")
		Eventually(func(g Gomega) {
			events, _, err := cluster.AuditEvents(offset)
			g.Expect(err).NotTo(HaveOccurred())
			var ours, failed []string
			for _, e := range events {
				if e.User.Username != managerUser || (e.ObjectRef.Namespace != ns && e.ObjectRef.Name != crdName) {
					continue
				}
				ours = append(ours, e.Verb+" "+e.RequestURI)
				if e.ResponseStatus.Code == http.StatusConflict {
					failed = append(failed, e.Verb+" "+e.RequestURI)
				}
			}
			g.Expect(ours).To(ContainElement(HavePrefix("delete /api/v1/namespaces/"+ns+"/serviceaccounts/widget-webhook")))
			g.Expect(failed).To(BeEmpty(), "the deletion's requests: %v", ours)
		}).Should(Succeed())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widget-webhook"}, &corev1.ServiceAccount{}))).
			To(BeTrue(), "the ServiceAccount Hookwright created is deleted with the install")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(preexisting), preexisting)).To(Succeed(), "a ServiceAccount that existed before is kept")
		released := getCRD(ctx, crdName)
		Expect(released.Spec.Conversion.Strategy).To(Equal(apiextensionsv1.NoneConverter))
		Expect(released.Annotations).NotTo(HaveKey(v1alpha1.AnnotationOwner))
		Expect(conversionManagers(released)).NotTo(ContainElement(desired.FieldManager))
		for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widget-webhook"}, obj)
			if _, isService := obj.(*corev1.Service); isService {
				err = k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widget-webhook-service"}, obj)
			}
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T removed", obj)
		}
		var secrets corev1.SecretList
		Expect(k8s.List(ctx, &secrets, client.InNamespace(ns), client.MatchingLabels{desired.LabelInstall: "widgets"})).To(Succeed())
		Expect(secrets.Items).To(BeEmpty())
	})

	It("leaves conversion in place when objects are stored in two versions, says so on the CRD, and a re-install takes over", func(ctx context.Context) {
		crd := createWidgetCRD(ctx, group)
		Expect(k8s.Create(ctx, newInstall(ns, "widgets", "widget-webhook", crdName))).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)

		Expect(k8s.Create(ctx, widget(group, "v1", ns, "stored-as-v1", map[string]any{"value": "1"}))).To(Succeed())
		crd = getCRD(ctx, crdName)
		patch := client.MergeFrom(crd.DeepCopy())
		crd.Spec.Versions[0].Storage, crd.Spec.Versions[1].Storage = false, true
		Expect(k8s.Patch(ctx, crd, patch)).To(Succeed())
		Eventually(func() []string { return getCRD(ctx, crdName).Status.StoredVersions }).Should(ConsistOf("v1", "v2"))
		Eventually(func() error {
			return k8s.Create(ctx, widget(group, "v2", ns, "stored-as-v2", map[string]any{"amount": "2"}))
		}).Should(Succeed())

		deleteAndWait(ctx, "widgets")
		left := getCRD(ctx, crdName)
		Expect(conversionService(left)).To(Equal(ns+"/widget-webhook-service"), "switching to None would serve v1 objects under the v2 schema")
		Expect(left.Annotations[v1alpha1.AnnotationReleasedBy]).To(Equal(ns + "/widgets"))
		Expect(left.Annotations).NotTo(HaveKey(v1alpha1.AnnotationOwner))
		Eventually(func(g Gomega) {
			var events eventsv1.EventList
			g.Expect(k8s.List(ctx, &events)).To(Succeed())
			found := false
			for _, e := range events.Items {
				found = found || (e.Regarding.Name == crdName && e.Reason == "ConversionLeftInPlace")
			}
			g.Expect(found).To(BeTrue(), "an Event on the CRD explains why conversion stays")
		}).Should(Succeed())

		Expect(k8s.Create(ctx, newInstall(ns, "widgets-again", "widget-webhook", crdName))).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets-again", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		again := getCRD(ctx, crdName)
		Expect(again.Annotations[v1alpha1.AnnotationOwner]).To(Equal(ns + "/widgets-again"))
		Expect(again.Annotations).NotTo(HaveKey(v1alpha1.AnnotationReleasedBy))
		asV1, err := readWidget(ctx, group, "v1", ns, "stored-as-v2")
		Expect(err).NotTo(HaveOccurred())
		Expect(specField(asV1, "value")).To(Equal("2"))
	})
})

var _ = Describe("A new version that drops a conversion CRD", func() {
	It("releases the dropped CRD safely and keeps serving the others", func(ctx context.Context) {
		ns := createNamespace(ctx)
		kept, dropped := ns+".kept.hookwright.test", ns+".dropped.hookwright.test"
		createWidgetCRD(ctx, kept)
		droppedCRD := createWidgetCRD(ctx, dropped)
		sameSchemas := client.MergeFrom(droppedCRD.DeepCopy())
		droppedCRD.Spec.Versions[1].Schema = droppedCRD.Spec.Versions[0].Schema.DeepCopy()
		Expect(k8s.Patch(ctx, droppedCRD, sameSchemas)).To(Succeed())
		serve(ns, "widget-webhook")
		install := newInstall(ns, "widgets", "widget-webhook", "widgets."+kept)
		install.Spec.CustomResourceDefinitions.Owned = append(install.Spec.CustomResourceDefinitions.Owned,
			v1alpha1.CRDDescription{Name: "widgets." + dropped, Version: "v1", Kind: "Widget"})
		install.Spec.WebhookDefinitions[0].ConversionCRDs = append(install.Spec.WebhookDefinitions[0].ConversionCRDs, "widgets."+dropped)
		Expect(k8s.Create(ctx, install)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		Expect(getCRD(ctx, "widgets."+dropped).Annotations[v1alpha1.AnnotationOwner]).To(Equal(ns + "/widgets"))

		whi := getInstall(ctx, ns, "widgets")
		patch := client.MergeFrom(whi.DeepCopy())
		whi.Spec.Version = "1.1.0"
		whi.Spec.WebhookDefinitions[0].ConversionCRDs = []string{"widgets." + kept}
		Expect(k8s.Patch(ctx, whi, patch)).To(Succeed())

		Eventually(func(g Gomega) {
			released := getCRD(ctx, "widgets."+dropped)
			g.Expect(released.Annotations).NotTo(HaveKey(v1alpha1.AnnotationOwner))
			g.Expect(released.Spec.Conversion.Strategy).To(Equal(apiextensionsv1.NoneConverter), "one stored version, one schema: None is safe")
		}).Should(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		Expect(conversionService(getCRD(ctx, "widgets."+kept))).To(Equal(ns + "/widget-webhook-service"))
		Expect(getInstall(ctx, ns, "widgets").Status.ConversionCRDs).To(ConsistOf(HaveField("Name", "widgets."+kept)))
	})
})
