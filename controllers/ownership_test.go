package controllers_test

import (
	"context"
	"fmt"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

var _ = Describe("One owner per CRD", func() {
	It("lets exactly one of ten concurrent installs own a CRD; nine are blocked and deploy nothing", func(ctx context.Context) {
		first := createNamespace(ctx)
		group := first + ".hookwright.test"
		crdName := "widgets." + group
		createWidgetCRD(ctx, group)

		namespaces := []string{first}
		for len(namespaces) < 10 {
			namespaces = append(namespaces, createNamespace(ctx))
		}
		for _, ns := range namespaces {
			serve(ns, "widget-webhook")
		}
		var wg sync.WaitGroup
		for _, ns := range namespaces {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				Expect(k8s.Create(ctx, newInstall(ns, "widgets", "widget-webhook", crdName))).To(Succeed())
			}()
		}
		wg.Wait()

		var owner string
		Eventually(func(g Gomega) {
			succeeded, conflicted := 0, 0
			for _, ns := range namespaces {
				whi := getInstall(ctx, ns, "widgets")
				switch {
				case whi.Status.Phase == v1alpha1.PhaseSucceeded:
					succeeded++
					owner = ns + "/widgets"
				case whi.Status.Phase == v1alpha1.PhaseFailed && whi.Status.Reason == v1alpha1.ReasonOwnerConflict:
					conflicted++
				}
			}
			g.Expect(succeeded).To(Equal(1))
			g.Expect(conflicted).To(Equal(9))
		}).Should(Succeed())

		crd := getCRD(ctx, crdName)
		Expect(crd.Annotations[v1alpha1.AnnotationOwner]).To(Equal(owner))
		Expect(conversionManagers(crd)).To(ConsistOf(desired.FieldManager), "only Hookwright's owner wrote spec.conversion")
		for _, ns := range namespaces {
			if ns+"/widgets" == owner {
				continue
			}
			whi := getInstall(ctx, ns, "widgets")
			Expect(whi.Status.Message).To(ContainSubstring(fmt.Sprintf("CRD %s is owned by WebhookInstall %s", crdName, owner)))
			Expect(whi.Status.Message).To(ContainSubstring("spec.replaces: widgets"))
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widget-webhook"}, &appsv1.Deployment{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "blocked install %s deployed nothing", ns)
		}
	})
})
