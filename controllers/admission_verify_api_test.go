package controllers_test

import (
	"context"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/internal/testcluster"
)

// Each spec breaks an admission webhook one way and reads what the API
// server answered a verification dry run in the install's status.
var _ = Describe("Admission verification through the API server", func() {
	var ns, group, crdName string
	var validator, mutator *testcluster.AdmissionReviewer
	BeforeEach(func(ctx context.Context) {
		ns, group, crdName = widgetNamespace(ctx)
		validator = &testcluster.AdmissionReviewer{Name: "validator"}
		mutator = &testcluster.AdmissionReviewer{Name: "mutator", Mutate: true}
		cluster.Kubelet.Serve(ns, "widget-webhook", testcluster.HandlerHost{Handler: testcluster.WebhookMux{
			Conversion: onlyAt("/convert", &testcluster.WidgetConverter{}),
			Admission:  map[string]http.Handler{"/validate": validator, "/mutate": mutator},
		}})
	})

	// install is the widget install with admission webhooks on deployment
	// widget-webhook, on widgets of the namespace's group unless rules say.
	install := func(defs ...v1alpha1.WebhookDefinition) *v1alpha1.WebhookInstall {
		whi := newInstall(ns, "widgets", "widget-webhook", crdName)
		whi.Spec.WebhookDefinitions = append(whi.Spec.WebhookDefinitions, defs...)
		return whi
	}
	webhook := func(kind operatorsv1alpha1.WebhookAdmissionType, name, path string, policy admissionregistrationv1.FailurePolicyType, rules ...v1alpha1.AdmissionRule) v1alpha1.WebhookDefinition {
		if len(rules) == 0 {
			rules = []v1alpha1.AdmissionRule{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{"widgets"}}}
		}
		return v1alpha1.WebhookDefinition{
			GenerateName: name, Type: kind, DeploymentName: "widget-webhook",
			ContainerPort: 443, TargetPort: ptr.To(intstr.FromInt32(9443)), WebhookPath: ptr.To(path),
			AdmissionReviewVersions: []string{"v1"}, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy: ptr.To(policy), Rules: rules,
		}
	}
	// eventuallyAdmission waits until the webhook's status has state and
	// verifyReason and its message has every one of messageHas.
	eventuallyAdmission := func(ctx context.Context, name string, state v1alpha1.AdmissionWebhookState, reason string, messageHas ...string) v1alpha1.AdmissionWebhookStatus {
		var found v1alpha1.AdmissionWebhookStatus
		EventuallyWithOffset(1, func(g Gomega) {
			whi := installIn(ctx, g, ns, "widgets")
			g.Expect(whi.Status.ObservedGeneration).To(Equal(whi.Generation))
			ok := false
			for _, a := range whi.Status.AdmissionWebhooks {
				if a.Name == name {
					found, ok = a, true
				}
			}
			g.Expect(ok).To(BeTrue(), "%s in %+v", name, whi.Status.AdmissionWebhooks)
			g.Expect(found.State).To(Equal(state), found.Message)
			g.Expect(found.VerifyReason).To(Equal(reason), found.Message)
			for _, m := range messageHas {
				g.Expect(found.Message).To(ContainSubstring(m))
			}
		}, "60s").Should(Succeed()) // a failed verification is tried again after 10 s
		return found
	}

	It("reports a path the webhook does not serve as WebhookPathNotFound, with failurePolicy Fail and Ignore alike, and Verified once fixed", func(ctx context.Context) {
		Expect(k8s.Create(ctx, install(
			webhook(operatorsv1alpha1.ValidatingAdmissionWebhook, "vpath.hookwright.test", "/v1/validate", admissionregistrationv1.Fail),
			webhook(operatorsv1alpha1.MutatingAdmissionWebhook, "mpath.hookwright.test", "/v1/mutate", admissionregistrationv1.Ignore),
		))).To(Succeed())

		eventuallyAdmission(ctx, "vpath.hookwright.test", v1alpha1.AdmissionFailed, v1alpha1.ReasonWebhookPathNotFound,
			"the server could not find the requested resource", "dry-run create of "+group+"/v1 Widget in namespace "+ns)
		// Ignore admits the dry run whatever the call did: the trust probe
		// called the webhook instead, and got its 404.
		eventuallyAdmission(ctx, "mpath.hookwright.test", v1alpha1.AdmissionFailed, v1alpha1.ReasonWebhookPathNotFound,
			"failurePolicy Ignore", "trust probe", "404 Not Found")
		Eventually(func(g Gomega) {
			c := condition(installIn(ctx, g, ns, "widgets"), v1alpha1.TypeAdmissionVerified)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonWebhookPathNotFound))
		}).Should(Succeed())

		By("the paths fixed")
		Eventually(func(g Gomega) {
			whi := installIn(ctx, g, ns, "widgets")
			whi.Spec.WebhookDefinitions[1].WebhookPath = ptr.To("/validate")
			whi.Spec.WebhookDefinitions[2].WebhookPath = ptr.To("/mutate")
			g.Expect(k8s.Update(ctx, whi)).To(Succeed())
		}).Should(Succeed())
		eventuallyAdmission(ctx, "vpath.hookwright.test", v1alpha1.AdmissionVerified, "", "called the webhook", "admitted")
		eventuallyAdmission(ctx, "mpath.hookwright.test", v1alpha1.AdmissionVerified, "", "failurePolicy Ignore", "it answered")
		Eventually(func(g Gomega) {
			whi := installIn(ctx, g, ns, "widgets")
			g.Expect(condition(whi, v1alpha1.TypeAdmissionVerified).Status).To(Equal(metav1.ConditionTrue))
			// What a restarted Hookwright reads to confirm a verification
			// its predecessor may not have (verify_confirm.go).
			g.Expect(whi.Status.AdmissionWebhooks).To(HaveEach(HaveField("VerifiedSince", Not(BeNil()))))
		}).Should(Succeed())
	})

	It("verifies a webhook that denies Hookwright's dry-run object: the webhook answered through the caBundle", func(ctx context.Context) {
		_, start, err := cluster.AuditEvents(0)
		Expect(err).NotTo(HaveOccurred())
		validator.DenyAll("spec.value is required")
		Expect(k8s.Create(ctx, install(webhook(operatorsv1alpha1.ValidatingAdmissionWebhook, "vdeny.hookwright.test", "/validate", admissionregistrationv1.Fail)))).To(Succeed())
		eventuallyAdmission(ctx, "vdeny.hookwright.test", v1alpha1.AdmissionVerified, "",
			"the webhook denied Hookwright's minimal object", `admission webhook "vdeny.hookwright.test" denied the request: spec.value is required`)

		By("the webhook's 403 is no RBAC refusal: the authorizer allowed the dry run (the shipped-RBAC check counts it as used)")
		events, _, err := cluster.AuditEvents(start)
		Expect(err).NotTo(HaveOccurred())
		var denied []testcluster.AuditEvent
		for _, e := range events {
			if e.User.Username == managerUser && e.Verb == "create" && e.ObjectRef.Resource == "widgets" && e.ObjectRef.Namespace == ns && e.ResponseStatus.Code == http.StatusForbidden {
				denied = append(denied, e)
			}
		}
		Expect(denied).NotTo(BeEmpty())
		for _, e := range denied {
			Expect(e.Annotations).To(HaveKeyWithValue(testcluster.AnnotationAuthorizationDecision, "allow"))
		}
		used, forbidden := testcluster.UsedPermissions(denied, managerUser)
		Expect(forbidden).To(BeEmpty())
		Expect(used).To(HaveKey(testcluster.Permission{Group: group, Resource: "widgets", Verb: "create"}))
	})

	It("reports a webhook RBAC forbids Hookwright to verify as Unverified, naming what to grant, without a request the API server refuses", func(ctx context.Context) {
		_, start, err := cluster.AuditEvents(0)
		Expect(err).NotTo(HaveOccurred())
		// ConfigMaps: Hookwright may not create them (the suite grants an
		// author's verifier role on widgets only), and a webhook on them
		// could lock out its own pods, so the install's namespace is
		// excluded: the dry run would go to default. The objectSelector
		// keeps the webhook off every other ConfigMap of the suite.
		def := webhook(operatorsv1alpha1.ValidatingAdmissionWebhook, "vrbac.hookwright.test", "/validate", admissionregistrationv1.Fail,
			v1alpha1.AdmissionRule{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}})
		def.ObjectSelector = &v1alpha1.ObjectSelector{MatchLabels: map[string]string{"hookwright.test/verify": ns}}
		Expect(k8s.Create(ctx, install(def))).To(Succeed())
		status := eventuallyAdmission(ctx, "vrbac.hookwright.test", v1alpha1.AdmissionUnverified, v1alpha1.ReasonVerificationForbidden,
			"may not dry-run create configmaps (v1 ConfigMap in namespace default)", "Grant its ServiceAccount the verb create on configmaps")
		Expect(status.ExcludedNamespaces).To(ContainElement(ns))
		Eventually(func(g Gomega) {
			c := condition(installIn(ctx, g, ns, "widgets"), v1alpha1.TypeAdmissionVerified)
			g.Expect(c.Status).To(Equal(metav1.ConditionUnknown))
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonVerificationForbidden))
		}).Should(Succeed())

		events, _, err := cluster.AuditEvents(start)
		Expect(err).NotTo(HaveOccurred())
		for _, e := range events {
			if e.User.Username == managerUser && e.ObjectRef.Resource == "configmaps" {
				Fail("the operator requested configmaps: " + e.RequestURI)
			}
		}
	})
})
