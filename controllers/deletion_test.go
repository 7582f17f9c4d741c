package controllers_test

import (
	"context"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
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
			g.Expect(ours).To(ContainElement(HavePrefix("delete /api/v1/namespaces/" + ns + "/serviceaccounts/widget-webhook")))
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
		expectNoWorkloadsLeft(ctx, ns)
	})

	It("keeps serving a CRD stored in two versions after deletion, rotating its CA, with zero failed reads, until another install takes it over", func(ctx context.Context) {
		cluster.Kubelet.SetPropagationDelay(2 * time.Second)
		DeferCleanup(func() { cluster.Kubelet.SetPropagationDelay(0) })
		createWidgetCRD(ctx, group)
		install := newInstall(ns, "widgets", "widget-webhook", crdName)
		install.Spec.Certificates.TrustOverlap = &metav1.Duration{Duration: 2 * time.Second}
		Expect(k8s.Create(ctx, install)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		names := storeInTwoVersions(ctx, group, ns, crdName)
		readers := startReaders(ctx, group, ns, names, 4)
		soakEnd := time.Now().Add(60 * time.Second)

		By("deleting the install: it keeps the webhook serving, and says what, why and how to finish")
		Expect(k8s.Delete(ctx, getInstall(ctx, ns, "widgets"))).To(Succeed())
		kept := eventuallyReason(ctx, ns, "widgets", v1alpha1.ReasonKeptAlive)
		Expect(kept.DeletionTimestamp).NotTo(BeNil())
		Expect(kept.Status.Message).To(ContainSubstring("CRD(s) " + crdName + " through service " + ns + "/widget-webhook-service"))
		Expect(kept.Status.Message).To(ContainSubstring("objects are stored in versions [v1 v2]"))
		Expect(kept.Status.Message).To(ContainSubstring("migrate storage"))
		Expect(kept.Status.Message).To(ContainSubstring("create or edit a WebhookInstall (any namespace) that lists them"))
		Expect(kept.Status.ConversionCRDs).To(ConsistOf(HaveField("Name", crdName)))
		expectServing(ctx, ns, "widgets", crdName, "widget-webhook")
		Eventually(func(g Gomega) {
			g.Expect(crdEventReasons(ctx, g, crdName)).To(ContainElement("ConversionKeptAlive"), "an Event on the CRD says who keeps it and why")
		}).Should(Succeed())

		By("rotating the CA of the deleted install: the kept CRD's caBundle follows")
		rotateCA(ctx, ns, "widgets", crdName, "ca: rotated while kept alive")
		Expect(getInstall(ctx, ns, "widgets").Status.Reason).To(Equal(v1alpha1.ReasonKeptAlive))

		By("reading for 60 s in all; the kept install's resyncs write nothing")
		_, offset := managerWrites(0)
		time.Sleep(time.Until(soakEnd))
		expectServing(ctx, ns, "widgets", crdName, "widget-webhook")
		writes, _ := managerWrites(offset)
		var ours []string
		for _, w := range writes {
			if w.ObjectRef.Namespace == ns || w.ObjectRef.Name == crdName {
				ours = append(ours, w.Verb+" "+w.RequestURI)
			}
		}
		Expect(ours).To(BeEmpty(), "writes while nothing changed")

		By("handing it over: an install in another namespace takes it over once it serves, then the deletion completes")
		other := createNamespace(ctx)
		serve(other, "widget-webhook")
		Expect(k8s.Create(ctx, newInstall(other, "widgets", "widget-webhook", crdName))).To(Succeed())
		eventuallyPhase(ctx, other, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widgets"}, &v1alpha1.WebhookInstall{}))
		}).Should(BeTrue())
		time.Sleep(2 * time.Second)
		readers.Halt()
		reportReads("deleted install kept alive, rotated, handed over", readers)
		crd := getCRD(ctx, crdName)
		Expect(crd.Annotations[v1alpha1.AnnotationOwner]).To(Equal(other + "/widgets"))
		Expect(conversionService(crd)).To(Equal(other + "/widget-webhook-service"))
		for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.ServiceAccount{}} {
			Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widget-webhook"}, obj))).To(BeTrue(), "%T removed", obj)
		}
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widget-webhook-service"}, &corev1.Service{}))).To(BeTrue())
		asV1, err := readWidget(ctx, group, "v1", ns, names[1])
		Expect(err).NotTo(HaveOccurred())
		Expect(specField(asV1, "value")).To(Equal("2"))
	})
})

// expectNoWorkloadsLeft waits until the real controllers have removed what
// the deleted Deployments and Services had: the garbage collector their
// ReplicaSets and Pods, the EndpointSlice controller their EndpointSlices.
func expectNoWorkloadsLeft(ctx context.Context, ns string) {
	EventuallyWithOffset(1, func(g Gomega) {
		for _, list := range []client.ObjectList{&appsv1.ReplicaSetList{}, &corev1.PodList{}, &discoveryv1.EndpointSliceList{}} {
			g.Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			g.Expect(meta.LenList(list)).To(BeZero(), "%T left in %s", list, ns)
		}
	}).Should(Succeed())
}

