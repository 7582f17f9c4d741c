package controllers_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/controllers/guard"
	"github.com/hookwright/hookwright/internal/testcluster"
)

// olmEditRole is what OLM aggregates to `edit` for a CSV that owns the
// WebhookInstall CRD (ensureClusterRolesForCSV): every namespace editor
// may create installs once Hookwright is installed from its bundle.
const olmEditRole = "webhookinstalls.operators.hookwright.dev-v1alpha1-edit"

var _ = Describe("The admission guard: a WebhookInstall makes Hookwright do nothing its creator could not do", Ordered, func() {
	BeforeAll(func(ctx context.Context) {
		Expect(k8s.Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: olmEditRole, Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{"operators.hookwright.dev"}, Resources: []string{"webhookinstalls"},
				Verbs: []string{"create", "update", "patch", "delete", "get", "list", "watch"},
			}},
		})).To(Succeed())

		// The API server enforces a new policy once it has loaded it,
		// about a second after it is created with the suite's cluster: a
		// spec that ran first would race it.
		ns, _, crdName := widgetNamespace(ctx)
		probe := namespaceEditor(ctx, ns, "guard-probe-"+ns)
		Eventually(func() error {
			return probe.Create(ctx, newInstall(ns, "probe", "widget-webhook", crdName), client.DryRunAll)
		}).Should(MatchError(ContainSubstring("hookwright-install-authority")))
	})

	It("refuses a namespace editor every CRD it may not patch, naming the permission, and touches none of them", func(ctx context.Context) {
		ns := createNamespace(ctx)
		editor := namespaceEditor(ctx, ns, "editor-"+ns)

		crds := map[string]*apiextensionsv1.CustomResourceDefinition{}
		newCRD := func(kind string, change func(*apiextensionsv1.CustomResourceDefinition)) string {
			crd := testcluster.WidgetCRD(kind+"."+ns+".hookwright.test", "", "", nil)
			change(crd)
			Expect(k8s.Create(ctx, crd)).To(Succeed())
			crds[crd.Name] = crd
			return crd.Name
		}
		cases := map[string]string{
			"conversion None": newCRD("none", func(crd *apiextensionsv1.CustomResourceDefinition) {
				crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
			}),
			"conversion unset":                   newCRD("unset", func(*apiextensionsv1.CustomResourceDefinition) {}),
			"released by another install":        newCRD("released", annotate(v1alpha1.AnnotationReleasedBy, "team-b/old")),
			"its owner install no longer exists": newCRD("orphaned", annotate(v1alpha1.AnnotationOwner, "team-b/deleted")),
		}
		for what, crdName := range cases {
			err := editor.Create(ctx, newInstall(ns, "take", "widget-webhook", crdName))
			Expect(err).To(HaveOccurred(), what)
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: %v", what, err)
			Expect(err.Error()).To(ContainSubstring("may not patch customresourcedefinitions.apiextensions.k8s.io "+crdName), what)
			Expect(err.Error()).To(ContainSubstring("hookwright-install-authority"), "%s: the message names the policy", what)
		}

		By("Hookwright's own CRD is never claimable, whoever asks")
		for _, user := range []client.Client{editor, k8s} {
			err := user.Create(ctx, newInstall(ns, "take", "widget-webhook", "webhookinstalls.operators.hookwright.dev"))
			Expect(err).To(MatchError(ContainSubstring("Hookwright's own CRDs (*.operators.hookwright.dev) are never converted")))
		}

		By("no CRD changed 10 s later")
		own := getCRD(ctx, "webhookinstalls.operators.hookwright.dev")
		Consistently(func(g Gomega) {
			for name, created := range crds {
				live := &apiextensionsv1.CustomResourceDefinition{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, live)).To(Succeed())
				// The API server's own status writes (Established) move it
				// once after creation; nothing else may.
				g.Expect(live.Annotations).To(Equal(created.Annotations), name)
				g.Expect(live.Spec.Conversion.Strategy).To(Equal(apiextensionsv1.NoneConverter), name)
				g.Expect(live.ManagedFields).NotTo(ContainElement(HaveField("Manager", desired.FieldManager)), name)
			}
			g.Expect(getCRD(ctx, own.Name).ResourceVersion).To(Equal(own.ResourceVersion))
		}).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("granted patch on that one CRD, the same editor succeeds, and Hookwright claims it")
		crdName := cases["conversion None"]
		grantCRDPatch(ctx, "editor-"+ns, crdName)
		Eventually(func() error { return editor.Create(ctx, newInstall(ns, "take", "widget-webhook", crdName)) }).Should(Succeed())
		Eventually(func(g Gomega) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: crdName}, crd)).To(Succeed())
			g.Expect(crd.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationOwner, ns+"/take"))
		}).Should(Succeed())
	})

	It("refuses a user who may not create the Deployments or Services the install asks for", func(ctx context.Context) {
		ns, _, crdName := widgetNamespace(ctx)
		// Installs only, plus patch on the CRD: no Deployments, no Services.
		installer := userWithRoles(ctx, ns, "installer-"+ns, olmEditRole)
		grantCRDPatch(ctx, "installer-"+ns, crdName)
		Eventually(func() error {
			return installer.Create(ctx, newInstall(ns, "workloads", "widget-webhook", crdName))
		}).Should(MatchError(ContainSubstring("may not create deployments.apps there")))

		grantInNamespace(ctx, ns, "installer-"+ns, rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"create"}})
		Eventually(func() error {
			return installer.Create(ctx, newInstall(ns, "workloads", "widget-webhook", crdName))
		}).Should(MatchError(ContainSubstring("may not create services there")))
	})

	It("refuses a user who may not create and patch the admission configurations an install registers, on create and on a spec edit, naming the permission", func(ctx context.Context) {
		ns, group, crdName := widgetNamespace(ctx)
		user := "admission-" + ns
		// Everything else an install needs: installs, Deployments and
		// Services in ns, patch on the CRD the plain install converts.
		author := namespaceEditor(ctx, ns, user)
		grantCRDPatch(ctx, user, crdName)
		const validatingConfigs = "validatingwebhookconfigurations.admissionregistration.k8s.io"
		const mutatingConfigs = "mutatingwebhookconfigurations.admissionregistration.k8s.io"

		By("a validating webhook without create on ValidatingWebhookConfigurations: refused, though patch is granted")
		grantClusterWide(ctx, user, rbacv1.PolicyRule{
			APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"}, Verbs: []string{"patch"},
		})
		var err error
		Eventually(func() error {
			err = author.Create(ctx, admissionOnly(newInstall(ns, "validating", "validating-webhook", crdName), group, operatorsv1alpha1.ValidatingAdmissionWebhook))
			return err
		}).Should(MatchError(ContainSubstring(user + " may not create " + validatingConfigs)))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("hookwright-install-authority"), "the message names the policy")
		Expect(err.Error()).To(ContainSubstring("Ask a cluster admin for create and patch on " + validatingConfigs))

		By("the same user may create the install without it, but not add it by a spec edit")
		Expect(author.Create(ctx, newInstall(ns, "plain", "widget-webhook", crdName))).To(Succeed(), "everything else is allowed")
		Eventually(func() bool {
			whi := &v1alpha1.WebhookInstall{}
			if err = author.Get(ctx, client.ObjectKey{Namespace: ns, Name: "plain"}, whi); err != nil {
				return false
			}
			err = author.Update(ctx, withAdmissionWebhook(whi, group, operatorsv1alpha1.ValidatingAdmissionWebhook))
			return !apierrors.IsConflict(err) // the operator writes the install meanwhile
		}).Should(BeTrue())
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring(user + " may not create " + validatingConfigs))

		By("create without patch: refused, naming patch")
		grantClusterWide(ctx, user, rbacv1.PolicyRule{
			APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}, Verbs: []string{"create"},
		})
		Eventually(func() error {
			return author.Create(ctx, admissionOnly(newInstall(ns, "mutating", "mutating-webhook", crdName), group, operatorsv1alpha1.MutatingAdmissionWebhook))
		}).Should(MatchError(ContainSubstring(user + " may not patch " + mutatingConfigs)))

		By("with create and patch on ValidatingWebhookConfigurations, the validating install is admitted; mutating still needs its own")
		Eventually(func() error {
			return author.Create(ctx, admissionOnly(newInstall(ns, "validating", "validating-webhook", crdName), group, operatorsv1alpha1.ValidatingAdmissionWebhook))
		}).Should(Succeed())
		Expect(author.Create(ctx, admissionOnly(newInstall(ns, "mutating", "mutating-webhook", crdName), group, operatorsv1alpha1.MutatingAdmissionWebhook))).
			To(MatchError(ContainSubstring(user + " may not patch " + mutatingConfigs)))
	})

	It("admits, within the API server's CEL cost budget, an install that needs every check: 16 conversion CRDs and both admission kinds", func(ctx context.Context) {
		ns, group, _ := widgetNamespace(ctx)
		user := "everything-" + ns
		author := namespaceEditor(ctx, ns, user)
		grantClusterWide(ctx, user, rbacv1.PolicyRule{
			APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"patch"},
		})
		grantClusterWide(ctx, user, rbacv1.PolicyRule{
			APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}, Verbs: []string{"create", "patch"},
		})
		// CRDs need not exist to be checked: the install waits for them.
		whi := newInstall(ns, "everything", "widget-webhook", "things0."+group)
		for i := 1; i < guard.MaxConversionCRDs; i++ {
			name := fmt.Sprintf("things%d.%s", i, group)
			whi.Spec.CustomResourceDefinitions.Owned = append(whi.Spec.CustomResourceDefinitions.Owned, v1alpha1.CRDDescription{Name: name, Version: "v1", Kind: "Thing"})
			whi.Spec.WebhookDefinitions[0].ConversionCRDs = append(whi.Spec.WebhookDefinitions[0].ConversionCRDs, name)
		}
		whi = withAdmissionWebhook(whi, group, operatorsv1alpha1.ValidatingAdmissionWebhook)
		mutating := withAdmissionWebhook(whi.DeepCopy(), group, operatorsv1alpha1.MutatingAdmissionWebhook).Spec.WebhookDefinitions[2]
		mutating.GenerateName = "defaults.widgets." + group
		whi.Spec.WebhookDefinitions = append(whi.Spec.WebhookDefinitions, mutating)
		Eventually(func() error { return author.Create(ctx, whi) }).Should(Succeed())
	})

	It("lets finalizer and status writes through (from a Go client that re-serializes the spec), and refuses a spec edit by a user without the permissions", func(ctx context.Context) {
		ns, _, crdName := widgetNamespace(ctx)
		Expect(k8s.Create(ctx, newInstall(ns, "meta", "widget-webhook", crdName))).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(installIn(ctx, g, ns, "meta").Finalizers).NotTo(BeEmpty()) }).Should(Succeed())
		// Update on installs and their status, and nothing else: no patch
		// on the CRD the install converts.
		writer := userWithRoles(ctx, ns, "writer-"+ns)
		grantInNamespace(ctx, ns, "writer-"+ns, rbacv1.PolicyRule{
			APIGroups: []string{"operators.hookwright.dev"}, Resources: []string{"webhookinstalls", "webhookinstalls/status"}, Verbs: []string{"get", "update"},
		})

		Eventually(func() error {
			whi := &v1alpha1.WebhookInstall{}
			if err := writer.Get(ctx, client.ObjectKey{Namespace: ns, Name: "meta"}, whi); err != nil {
				return err
			}
			whi.Finalizers = append(whi.Finalizers, "example.com/keep")
			return writer.Update(ctx, whi)
		}).Should(Succeed(), "a finalizer write asks Hookwright for nothing")
		Eventually(func() error {
			whi := &v1alpha1.WebhookInstall{}
			if err := writer.Get(ctx, client.ObjectKey{Namespace: ns, Name: "meta"}, whi); err != nil {
				return err
			}
			whi.Status.Message = "written by a status writer"
			return writer.Status().Update(ctx, whi)
		}).Should(Succeed(), "status is a subresource the guard does not match")

		// The operator writes the install meanwhile: a conflict is retried.
		var err error
		Eventually(func() bool {
			whi := &v1alpha1.WebhookInstall{}
			if err = writer.Get(ctx, client.ObjectKey{Namespace: ns, Name: "meta"}, whi); err != nil {
				return false
			}
			whi.Spec.Install.Spec.Deployments[0].Spec.Template.Spec.Containers[0].Image = "example.com/someone-elses:v1"
			err = writer.Update(ctx, whi)
			return !apierrors.IsConflict(err)
		}).Should(BeTrue())
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("may not patch customresourcedefinitions.apiextensions.k8s.io " + crdName))

		// Let the namespace go when the suite ends.
		Eventually(func() error {
			whi := &v1alpha1.WebhookInstall{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "meta"}, whi); err != nil {
				return err
			}
			whi.Finalizers = removeString(whi.Finalizers, "example.com/keep")
			return k8s.Update(ctx, whi)
		}).Should(Succeed())
	})

	It("claims no new CRD while the guard is not in force, says so, and keeps existing installs converting", func(ctx context.Context) {
		existingNS, existingGroup, existingCRD := widgetNamespace(ctx)
		serve(existingNS, "widget-webhook")
		Expect(k8s.Create(ctx, newInstall(existingNS, "existing", "widget-webhook", existingCRD))).To(Succeed())
		eventuallyPhase(ctx, existingNS, "existing", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		Expect(k8s.Create(ctx, widget(existingGroup, "v1", existingNS, "kept", map[string]any{"value": "7"}))).To(Succeed())

		By("an admin deletes the guard's binding")
		Expect(k8s.Delete(ctx, guard.Binding())).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, guard.Binding()))).To(Succeed())
		})
		refusedBefore := metricValue("hookwright_claims_refused_total", map[string]string{"reason": v1alpha1.ReasonAdmissionGuardNotInForce})

		newNS, _, newCRD := widgetNamespace(ctx)
		serve(newNS, "widget-webhook")
		Expect(k8s.Create(ctx, newInstall(newNS, "new", "widget-webhook", newCRD))).To(Succeed())
		whi := eventuallyPhase(ctx, newNS, "new", v1alpha1.PhaseFailed, v1alpha1.ReasonAdmissionGuardNotInForce)
		Expect(whi.Status.Message).To(ContainSubstring("ValidatingAdmissionPolicyBinding hookwright-install-authority does not exist"))
		Expect(whi.Status.Message).To(ContainSubstring("kubectl apply --server-side --force-conflicts -k config/guard"))
		Expect(getCRD(ctx, newCRD).Annotations).NotTo(HaveKey(v1alpha1.AnnotationOwner), "no claim")
		Expect(metricValue("hookwright_claims_refused_total", map[string]string{"reason": v1alpha1.ReasonAdmissionGuardNotInForce})).To(BeNumerically(">", refusedBefore))
		Expect(metricValue("hookwright_admission_guard_in_force", nil)).To(Equal(0.0))
		Expect(managerLog.String()).To(ContainSubstring("Refusing new CRD claims: the admission guard is not in force"))
		Eventually(func(g Gomega) {
			var events eventsv1.EventList
			g.Expect(k8s.List(ctx, &events, client.InNamespace(newNS))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(And(
				HaveField("Reason", v1alpha1.ReasonAdmissionGuardNotInForce), HaveField("Type", corev1.EventTypeWarning))))
		}).Should(Succeed())

		By("the existing install, woken meanwhile, keeps its CRD and converts")
		existing := getInstall(ctx, existingNS, "existing")
		patch := client.MergeFrom(existing.DeepCopy())
		existing.Annotations = map[string]string{"example.com/poke": "guard-gone"}
		Expect(k8s.Patch(ctx, existing, patch)).To(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(installIn(ctx, g, existingNS, "existing").Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
			asV2, err := readWidget(ctx, existingGroup, "v2", existingNS, "kept")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(specField(asV2, "amount")).To(Equal("7"))
		}).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("the guard restored, the refused install claims its CRD")
		Expect(k8s.Create(ctx, guard.Binding())).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(installIn(ctx, g, newNS, "new").Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		}).WithTimeout(90 * time.Second).Should(Succeed())
		Expect(metricValue("hookwright_admission_guard_in_force", nil)).To(Equal(1.0))
	})
})

