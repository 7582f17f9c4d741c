package controllers_test

import (
	"context"
	"fmt"
	"time"

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
	"github.com/hookwright/hookwright/internal/testfixtures"
)

// upgrade is newInstall at version 2.0.0, replacing the named install.
func upgrade(ns, name, replaces, deployment, crdName string) *v1alpha1.WebhookInstall {
	whi := newInstall(ns, name, deployment, crdName)
	whi.Spec.Version, whi.Spec.Replaces = "2.0.0", replaces
	whi.Spec.Install.Spec.Deployments[0].Spec.Template.Spec.Containers[0].Image = "example.com/widget-webhook:v2"
	return whi
}

// eventReasons lists the reasons of the namespace's Events.
func eventReasons(ctx context.Context, g Gomega, ns string) []string {
	return namespaceEvents(ctx, g, ns, func(e eventsv1.Event) string { return e.Reason })
}

// eventNotes lists the notes of the namespace's Events.
func eventNotes(ctx context.Context, g Gomega, ns string) []string {
	return namespaceEvents(ctx, g, ns, func(e eventsv1.Event) string { return e.Note })
}

func namespaceEvents(ctx context.Context, g Gomega, ns string, field func(eventsv1.Event) string) []string {
	var events eventsv1.EventList
	g.Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range events.Items {
		out = append(out, field(e))
	}
	return out
}

func createWidgets(ctx context.Context, group, ns string, n int) []string {
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("w%d", i))
		Expect(k8s.Create(ctx, widget(group, "v1", ns, names[i], map[string]any{"value": fmt.Sprint(i)}))).To(Succeed())
	}
	return names
}

func reportReads(what string, r *testfixtures.Reader) {
	ok, failed := r.OK.Load(), r.Failed.Load()
	AddReportEntry(what, fmt.Sprintf("%d reads ok, %d failed", ok, failed), ReportEntryVisibilityAlways)
	Expect(ok).To(BeNumerically(">", 20), "the readers kept reading")
	Expect(failed).To(BeZero(), "first errors: %v", r.FirstErrors())
}