// storeInTwoVersions stores a widget in v1, moves storage to v2 and stores
// one in v2: conversion None would now serve v1 objects under v2's schema.
func storeInTwoVersions(ctx context.Context, group, ns, crdName string) []string {
	Expect(k8s.Create(ctx, widget(group, "v1", ns, "stored-as-v1", map[string]any{"value": "1"}))).To(Succeed())
	crd := getCRD(ctx, crdName)
	patch := client.MergeFrom(crd.DeepCopy())
	crd.Spec.Versions[0].Storage, crd.Spec.Versions[1].Storage = false, true
	Expect(k8s.Patch(ctx, crd, patch)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(crdIn(ctx, g, crdName).Status.StoredVersions).To(ConsistOf("v1", "v2"))
	}).Should(Succeed())
	Eventually(func() error {
		return k8s.Create(ctx, widget(group, "v2", ns, "stored-as-v2", map[string]any{"amount": "2"}))
	}).Should(Succeed())
	return []string{"stored-as-v1", "stored-as-v2"}
}

// migrateStorage does what the admin guide asks before conversion None is
// safe: every object rewritten in the storage version (v2), v1 removed
// from status.storedVersions and no longer served.
func migrateStorage(ctx context.Context, group, ns, crdName string, names []string) {
	for _, name := range names {
		Eventually(func(g Gomega) {
			u, err := readWidget(ctx, group, "v2", ns, name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(k8s.Update(ctx, u)).To(Succeed())
		}).Should(Succeed())
	}
	Eventually(func(g Gomega) {
		crd := crdIn(ctx, g, crdName)
		crd.Status.StoredVersions = []string{"v2"}
		g.Expect(k8s.Status().Update(ctx, crd)).To(Succeed())
	}).Should(Succeed())
	Eventually(func(g Gomega) {
		crd := crdIn(ctx, g, crdName)
		crd.Spec.Versions[0].Served = false
		g.Expect(k8s.Update(ctx, crd)).To(Succeed())
	}).Should(Succeed())
}

func crdIn(ctx context.Context, g Gomega, name string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
	return crd
}

// eventuallyReason waits for the install's status reason, whatever the phase.
func eventuallyReason(ctx context.Context, ns, name, reason string) *v1alpha1.WebhookInstall {
	var whi *v1alpha1.WebhookInstall
	EventuallyWithOffset(1, func(g Gomega) {
		whi = installIn(ctx, g, ns, name)
		g.Expect(whi.Status.Reason).To(Equal(reason), "status: %s/%s: %s", whi.Status.Phase, whi.Status.Reason, whi.Status.Message)
	}).Should(Succeed())
	return whi
}

// expectServing checks the install still owns the CRD, which converts
// through the install's Service, and that the webhook's Deployment (with
// its certificate mount), Service and Secrets are in place.
func expectServing(ctx context.Context, ns, install, crdName, deployment string) {
	crd := getCRD(ctx, crdName)
	ExpectWithOffset(1, crd.Annotations[v1alpha1.AnnotationOwner]).To(Equal(ns + "/" + install))
	ExpectWithOffset(1, conversionService(crd)).To(Equal(ns + "/" + desired.ServiceName(deployment)))
	dep := &appsv1.Deployment{}
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: deployment}, dep)).To(Succeed())
	ExpectWithOffset(1, dep.Spec.Template.Annotations).To(HaveKey(desired.AnnotationServingCert), "the Deployment keeps its certificate")
	ExpectWithOffset(1, dep.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("Secret.SecretName", desired.ServingSecretName(desired.ServiceName(deployment)))))
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: desired.ServiceName(deployment)}, &corev1.Service{})).To(Succeed())
	for _, name := range []string{desired.CASecretName(desired.ServiceName(deployment)), desired.ServingSecretName(desired.ServiceName(deployment))} {
		ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{})).To(Succeed())
	}
}

