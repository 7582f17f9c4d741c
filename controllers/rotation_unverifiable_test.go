package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/internal/testcluster"
)

// A CRD Hookwright cannot verify through the API server (no object to
// convert, and a schema that rejects the dry run's empty object before
// conversion) is a new operator's usual state. Its rotations used to stay
// InProgress until the next one superseded them and recorded them Failed.
var _ = Describe("Rotation of a Service whose CRD Hookwright cannot verify", func() {
	It("completes its first certificates and a CA rotation while no object exists and the schema rejects an empty one", func(ctx context.Context) {
		ns := createNamespace(ctx)
		group := ns + ".hookwright.test"
		crd := testcluster.WidgetCRD(group, "", "", nil)
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Required = []string{"spec"}
		}
		Expect(k8s.Create(ctx, crd)).To(Succeed())
		waitEstablished(ctx, crd.Name)
		serve(ns, "widget-webhook")
		install := newInstall(ns, "widgets", "widget-webhook", crd.Name)
		install.Spec.Certificates.TrustOverlap = &metav1.Duration{Duration: time.Second}
		Expect(k8s.Create(ctx, install)).To(Succeed())

		rotationsEnd := func(want int) {
			GinkgoHelper()
			eventuallyRotationsSucceeded(ctx, ns, want, func(g Gomega, whi *v1alpha1.WebhookInstall) {
				verified := condition(whi, v1alpha1.TypeConversionVerified)
				g.Expect(verified.Status).To(Equal(metav1.ConditionUnknown), verified.Message)
				g.Expect(verified.Reason).To(Equal(v1alpha1.ReasonNoObjectsToVerify), verified.Message)
			})
		}
		By("its first certificates: a CA and a serving rotation, both Initial")
		rotationsEnd(2)

		By("a CA rotation: the new CA and the serving certificate it reissues; none recorded Failed")
		requestRotation(ctx, ns, "ca: nothing to verify")
		rotationsEnd(4)
		Eventually(func(g Gomega) {
			g.Expect(rotationEvents(ctx, g, ns)).To(Equal(map[string]int32{
				firstCertificatesTold: 1,
				"CARotationStarted":   1,
				"CARotationCompleted": 1,
			}))
		}).Should(Succeed())
	})
})
