package controllers_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

var _ = Describe("Verification messages in a tenant's status", func() {
	It("name no object of another namespace", func(ctx context.Context) {
		ns, group, crdName := widgetNamespace(ctx)
		elsewhere := createNamespace(ctx)
		Expect(k8s.Create(ctx, widget(group, "v1", elsewhere, "someone-elses-secret-project", map[string]any{"value": "1"}))).To(Succeed())
		serve(ns, "widget-webhook")
		Expect(k8s.Create(ctx, newInstall(ns, "widgets", "widget-webhook", crdName))).To(Succeed())
		whi := eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)

		Expect(whi.Status.ConversionCRDs).To(HaveLen(1))
		message := whi.Status.ConversionCRDs[0].Message
		Expect(message).To(ContainSubstring("read an object outside namespace " + ns))
		for _, text := range []string{message, condition(whi, v1alpha1.TypeConversionVerified).Message, whi.Status.Message} {
			Expect(text).NotTo(ContainSubstring("someone-elses-secret-project"))
			Expect(text).NotTo(ContainSubstring(elsewhere))
		}
	})
})