var _ = Describe("Upgrading with spec.replaces", func() {
	var ns, group, crdName string
	BeforeEach(func(ctx context.Context) {
		ns, group, crdName = widgetNamespace(ctx)
		cluster.Kubelet.SetPropagationDelay(2 * time.Second)
		DeferCleanup(func() { cluster.Kubelet.SetPropagationDelay(0) })
	})

	It("takes a CRD over only once the new webhook serves, with zero failed reads, and retires the old install", func(ctx context.Context) {
		dropped := ns + ".dropped.hookwright.test"
		droppedCRD := createWidgetCRD(ctx, dropped)
		sameSchemas := client.MergeFrom(droppedCRD.DeepCopy())
		droppedCRD.Spec.Versions[1].Schema = droppedCRD.Spec.Versions[0].Schema.DeepCopy()
		Expect(k8s.Patch(ctx, droppedCRD, sameSchemas)).To(Succeed())

		serve(ns, "widget-webhook-v1")
		old := newInstall(ns, "widgets-v1", "widget-webhook-v1", crdName)
		old.Spec.CustomResourceDefinitions.Owned = append(old.Spec.CustomResourceDefinitions.Owned,
			v1alpha1.CRDDescription{Name: "widgets." + dropped, Version: "v1", Kind: "Widget"})
		old.Spec.WebhookDefinitions[0].ConversionCRDs = append(old.Spec.WebhookDefinitions[0].ConversionCRDs, "widgets."+dropped)
		Expect(k8s.Create(ctx, old)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets-v1", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		readers := startReaders(ctx, group, ns, createWidgets(ctx, group, ns, 5), 4)

		By("creating the new version before its webhook can serve: the old one keeps the CRD")
		Expect(k8s.Create(ctx, upgrade(ns, "widgets-v2", "widgets-v1", "widget-webhook-v2", crdName))).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets-v1", v1alpha1.PhaseReplacing, v1alpha1.ReasonReplacing)
		eventuallyPhase(ctx, ns, "widgets-v2", v1alpha1.PhaseInstalling, v1alpha1.ReasonDeploymentUnavailable)
		Consistently(func(g Gomega) {
			crd := getCRD(ctx, crdName)
			g.Expect(crd.Annotations[v1alpha1.AnnotationOwner]).To(Equal(ns + "/widgets-v1"))
			g.Expect(conversionService(crd)).To(Equal(ns + "/widget-webhook-v1-service"))
		}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
		Expect(getInstall(ctx, ns, "widgets-v1").Status.Message).To(ContainSubstring("delete widgets-v2 to roll back"))

		By("letting the new webhook serve: it takes the CRD over and the old install is retired")
		serve(ns, "widget-webhook-v2")
		eventuallyPhase(ctx, ns, "widgets-v2", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		crd := getCRD(ctx, crdName)
		Expect(crd.Annotations[v1alpha1.AnnotationOwner]).To(Equal(ns + "/widgets-v2"))
		Expect(conversionService(crd)).To(Equal(ns + "/widget-webhook-v2-service"))
		newCA := getInstall(ctx, ns, "widgets-v2").Status.Services[0].CAFingerprint
		Expect(string(crd.Spec.Conversion.Webhook.ClientConfig.CABundle)).To(ContainSubstring("BEGIN CERTIFICATE"))
		retired := eventuallyPhase(ctx, ns, "widgets-v1", v1alpha1.PhaseReplaced, v1alpha1.ReasonReplaced)
		Expect(retired.Status.Message).To(ContainSubstring(ns + "/widgets-v2"))
		Expect(condition(retired, v1alpha1.TypeReady).Reason).To(Equal(v1alpha1.ReasonReplaced))
		Expect(retired.Status.Rotations).NotTo(BeEmpty(), "the old install's rotation history stays readable")

		By("checking the old workloads are gone and the dropped CRD was released safely")
		Eventually(func(g Gomega) {
			var deps appsv1.DeploymentList
			g.Expect(k8s.List(ctx, &deps, client.InNamespace(ns), client.MatchingLabels{desired.LabelInstall: "widgets-v1"})).To(Succeed())
			g.Expect(deps.Items).To(BeEmpty())
			var svcs corev1.ServiceList
			g.Expect(k8s.List(ctx, &svcs, client.InNamespace(ns), client.MatchingLabels{desired.LabelInstall: "widgets-v1"})).To(Succeed())
			g.Expect(svcs.Items).To(BeEmpty())
			var secrets corev1.SecretList
			g.Expect(k8s.List(ctx, &secrets, client.InNamespace(ns), client.MatchingLabels{desired.LabelInstall: "widgets-v1"})).To(Succeed())
			g.Expect(secrets.Items).To(BeEmpty())
		}).Should(Succeed())
		released := getCRD(ctx, "widgets."+dropped)
		Expect(released.Annotations).NotTo(HaveKey(v1alpha1.AnnotationOwner))
		Expect(released.Spec.Conversion.Strategy).To(Equal(apiextensionsv1.NoneConverter), "one stored version, one schema: None is safe")

		By("reading through the new webhook only, for a while")
		time.Sleep(2 * time.Second)
		readers.Halt()
		reportReads("hand-over to a new deployment", readers)
		Expect(getCRD(ctx, crdName).Annotations[v1alpha1.AnnotationOwner]).To(Equal(ns+"/widgets-v2"), "the retired install touched no CRD")
		Expect(getInstall(ctx, ns, "widgets-v2").Status.Services[0].CAFingerprint).To(Equal(newCA))
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, ns)).To(ContainElements("TookOver", v1alpha1.ReasonReplacing, v1alpha1.ReasonReplaced))
		}).Should(Succeed())

		By("deleting the retired install: no CRD changes")
		before := getCRD(ctx, crdName).ResourceVersion
		Expect(k8s.Delete(ctx, getInstall(ctx, ns, "widgets-v1"))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widgets-v1"}, &v1alpha1.WebhookInstall{}))
		}).Should(BeTrue())
		Expect(getCRD(ctx, crdName).ResourceVersion).To(Equal(before))
	})

	It("keeps serving a CRD the new version drops while None is unsafe, rotating its CA, with zero failed reads, until the new version lists it", func(ctx context.Context) {
		main := ns + ".main.hookwright.test"
		createWidgetCRD(ctx, main)
		serve(ns, "widget-webhook-v1")
		old := newInstall(ns, "widgets-v1", "widget-webhook-v1", "widgets."+main)
		old.Spec.Certificates.TrustOverlap = &metav1.Duration{Duration: 2 * time.Second}
		alsoConvert(old, crdName)
		Expect(k8s.Create(ctx, old)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets-v1", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		names := storeInTwoVersions(ctx, group, ns, crdName)
		readers := startReaders(ctx, group, ns, names, 4)
		soakEnd := time.Now().Add(60 * time.Second)

		By("upgrading to a version that no longer lists the CRD stored in two versions")
		serve(ns, "widget-webhook-v2")
		newer := upgrade(ns, "widgets-v2", "widgets-v1", "widget-webhook-v2", "widgets."+main)
		Expect(k8s.Create(ctx, newer)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets-v2", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		kept := eventuallyPhase(ctx, ns, "widgets-v1", v1alpha1.PhaseReplacing, v1alpha1.ReasonKeptAlive)
		Expect(kept.Status.Message).To(ContainSubstring("which does not list CRD(s) " + crdName + " through service " + ns + "/widget-webhook-v1-service"))
		Expect(kept.Status.Message).To(ContainSubstring("migrate storage"))
		Expect(kept.Status.Message).To(ContainSubstring("list them in widgets-v2's conversionCRDs"))
		Expect(kept.Status.ConversionCRDs).To(ConsistOf(HaveField("Name", crdName)))
		Expect(getCRD(ctx, "widgets."+main).Annotations[v1alpha1.AnnotationOwner]).To(Equal(ns + "/widgets-v2"))
		expectServing(ctx, ns, "widgets-v1", crdName, "widget-webhook-v1")

		By("rotating the kept webhook's CA")
		rotateCA(ctx, ns, "widgets-v1", crdName, "ca: rotated while replaced")

		By("reading for 60 s in all")
		time.Sleep(time.Until(soakEnd))
		expectServing(ctx, ns, "widgets-v1", crdName, "widget-webhook-v1")

		By("listing the CRD in the new version: it takes the CRD over and the old install is retired")
		whi := getInstall(ctx, ns, "widgets-v2")
		patch := client.MergeFrom(whi.DeepCopy())
		alsoConvert(whi, crdName)
		Expect(k8s.Patch(ctx, whi, patch)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets-v1", v1alpha1.PhaseReplaced, v1alpha1.ReasonReplaced)
		eventuallyPhase(ctx, ns, "widgets-v2", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		time.Sleep(2 * time.Second)
		readers.Halt()
		reportReads("replaced install kept a dropped CRD alive, rotated, handed over", readers)
		crd := getCRD(ctx, crdName)
		Expect(crd.Annotations[v1alpha1.AnnotationOwner]).To(Equal(ns + "/widgets-v2"))
		Expect(conversionService(crd)).To(Equal(ns + "/widget-webhook-v2-service"))
		Eventually(func(g Gomega) {
			var deps appsv1.DeploymentList
			g.Expect(k8s.List(ctx, &deps, client.InNamespace(ns), client.MatchingLabels{desired.LabelInstall: "widgets-v1"})).To(Succeed())
			g.Expect(deps.Items).To(BeEmpty())
		}).Should(Succeed())
	})

	It("refuses an upgrade that would adopt the deployment through which the old install keeps a CRD it drops", func(ctx context.Context) {
		main := ns + ".main.hookwright.test"
		createWidgetCRD(ctx, main)
		serve(ns, "widget-webhook")
		old := newInstall(ns, "widgets-v1", "widget-webhook", "widgets."+main)
		alsoConvert(old, crdName)
		Expect(k8s.Create(ctx, old)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets-v1", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		storeInTwoVersions(ctx, group, ns, crdName)

		Expect(k8s.Create(ctx, upgrade(ns, "widgets-v2", "widgets-v1", "widget-webhook", "widgets."+main))).To(Succeed())
		refused := eventuallyPhase(ctx, ns, "widgets-v2", v1alpha1.PhaseFailed, v1alpha1.ReasonKeptServiceTaken)
		Expect(refused.Status.Message).To(ContainSubstring("keeps serving CRD " + crdName))
		Expect(refused.Status.Message).To(ContainSubstring("list CRD " + crdName + " in this install's conversionCRDs"))
		dep := &appsv1.Deployment{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widget-webhook"}, dep)).To(Succeed())
		Expect(dep.Labels[desired.LabelInstall]).To(Equal("widgets-v1"), "nothing was adopted")
		Expect(getCRD(ctx, "widgets."+main).Annotations[v1alpha1.AnnotationOwner]).To(Equal(ns + "/widgets-v1"))
		expectServing(ctx, ns, "widgets-v1", crdName, "widget-webhook")

		By("listing the CRD in the new version: the upgrade adopts the deployment and takes both CRDs")
		whi := getInstall(ctx, ns, "widgets-v2")
		patch := client.MergeFrom(whi.DeepCopy())
		alsoConvert(whi, crdName)
		Expect(k8s.Patch(ctx, whi, patch)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets-v2", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		eventuallyPhase(ctx, ns, "widgets-v1", v1alpha1.PhaseReplaced, v1alpha1.ReasonReplaced)
		Expect(getCRD(ctx, crdName).Annotations[v1alpha1.AnnotationOwner]).To(Equal(ns + "/widgets-v2"))
	})

	It("adopts a same-named deployment, service and CA across the upgrade; an install outside the chain is refused", func(ctx context.Context) {
		serve(ns, "widget-webhook")
		Expect(k8s.Create(ctx, newInstall(ns, "widgets-v1", "widget-webhook", crdName))).To(Succeed())
		oldStatus := eventuallyPhase(ctx, ns, "widgets-v1", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded).Status
		readers := startReaders(ctx, group, ns, createWidgets(ctx, group, ns, 5), 4)

		Expect(k8s.Create(ctx, upgrade(ns, "widgets-v2", "widgets-v1", "widget-webhook", crdName))).To(Succeed())
		newer := eventuallyPhase(ctx, ns, "widgets-v2", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		eventuallyPhase(ctx, ns, "widgets-v1", v1alpha1.PhaseReplaced, v1alpha1.ReasonReplaced)
		time.Sleep(2 * time.Second)
		readers.Halt()
		reportReads("hand-over of a same-named deployment", readers)

		Expect(newer.Status.Services[0].CAFingerprint).To(Equal(oldStatus.Services[0].CAFingerprint), "the CA is adopted, so trust never breaks")
		crd := getCRD(ctx, crdName)
		Expect(crd.Annotations[v1alpha1.AnnotationOwner]).To(Equal(ns + "/widgets-v2"))
		Expect(conversionService(crd)).To(Equal(ns + "/widget-webhook-service"))
		dep := &appsv1.Deployment{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widget-webhook"}, dep)).To(Succeed())
		Expect(dep.Labels[desired.LabelInstall]).To(Equal("widgets-v2"))
		Expect(dep.OwnerReferences).To(ConsistOf(HaveField("UID", newer.UID)))
		Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal("example.com/widget-webhook:v2"))
		for _, name := range []string{desired.CASecretName("widget-webhook-service"), desired.ServingSecretName("widget-webhook-service")} {
			secret := &corev1.Secret{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret)).To(Succeed(), "the retired install's cleanup kept the adopted %s", name)
			Expect(secret.Labels[desired.LabelInstall]).To(Equal("widgets-v2"))
			Expect(secret.OwnerReferences).To(ConsistOf(HaveField("UID", newer.UID)))
		}
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, ns)).To(ContainElements("TookOver", "Adopted"))
		}).Should(Succeed())

		By("refusing an install outside the replacement chain: the CRD by OwnerConflict, the deployment by NameTaken")
		Expect(k8s.Create(ctx, newInstall(ns, "intruder", "widget-webhook", crdName))).To(Succeed())
		eventuallyPhase(ctx, ns, "intruder", v1alpha1.PhaseFailed, v1alpha1.ReasonOwnerConflict)
		otherGroup := ns + ".other.hookwright.test"
		createWidgetCRD(ctx, otherGroup)
		Expect(k8s.Create(ctx, newInstall(ns, "squatter", "widget-webhook", "widgets."+otherGroup))).To(Succeed())
		squatter := eventuallyPhase(ctx, ns, "squatter", v1alpha1.PhaseFailed, v1alpha1.ReasonNameTaken)
		Expect(squatter.Status.Message).To(ContainSubstring("belongs to WebhookInstall " + ns + "/widgets-v2"))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widget-webhook"}, dep)).To(Succeed())
		Expect(dep.Labels[desired.LabelInstall]).To(Equal("widgets-v2"), "nothing outside the chain took the deployment")
		Expect(getCRD(ctx, crdName).Annotations[v1alpha1.AnnotationOwner]).To(Equal(ns + "/widgets-v2"))
	})
})

// alsoConvert adds the widget CRD crdName to an install's owned CRDs and to
// its first webhook's conversionCRDs.
func alsoConvert(whi *v1alpha1.WebhookInstall, crdName string) {
	whi.Spec.CustomResourceDefinitions.Owned = append(whi.Spec.CustomResourceDefinitions.Owned, v1alpha1.CRDDescription{Name: crdName, Version: "v1", Kind: "Widget"})
	whi.Spec.WebhookDefinitions[0].ConversionCRDs = append(whi.Spec.WebhookDefinitions[0].ConversionCRDs, crdName)
}