// rotateCA asks the install for a CA rotation and waits until it is done:
// recorded as Succeeded, and the CRD trusts the new CA only.
func rotateCA(ctx context.Context, ns, name, crdName, request string) {
	service := strings.TrimPrefix(conversionService(getCRD(ctx, crdName)), ns+"/")
	caOf := func(whi *v1alpha1.WebhookInstall) string {
		for _, svc := range whi.Status.Services {
			if svc.Name == service {
				return svc.CAFingerprint
			}
		}
		return ""
	}
	whi := getInstall(ctx, ns, name)
	before := caOf(whi)
	ExpectWithOffset(1, before).NotTo(BeEmpty(), "service %s is in the install's status", service)
	patch := client.MergeFrom(whi.DeepCopy())
	if whi.Annotations == nil {
		whi.Annotations = map[string]string{}
	}
	whi.Annotations[v1alpha1.AnnotationRotate] = request
	ExpectWithOffset(1, k8s.Patch(ctx, whi, patch)).To(Succeed())
	EventuallyWithOffset(1, func(g Gomega) {
		whi := installIn(ctx, g, ns, name)
		g.Expect(whi.Status.HandledRotationRequest).To(Equal(request))
		for _, rec := range whi.Status.Rotations {
			g.Expect(rec.Outcome).NotTo(Equal(v1alpha1.RotationInProgress), "rotation still running: %+v", rec)
		}
		after := caOf(whi)
		g.Expect(after).NotTo(Equal(before))
		bundle, err := certs.ParseCerts(crdIn(ctx, g, crdName).Spec.Conversion.Webhook.ClientConfig.CABundle)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(bundle).To(HaveLen(1), "the old CA was pruned")
		g.Expect(certs.Fingerprint(bundle[0])).To(Equal(after))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
}

// crdEventReasons lists the reasons of the Events about a CRD.
func crdEventReasons(ctx context.Context, g Gomega, crdName string) []string {
	var events eventsv1.EventList
	g.Expect(k8s.List(ctx, &events)).To(Succeed())
	var reasons []string
	for _, e := range events.Items {
		if e.Regarding.Name == crdName {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

var _ = Describe("A new version that drops a conversion CRD", func() {
	It("keeps serving a dropped CRD stored in two versions, its webhook's certificate mount included, until its storage is migrated", func(ctx context.Context) {
		ns := createNamespace(ctx)
		main, keptGroup := ns+".main.hookwright.test", ns+".kept.hookwright.test"
		createWidgetCRD(ctx, main)
		createWidgetCRD(ctx, keptGroup)
		keptCRD := "widgets." + keptGroup
		serve(ns, "main-webhook")
		serve(ns, "kept-webhook")
		install := newInstall(ns, "widgets", "main-webhook", "widgets."+main)
		install.Spec.Certificates.TrustOverlap = &metav1.Duration{Duration: 2 * time.Second}
		second := newInstall(ns, "unused", "kept-webhook", keptCRD)
		install.Spec.Install.Spec.Deployments = append(install.Spec.Install.Spec.Deployments, second.Spec.Install.Spec.Deployments[0])
		keptDef := second.Spec.WebhookDefinitions[0]
		keptDef.GenerateName = "kept-conversion"
		install.Spec.WebhookDefinitions = append(install.Spec.WebhookDefinitions, keptDef)
		install.Spec.CustomResourceDefinitions.Owned = append(install.Spec.CustomResourceDefinitions.Owned, second.Spec.CustomResourceDefinitions.Owned...)
		Expect(k8s.Create(ctx, install)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		names := storeInTwoVersions(ctx, keptGroup, ns, keptCRD)
		readers := startReaders(ctx, keptGroup, ns, names, 2)

		By("a new version drops that CRD's webhook, but still deploys its deployment")
		whi := getInstall(ctx, ns, "widgets")
		patch := client.MergeFrom(whi.DeepCopy())
		whi.Spec.Version = "1.1.0"
		whi.Spec.WebhookDefinitions = whi.Spec.WebhookDefinitions[:1]
		whi.Spec.CustomResourceDefinitions.Owned = whi.Spec.CustomResourceDefinitions.Owned[:1]
		Expect(k8s.Patch(ctx, whi, patch)).To(Succeed())
		kept := eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonKeptAlive)
		Expect(kept.Status.Message).To(ContainSubstring("no longer lists CRD(s) " + keptCRD + " through service " + ns + "/kept-webhook-service"))
		Expect(kept.Status.Message).To(ContainSubstring("list them again"))
		Expect(kept.Status.ConversionCRDs).To(ConsistOf(HaveField("Name", keptCRD), HaveField("Name", "widgets."+main)))
		expectServing(ctx, ns, "widgets", keptCRD, "kept-webhook")

		By("rotating: the kept CRD's caBundle follows its webhook's new CA")
		rotateCA(ctx, ns, "widgets", keptCRD, "ca: rotated while a dropped CRD is kept")
		expectServing(ctx, ns, "widgets", keptCRD, "kept-webhook")
		readers.Halt()
		reportReads("dropped webhook kept serving", readers)

		By("migrating the CRD's storage: Hookwright sets None and lets it go")
		migrateStorage(ctx, keptGroup, ns, keptCRD, names)
		Eventually(func(g Gomega) {
			crd := crdIn(ctx, g, keptCRD)
			g.Expect(crd.Spec.Conversion.Strategy).To(Equal(apiextensionsv1.NoneConverter))
			g.Expect(crd.Annotations).NotTo(HaveKey(v1alpha1.AnnotationOwner))
		}).Should(Succeed())
		done := eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		Expect(done.Status.ConversionCRDs).To(ConsistOf(HaveField("Name", "widgets."+main)))
	})

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
