package controllers_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// Every install brings API groups the manager has not seen. Verifying
// through one must not make the manager ask discovery about it: with
// thousands of installs, each such request rebuilt the client's map of
// every group (crd_objects.go).
var _ = Describe("Verification of a new API group", func() {
	It("converts through the API server without asking discovery about the group", func(ctx context.Context) {
		installed := func(ns, crdName string) {
			serve(ns, "widget-webhook")
			Expect(k8s.Create(ctx, newInstall(ns, "widgets", "widget-webhook", crdName))).To(Succeed())
			eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		}
		// A first install: whatever discovery a manager does once, it has
		// done by the time this one is verified.
		first, _, firstCRD := widgetNamespace(ctx)
		installed(first, firstCRD)

		ns, group, crdName := widgetNamespace(ctx) // a group created after that
		_, mark, err := cluster.AuditEvents(0)
		Expect(err).NotTo(HaveOccurred())
		installed(ns, crdName)

		events, _, err := cluster.AuditEvents(mark)
		Expect(err).NotTo(HaveOccurred())
		var converted, discovery []string
		for _, e := range events {
			if e.User.Username != managerUser || !strings.HasPrefix(e.RequestURI, "/apis/"+group+"/") && e.RequestURI != "/apis/"+group {
				continue
			}
			if e.ObjectRef.Resource == "" {
				discovery = append(discovery, e.Verb+" "+e.RequestURI)
			} else {
				converted = append(converted, e.Verb+" "+e.RequestURI)
			}
		}
		Expect(converted).NotTo(BeEmpty(), "the verification reads or dry-runs widgets of the group")
		Expect(discovery).To(BeEmpty(), "discovery requests about the install's group")
	})
})
