package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// The namespace controller deletes an install's namespace with everything
// in it: the WebhookInstall (whose finalizer must not hang the namespace),
// the webhook's Deployment and Service, its Secrets.
var _ = Describe("Deleting an install's namespace", func() {
	var ns, group, crdName string
	BeforeEach(func(ctx context.Context) {
		ns, group, crdName = widgetNamespace(ctx)
		serve(ns, "widget-webhook")
		Expect(k8s.Create(ctx, newInstall(ns, "widgets", "widget-webhook", crdName))).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
	})

	deleteNamespace := func(ctx context.Context) {
		Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		EventuallyWithOffset(1, func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}))
		}, 2*time.Minute, 250*time.Millisecond).Should(BeTrue(), "the namespace finished terminating")
	}

	It("terminates, and leaves no CRD pointing at the deleted Service when one version is stored", func(ctx context.Context) {
		crd := getCRD(ctx, crdName)
		patch := client.MergeFrom(crd.DeepCopy())
		crd.Spec.Versions[1].Schema = crd.Spec.Versions[0].Schema.DeepCopy()
		Expect(k8s.Patch(ctx, crd, patch)).To(Succeed())
		Expect(k8s.Create(ctx, widget(group, "v1", ns, "w", map[string]any{"value": "1"}))).To(Succeed())

		deleteNamespace(ctx)
		released := getCRD(ctx, crdName)
		Expect(released.Spec.Conversion.Strategy).To(Equal(apiextensionsv1.NoneConverter))
		Expect(released.Annotations).NotTo(HaveKey(v1alpha1.AnnotationOwner))
	})

	It("terminates when two versions are stored, leaving the conversion in place (None would serve the wrong schema) with a Warning that says so", func(ctx context.Context) {
		other := createNamespace(ctx) // the objects outlive the install's namespace
		storeInTwoVersions(ctx, group, other, crdName)

		deleteNamespace(ctx)
		left := getCRD(ctx, crdName)
		Expect(left.Spec.Conversion.Strategy).To(Equal(apiextensionsv1.WebhookConverter))
		Expect(left.Annotations).NotTo(HaveKey(v1alpha1.AnnotationOwner))
		Expect(left.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationReleasedBy, ns+"/widgets"), "another install may take it over without a hand-over")
		Eventually(func(g Gomega) {
			var events eventsv1.EventList
			g.Expect(k8s.List(ctx, &events)).To(Succeed())
			var notes []string
			for _, e := range events.Items {
				if e.Regarding.Name == crdName && e.Reason == "ConversionLeftInPlace" {
					notes = append(notes, e.Note)
				}
			}
			g.Expect(notes).To(ContainElement(ContainSubstring("namespace " + ns + " is being deleted")))
		}).Should(Succeed())
	})
})