func annotate(key, value string) func(*apiextensionsv1.CustomResourceDefinition) {
	return func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Annotations = map[string]string{key: value}
	}
}

// namespaceEditor is a user with `edit` in ns plus OLM's WebhookInstall
// edit role. The test ground runs no clusterrole-aggregation controller,
// so the user is bound to what aggregation would put into `edit`.
func namespaceEditor(ctx context.Context, ns, user string) client.Client {
	return userWithRoles(ctx, ns, user, "system:aggregate-to-edit", "system:aggregate-to-view", olmEditRole)
}

// userWithRoles is a client for a new user bound, in ns, to clusterRoles.
func userWithRoles(ctx context.Context, ns, user string, clusterRoles ...string) client.Client {
	for _, role := range clusterRoles {
		Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: user + "-"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		})).To(Succeed())
	}
	cfg, err := cluster.UserConfig(user)
	Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// grantCRDPatch lets user patch the one CRD name.
func grantCRDPatch(ctx context.Context, user, crdName string) {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "patch-crd-"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"},
			ResourceNames: []string{crdName}, Verbs: []string{"patch"},
		}},
	}
	Expect(k8s.Create(ctx, role)).To(Succeed())
	Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "patch-crd-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	})).To(Succeed())
}

// grantClusterWide gives user one more cluster-wide rule.
func grantClusterWide(ctx context.Context, user string, rule rbacv1.PolicyRule) {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: user + "-"}, Rules: []rbacv1.PolicyRule{rule}}
	Expect(k8s.Create(ctx, role)).To(Succeed())
	Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: user + "-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	})).To(Succeed())
}

