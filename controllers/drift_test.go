package controllers_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
)

var _ = Describe("Drift of a CRD's conversion", func() {
	It("restores a changed caBundle within a second, names the other manager, and reports a fight", func(ctx context.Context) {
		ns := createNamespace(ctx)
		group := ns + ".hookwright.test"
		crdName := "widgets." + group
		createWidgetCRD(ctx, group)
		serve(ns, "widget-webhook")
		Expect(k8s.Create(ctx, newInstall(ns, "widgets", "widget-webhook", crdName))).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		good := getCRD(ctx, crdName).Spec.Conversion.Webhook.ClientConfig.CABundle

		placeholder, err := certs.NewCA("gitops-placeholder", certs.ECDSAP256, time.Hour, time.Now())
		Expect(err).NotTo(HaveOccurred())
		overwrite := func() {
			crd := getCRD(ctx, crdName)
			patch := client.MergeFrom(crd.DeepCopy())
			crd.Spec.Conversion.Webhook.ClientConfig.CABundle = placeholder.Pair.CertPEM
			Expect(k8s.Patch(ctx, crd, patch, client.FieldOwner("argocd-controller"))).To(Succeed())
		}

		overwrite()
		Eventually(func() []byte { return getCRD(ctx, crdName).Spec.Conversion.Webhook.ClientConfig.CABundle }, time.Second, 20*time.Millisecond).
			Should(Equal(good), "restored within a second of the change")
		Eventually(func(g Gomega) {
			var events eventsv1.EventList
			g.Expect(k8s.List(ctx, &events)).To(Succeed())
			named := false
			for _, e := range events.Items {
				named = named || (e.Regarding.Name == crdName && e.Reason == "ConversionDriftRestored" && containsAll(e.Note, `"argocd-controller"`, crdName))
			}
			g.Expect(named).To(BeTrue(), "an Event on the CRD names the other field manager")
		}).Should(Succeed())
		Expect(apimeta.IsStatusConditionTrue(getInstall(ctx, ns, "widgets").Status.Conditions, v1alpha1.TypeConversionContested)).To(BeFalse(), "one change is drift, not a fight")

		for range 2 {
			overwrite()
			Eventually(func() []byte { return getCRD(ctx, crdName).Spec.Conversion.Webhook.ClientConfig.CABundle }, time.Second, 20*time.Millisecond).Should(Equal(good))
		}
		Eventually(func(g Gomega) {
			whi := getInstall(ctx, ns, "widgets")
			c := apimeta.FindStatusCondition(whi.Status.Conditions, v1alpha1.TypeConversionContested)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%+v", whi.Status.ConversionCRDs)
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonFieldManagerConflict))
			g.Expect(c.Message).To(ContainSubstring(`"argocd-controller" rewrote CRD ` + crdName + "'s conversion 3 times"))
			g.Expect(c.Message).To(ContainSubstring("ignoreDifferences"))
		}).Should(Succeed())
	})
})

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