// withAdmissionWebhook adds an admission webhook of kind to whi, served by
// its first deployment, that sees only this spec's widgets (group) and is
// ignored when it fails: registering it disturbs no other spec.
func withAdmissionWebhook(whi *v1alpha1.WebhookInstall, group string, kind operatorsv1alpha1.WebhookAdmissionType) *v1alpha1.WebhookInstall {
	whi.Spec.WebhookDefinitions = append(whi.Spec.WebhookDefinitions, v1alpha1.WebhookDefinition{
		GenerateName: "admission.widgets." + group, Type: kind,
		DeploymentName: whi.Spec.Install.Spec.Deployments[0].Name, ContainerPort: 443, TargetPort: ptr.To(intstr.FromInt32(9443)),
		AdmissionReviewVersions: []string{"v1"}, WebhookPath: ptr.To("/validate-widgets"),
		Rules: []v1alpha1.AdmissionRule{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			APIGroups:  []string{group}, APIVersions: []string{"*"}, Resources: []string{"widgets"},
		}},
		FailurePolicy: ptr.To(admissionregistrationv1.Ignore), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
	})
	return whi
}

// admissionOnly makes whi an install of one admission webhook of kind and
// no conversion webhook.
func admissionOnly(whi *v1alpha1.WebhookInstall, group string, kind operatorsv1alpha1.WebhookAdmissionType) *v1alpha1.WebhookInstall {
	whi = withAdmissionWebhook(whi, group, kind)
	whi.Spec.WebhookDefinitions = whi.Spec.WebhookDefinitions[1:]
	return whi
}

// grantInNamespace gives user one more rule in ns.
func grantInNamespace(ctx context.Context, ns, user string, rule rbacv1.PolicyRule) {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: user + "-"}, Rules: []rbacv1.PolicyRule{rule}}
	Expect(k8s.Create(ctx, role)).To(Succeed())
	Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: user + "-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	})).To(Succeed())
}

func removeString(list []string, s string) []string {
	out := list[:0]
	for _, v := range list {
		if v != s {
			out = append(out, v)
		}
	}
	return out
}
