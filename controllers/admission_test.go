package controllers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/internal/testcluster"
)

const (
	validatingName = "vwidget.hookwright.test"
	mutatingName   = "mwidget.hookwright.test"
	webhookService = "widget-webhook-service"
)

var _ = Describe("Admission webhooks", func() {
	var ns, group, crdName string
	BeforeEach(func(ctx context.Context) {
		ns = createNamespace(ctx)
		group = ns + ".hookwright.test"
		crdName = "widgets." + group
	})

	It("registers them only once the webhook Deployment is available, and deletes them before the Deployment and Service", func(ctx context.Context) {
		const deployment = "widget-webhook"
		crd := createWidgetCRD(ctx, group)
		// One stored version, one schema: deletion sets conversion None
		// and completes instead of keeping the webhook alive.
		patch := client.MergeFrom(crd.DeepCopy())
		crd.Spec.Versions[1].Schema = crd.Spec.Versions[0].Schema.DeepCopy()
		Expect(k8s.Patch(ctx, crd, patch)).To(Succeed())
		_, start, err := cluster.AuditEvents(0)
		Expect(err).NotTo(HaveOccurred())
		install := widgetAdmissionInstall(ns, group, crdName, true, true)
		name := desired.AdmissionConfigurationName(install)
		Expect(k8s.Create(ctx, install)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseInstalling, v1alpha1.ReasonDeploymentUnavailable)

		By("running the webhook's pod, which gets ready only once the gate opens")
		validate, mutate := &reviewer{}, &reviewer{}
		gate := make(chan struct{})
		cluster.Kubelet.Serve(ns, deployment, testcluster.HostFunc(func(ctx context.Context, env *testcluster.PodEnv) error {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil
			}
			return testcluster.HandlerHost{Handler: webhookMux(validate, mutate)}.Run(ctx, env)
		}))
		Eventually(func(g Gomega) {
			events, _, err := cluster.AuditEvents(start)
			g.Expect(err).NotTo(HaveOccurred())
			reported := deploymentStatusWrites(events, ns, deployment)
			g.Expect(reported).NotTo(BeEmpty(), "the deployment controller reported the Deployment")
			g.Expect(operatorRequests(events, "get", "customresourcedefinitions", "", crdName)).To(ContainElement(
				HaveField("Received", BeTemporally(">", reported[len(reported)-1].Completed))), "a pass of the operator since")
		}).Should(Succeed())
		for _, obj := range admissionObjects() {
			Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: name}, obj))).To(BeTrue(), "%T registered before the Deployment is available", obj)
		}
		gateOpened := time.Now()
		close(gate)

		whi := eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		Expect(condition(whi, v1alpha1.TypeAdmissionConfigured).Status).To(Equal(metav1.ConditionTrue))
		Expect(whi.Status.AdmissionWebhooks).To(ConsistOf(
			admissionStatus(validatingName, operatorsv1alpha1.ValidatingAdmissionWebhook, name),
			admissionStatus(mutatingName, operatorsv1alpha1.MutatingAdmissionWebhook, name),
		))
		for _, a := range whi.Status.AdmissionWebhooks {
			Expect(a.ExcludedNamespaces).To(Equal([]string{managerNamespace, "kube-system"}), "rules on widgets only: the install's namespace stays in")
		}

		By("calling the webhooks through the Service with the CRD's caBundle")
		caBundle := getCRD(ctx, crdName).Spec.Conversion.Webhook.ClientConfig.CABundle
		vwc, mwc := liveValidating(ctx, name), liveMutating(ctx, name)
		Expect(vwc.Labels).To(HaveKeyWithValue(desired.LabelManagedBy, desired.ManagedByValue))
		Expect(vwc.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationOwner, ns+"/widgets"))
		for _, cc := range []admissionregistrationv1.WebhookClientConfig{vwc.Webhooks[0].ClientConfig, mwc.Webhooks[0].ClientConfig} {
			Expect(cc.Service.Namespace + "/" + cc.Service.Name).To(Equal(ns + "/" + webhookService))
			Expect(*cc.Service.Port).To(Equal(int32(443)))
			Expect(cc.CABundle).To(Equal(caBundle), "the same trust as the CRD, so one CA rotation covers both")
		}
		Expect(*vwc.Webhooks[0].ClientConfig.Service.Path).To(Equal("/validate"))
		Expect(*mwc.Webhooks[0].ClientConfig.Service.Path).To(Equal("/mutate"))
		Eventually(func(g Gomega) {
			g.Expect(k8s.Create(ctx, widget(group, "v1", ns, "w-"+randomSuffix(), map[string]any{"value": "1"}))).To(Succeed())
			g.Expect(validate.calls.Load()).To(BeNumerically(">", 0))
			g.Expect(mutate.calls.Load()).To(BeNumerically(">", 0))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, ns)).To(ContainElement("ConfiguredAdmission"))
		}).Should(Succeed())
		expectIdleResync(ctx, ns, "widgets", name)

		By("reading the order of the writes in the API server's audit log")
		events, _, err := cluster.AuditEvents(start)
		Expect(err).NotTo(HaveOccurred())
		var madeAvailable *testcluster.AuditEvent
		for _, w := range deploymentStatusWrites(events, ns, deployment) {
			if w.Received.After(gateOpened) {
				madeAvailable = &w
				break
			}
		}
		Expect(madeAvailable).NotTo(BeNil(), "the deployment controller's status write once the pod got ready")
		for _, resource := range []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"} {
			writes := operatorRequests(events, "", resource, "", name)
			Expect(writes).NotTo(BeEmpty(), "the operator's write of the %s", resource)
			for _, w := range writes {
				Expect(w.Received).To(BeTemporally(">=", madeAvailable.Completed),
					"%s %s written at %s, before the Deployment was available (status written at %s)",
					w.Verb, resource, w.Received.Format(time.StampMicro), madeAvailable.Completed.Format(time.StampMicro))
			}
		}

		By("deleting the install: the configurations go first, then the Deployment and the Service")
		_, offset, err := cluster.AuditEvents(0)
		Expect(err).NotTo(HaveOccurred())
		Expect(k8s.Delete(ctx, getInstall(ctx, ns, "widgets"))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widgets"}, &v1alpha1.WebhookInstall{}))
		}).Should(BeTrue())
		events, _, err = cluster.AuditEvents(offset)
		Expect(err).NotTo(HaveOccurred())
		workloads := append(operatorRequests(events, "delete", "deployments", "", deployment), operatorRequests(events, "delete", "services", "", webhookService)...)
		Expect(workloads).To(HaveLen(2), "the Deployment's and the Service's deletion")
		for _, resource := range []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"} {
			deleted := operatorRequests(events, "delete", resource, "", name)
			Expect(deleted).To(HaveLen(1), "the operator's deletion of the %s", resource)
			for _, w := range workloads {
				Expect(deleted[0].Completed).To(BeTemporally("<", w.Received), "%s deleted at %s, after the %s (%s)",
					resource, deleted[0].Completed.Format(time.StampMicro), w.ObjectRef.Resource, w.Received.Format(time.StampMicro))
			}
		}
		for _, obj := range admissionObjects() {
			Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: name}, obj))).To(BeTrue(), "%T removed", obj)
		}
		Expect(eventReasons(ctx, Default, ns)).To(ContainElement("DeletedAdmissionConfiguration"))
	})

	It("never locks out the webhook's own Deployment: a validating webhook on pods and deployments, down, with failurePolicy Fail", func(ctx context.Context) {
		createWidgetCRD(ctx, group)
		validate := &reviewer{}
		cluster.Kubelet.Serve(ns, "widget-webhook", testcluster.HandlerHost{Handler: webhookMux(validate, nil)})
		install := newInstall(ns, "widgets", "widget-webhook", crdName)
		lockout := admissionDefinition(operatorsv1alpha1.ValidatingAdmissionWebhook, "vlockout.hookwright.test", "/validate",
			v1alpha1.AdmissionRule{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}, APIGroups: []string{""}, APIVersions: []string{"*"}, Resources: []string{"pods"}},
			v1alpha1.AdmissionRule{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}, APIGroups: []string{"apps"}, APIVersions: []string{"*"}, Resources: []string{"deployments"}})
		lockout.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
		install.Spec.WebhookDefinitions = append(install.Spec.WebhookDefinitions, lockout)
		name := desired.AdmissionConfigurationName(install)
		Expect(k8s.Create(ctx, install)).To(Succeed())
		// A down webhook on every Deployment must not outlive this spec.
		DeferCleanup(func(ctx context.Context) {
			validate.down.Store(false)
			whi := &v1alpha1.WebhookInstall{}
			if k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widgets"}, whi) == nil {
				Expect(client.IgnoreNotFound(k8s.Delete(ctx, whi))).To(Succeed())
			}
			Eventually(func() bool {
				return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: name}, &admissionregistrationv1.ValidatingWebhookConfiguration{}))
			}).Should(BeTrue(), "the install's deletion removes its configuration")
		})
		whi := eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		excluded := []string{ns, managerNamespace, "kube-system"}
		slices.Sort(excluded)
		Expect(whi.Status.AdmissionWebhooks).To(ConsistOf(HaveField("ExcludedNamespaces", excluded)))
		Expect(liveValidating(ctx, name).Webhooks[0].NamespaceSelector).To(Equal(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: excluded,
		}}}))

		By("taking the webhook down: it refuses every Deployment write it sees")
		validate.down.Store(true)
		other := createNamespace(ctx)
		Eventually(func() error {
			err := k8s.Create(ctx, plainDeployment(other, "blocked"))
			if err == nil { // the API server had not loaded the configuration yet
				return k8s.Delete(ctx, plainDeployment(other, "blocked"))
			}
			return err
		}).Should(MatchError(ContainSubstring("vlockout.hookwright.test")), "the webhook sees Deployments in other namespaces")
		Expect(k8s.Create(ctx, plainDeployment(ns, "bystander"))).To(Succeed(), "the install's own namespace is excluded")

		By("changing the webhook's pod template: Hookwright rolls its Deployment out all the same")
		_, offset, err := cluster.AuditEvents(0)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			whi := installIn(ctx, g, ns, "widgets")
			whi.Spec.Install.Spec.Deployments[0].Spec.Template.Annotations = map[string]string{"example.com/rollout": "2"}
			g.Expect(k8s.Update(ctx, whi)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			dep := &appsv1.Deployment{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widget-webhook"}, dep)).To(Succeed())
			g.Expect(dep.Spec.Template.Annotations).To(HaveKeyWithValue("example.com/rollout", "2"))
			g.Expect(dep.Status.ObservedGeneration).To(Equal(dep.Generation))
			g.Expect(dep.Status.UpdatedReplicas).To(Equal(int32(1)), "the new pod template rolled out")
			g.Expect(dep.Status.AvailableReplicas).To(Equal(int32(1)))
		}).Should(Succeed())
		events, _, err := cluster.AuditEvents(offset)
		Expect(err).NotTo(HaveOccurred())
		Expect(operatorRequests(events, "patch", "deployments", "", "widget-webhook")).NotTo(BeEmpty(), "the operator's rollout, accepted while the webhook is down")
		Expect(validate.down.Load()).To(BeTrue())
	})

	It("never overwrites a foreign ValidatingWebhookConfiguration of its name (NameTaken), and registers once it is gone", func(ctx context.Context) {
		createWidgetCRD(ctx, group)
		cluster.Kubelet.Serve(ns, "widget-webhook", testcluster.HandlerHost{Handler: webhookMux(&reviewer{}, nil)})
		install := widgetAdmissionInstall(ns, group, crdName, true, false)
		name := desired.AdmissionConfigurationName(install)
		foreign := &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"owner": "someone-else"}},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name:         "foreign.hookwright.test",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://foreign.invalid/validate")},
				Rules: []admissionregistrationv1.RuleWithOperations{{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"foreign.invalid"}, APIVersions: []string{"v1"}, Resources: []string{"things"}},
				}},
				FailurePolicy: ptr.To(admissionregistrationv1.Ignore), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
			}},
		}
		Expect(k8s.Create(ctx, foreign)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, foreign))).To(Succeed()) })
		Expect(k8s.Create(ctx, install)).To(Succeed())

		whi := eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseFailed, v1alpha1.ReasonNameTaken)
		Expect(whi.Status.Message).To(ContainSubstring("ValidatingWebhookConfiguration " + name + " exists and is not managed by Hookwright"))
		Expect(whi.Status.AdmissionWebhooks).To(ConsistOf(And(HaveField("Name", validatingName), HaveField("State", v1alpha1.AdmissionFailed))))
		Consistently(func(g Gomega) {
			live := liveValidatingIn(ctx, g, name)
			g.Expect(live.ResourceVersion).To(Equal(foreign.ResourceVersion), "the foreign configuration is never written")
		}, 2*time.Second).Should(Succeed())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widget-webhook"}, &appsv1.Deployment{}))).To(BeTrue(), "a refused install deploys nothing")

		By("deleting the foreign configuration: the install registers its own")
		Expect(k8s.Delete(ctx, foreign)).To(Succeed())
		Eventually(func(g Gomega) {
			whi := installIn(ctx, g, ns, "widgets")
			g.Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), "status: %s/%s", whi.Status.Reason, whi.Status.Message)
		}, 90*time.Second).Should(Succeed())
		live := liveValidating(ctx, name)
		Expect(live.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationOwner, ns+"/widgets"))
		Expect(live.Webhooks).To(ConsistOf(HaveField("Name", validatingName)))
	})

	It("restores the caBundle and the service of its configuration when another field manager changes them, with an Event, and counts the restores", func(ctx context.Context) {
		createWidgetCRD(ctx, group)
		cluster.Kubelet.Serve(ns, "widget-webhook", testcluster.HandlerHost{Handler: webhookMux(&reviewer{}, &reviewer{})})
		install := widgetAdmissionInstall(ns, group, crdName, true, true)
		name := desired.AdmissionConfigurationName(install)
		Expect(k8s.Create(ctx, install)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		want := liveValidating(ctx, name).Webhooks[0].ClientConfig
		before := metricValue("hookwright_admission_drift_restores_total", map[string]string{"type": string(operatorsv1alpha1.ValidatingAdmissionWebhook)})
		foreignCA, err := certs.NewCA("foreign", certs.ECDSAP256, time.Hour, time.Now())
		Expect(err).NotTo(HaveOccurred())

		for _, edit := range []struct {
			what   string
			change func(*admissionregistrationv1.WebhookClientConfig)
		}{
			{"caBundle", func(cc *admissionregistrationv1.WebhookClientConfig) { cc.CABundle = foreignCA.Pair.CertPEM }},
			{"service", func(cc *admissionregistrationv1.WebhookClientConfig) { cc.Service.Name = "someone-elses-webhook" }},
		} {
			By("someone else changing the " + edit.what)
			Eventually(func(g Gomega) {
				live := liveValidatingIn(ctx, g, name)
				edit.change(&live.Webhooks[0].ClientConfig)
				g.Expect(k8s.Update(ctx, live, client.FieldOwner("someone-else"))).To(Succeed())
			}).Should(Succeed())
			Eventually(func(g Gomega) {
				g.Expect(liveValidatingIn(ctx, g, name).Webhooks[0].ClientConfig).To(Equal(want))
			}).Should(Succeed(), "Hookwright restores the %s", edit.what)
		}
		Eventually(func(g Gomega) {
			g.Expect(crdEventReasons(ctx, g, name)).To(ContainElement("AdmissionDriftRestored"), "a Warning on the configuration")
			whi := installIn(ctx, g, ns, "widgets")
			g.Expect(whi.Status.AdmissionWebhooks).To(ContainElement(And(
				HaveField("Name", validatingName), HaveField("DriftRestores", BeNumerically(">=", 2)), HaveField("LastDriftManager", "someone-else"))))
			g.Expect(condition(whi, v1alpha1.TypeAdmissionContested).Status).To(Equal(metav1.ConditionFalse), "two restores are no fight yet")
		}).Should(Succeed())
		Expect(metricValue("hookwright_admission_drift_restores_total", map[string]string{"type": string(operatorsv1alpha1.ValidatingAdmissionWebhook)})).
			To(BeNumerically(">=", before+2))
		Expect(liveMutating(ctx, name).Webhooks[0].ClientConfig.CABundle).To(Equal(want.CABundle), "the mutating configuration was left alone")
	})

	It("deletes a configuration once the install declares no admission webhook of its kind", func(ctx context.Context) {
		createWidgetCRD(ctx, group)
		cluster.Kubelet.Serve(ns, "widget-webhook", testcluster.HandlerHost{Handler: webhookMux(&reviewer{}, &reviewer{})})
		install := widgetAdmissionInstall(ns, group, crdName, true, true)
		name := desired.AdmissionConfigurationName(install)
		Expect(k8s.Create(ctx, install)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		liveMutating(ctx, name)

		for _, drop := range []struct {
			kind operatorsv1alpha1.WebhookAdmissionType
			obj  client.Object
		}{
			{operatorsv1alpha1.MutatingAdmissionWebhook, &admissionregistrationv1.MutatingWebhookConfiguration{}},
			{operatorsv1alpha1.ValidatingAdmissionWebhook, &admissionregistrationv1.ValidatingWebhookConfiguration{}},
		} {
			By("removing the " + string(drop.kind))
			Eventually(func(g Gomega) {
				whi := installIn(ctx, g, ns, "widgets")
				whi.Spec.WebhookDefinitions = slices.DeleteFunc(whi.Spec.WebhookDefinitions, func(d v1alpha1.WebhookDefinition) bool { return d.Type == drop.kind })
				g.Expect(k8s.Update(ctx, whi)).To(Succeed())
			}).Should(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: name}, drop.obj))
			}).Should(BeTrue(), "the %s configuration is deleted", drop.kind)
			whi := eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
			Expect(whi.Status.AdmissionWebhooks).NotTo(ContainElement(HaveField("Type", string(drop.kind))))
		}
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, ns)).To(ContainElement("DeletedAdmissionConfiguration"))
		}).Should(Succeed())
		whi := getInstall(ctx, ns, "widgets")
		Expect(condition(whi, v1alpha1.TypeAdmissionConfigured).Status).To(Equal(metav1.ConditionTrue))
		Expect(condition(whi, v1alpha1.TypeAdmissionConfigured).Message).To(Equal("the install has no admission webhooks"))
	})

	It("completes the rotations of a Service only admission webhooks call: its first certificates, then a CA rotation", func(ctx context.Context) {
		createWidgetCRD(ctx, group) // for the webhooks' rules: the install converts nothing
		validate := &reviewer{}
		cluster.Kubelet.Serve(ns, "widget-webhook", testcluster.HandlerHost{Handler: webhookMux(validate, nil)})
		install := widgetAdmissionInstall(ns, group, crdName, true, false)
		install.Spec.WebhookDefinitions = slices.DeleteFunc(install.Spec.WebhookDefinitions, func(d v1alpha1.WebhookDefinition) bool {
			return d.Type == operatorsv1alpha1.ConversionWebhook
		})
		install.Spec.CustomResourceDefinitions.Owned = nil
		install.Spec.Certificates.TrustOverlap = &metav1.Duration{Duration: time.Second}
		Expect(k8s.Create(ctx, install)).To(Succeed())
		rotationsEnd := func(want int) {
			GinkgoHelper()
			eventuallyRotationsSucceeded(ctx, ns, want, func(g Gomega, whi *v1alpha1.WebhookInstall) {
				g.Expect(condition(whi, v1alpha1.TypeAdmissionVerified).Status).To(Equal(metav1.ConditionTrue))
			})
		}
		By("its first certificates: a CA and a serving rotation, both Initial")
		rotationsEnd(2)
		Expect(validate.calls.Load()).To(BeNumerically(">", 0), "verified through the webhook")

		By("a CA rotation: the new CA and the serving certificate it reissues")
		requestRotation(ctx, ns, "ca: admission webhooks only")
		rotationsEnd(4)
	})
})

var _ = Describe("Admission webhooks on an upgrade (spec.replaces)", func() {
	It("registers the new version's configurations once it serves, and deletes the old ones only once it has succeeded, before the old Deployment and Service", func(ctx context.Context) {
		ns, group, crdName := widgetNamespace(ctx)
		cluster.Kubelet.Serve(ns, "widget-webhook-v1", testcluster.HandlerHost{Handler: webhookMux(&reviewer{}, &reviewer{})})
		old := widgetAdmissionInstall(ns, group, crdName, true, true)
		old.Name = "widgets-v1"
		for i := range old.Spec.WebhookDefinitions {
			old.Spec.WebhookDefinitions[i].DeploymentName = "widget-webhook-v1"
		}
		old.Spec.Install.Spec.Deployments[0].Name = "widget-webhook-v1"
		Expect(k8s.Create(ctx, old)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets-v1", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		oldName := desired.AdmissionConfigurationName(old)
		liveValidating(ctx, oldName)
		_, start, err := cluster.AuditEvents(0)
		Expect(err).NotTo(HaveOccurred())

		By("creating the new version, whose webhook does not serve yet: the old configurations stay, the new ones wait")
		newer := widgetAdmissionInstall(ns, group, crdName, true, true)
		newer.Name, newer.Spec.Version, newer.Spec.Replaces = "widgets-v2", "2.0.0", "widgets-v1"
		for i := range newer.Spec.WebhookDefinitions {
			newer.Spec.WebhookDefinitions[i].DeploymentName = "widget-webhook-v2"
		}
		newer.Spec.Install.Spec.Deployments[0].Name = "widget-webhook-v2"
		newName := desired.AdmissionConfigurationName(newer)
		Expect(k8s.Create(ctx, newer)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets-v2", v1alpha1.PhaseInstalling, v1alpha1.ReasonDeploymentUnavailable)
		eventuallyPhase(ctx, ns, "widgets-v1", v1alpha1.PhaseReplacing, v1alpha1.ReasonReplacing)
		Consistently(func(g Gomega) {
			g.Expect(liveValidatingIn(ctx, g, oldName).Webhooks[0].ClientConfig.Service.Name).To(Equal("widget-webhook-v1-service"))
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: newName}, &admissionregistrationv1.ValidatingWebhookConfiguration{}))).To(BeTrue())
		}, 2*time.Second, 200*time.Millisecond).Should(Succeed())

		By("letting the new webhook serve: it registers its own, then the old install deletes its configurations, then its workloads")
		cluster.Kubelet.Serve(ns, "widget-webhook-v2", testcluster.HandlerHost{Handler: webhookMux(&reviewer{}, &reviewer{})})
		eventuallyPhase(ctx, ns, "widgets-v2", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		eventuallyPhase(ctx, ns, "widgets-v1", v1alpha1.PhaseReplaced, v1alpha1.ReasonReplaced)
		Expect(liveValidating(ctx, newName).Webhooks[0].ClientConfig.Service.Name).To(Equal("widget-webhook-v2-service"))
		Expect(liveMutating(ctx, newName).Webhooks[0].ClientConfig.Service.Name).To(Equal("widget-webhook-v2-service"))
		events, _, err := cluster.AuditEvents(start)
		Expect(err).NotTo(HaveOccurred())
		workloads := append(operatorRequests(events, "delete", "deployments", "", "widget-webhook-v1"), operatorRequests(events, "delete", "services", "", "widget-webhook-v1-service")...)
		Expect(workloads).To(HaveLen(2), "the old Deployment's and Service's deletion")
		for _, resource := range []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"} {
			registered := operatorRequests(events, "", resource, "", newName)
			Expect(registered).NotTo(BeEmpty(), "the new install's %s", resource)
			deleted := operatorRequests(events, "delete", resource, "", oldName)
			Expect(deleted).To(HaveLen(1), "the old install's %s deleted", resource)
			Expect(deleted[0].Received).To(BeTemporally(">", registered[0].Completed), "%s: the webhooks are never unregistered during the upgrade", resource)
			for _, w := range workloads {
				Expect(deleted[0].Completed).To(BeTemporally("<", w.Received), "%s deleted after the old %s", resource, w.ObjectRef.Resource)
			}
		}
		for _, obj := range admissionObjects() {
			Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: oldName}, obj))).To(BeTrue(), "the old %T is gone", obj)
		}
	})
})

// expectIdleResync waits until the install's passes settle (two 2 s
// windows without a write in its namespace or to its configurations),
// wakes it with an annotation, and expects the pass to write nothing: its
// admission configurations are compared, not rewritten.
func expectIdleResync(ctx context.Context, ns, install, configuration string) {
	GinkgoHelper()
	ours := func(e testcluster.AuditEvent) bool {
		return e.ObjectRef.Namespace == ns || e.ObjectRef.Name == configuration
	}
	_, offset := managerWrites(0)
	// Quiet for three polls, at least 4 s: longer than the 2 s after which
	// a first verification is confirmed by a dry run, which counts here
	// and which the pass below would otherwise make (seen on a loaded CI
	// run with two polls).
	quiet := 0
	Eventually(func() int {
		writes, next := managerWrites(offset)
		offset = next
		if slices.ContainsFunc(writes, ours) {
			quiet = 0
		} else {
			quiet++
		}
		return quiet
	}, 60*time.Second, 2*time.Second).Should(BeNumerically(">=", 3))
	reconciles := reconcileCount()
	whi := getInstall(ctx, ns, install)
	patch := client.MergeFrom(whi.DeepCopy())
	whi.Annotations = map[string]string{"example.com/poke": "resync"}
	Expect(k8s.Patch(ctx, whi, patch)).To(Succeed())
	Eventually(reconcileCount).Should(BeNumerically(">", reconciles), "the annotation woke the reconciler")
	time.Sleep(time.Second) // room for any write the pass would make
	writes, _ := managerWrites(offset)
	var made []string
	for _, w := range writes {
		if ours(w) {
			made = append(made, w.Verb+" "+w.RequestURI)
		}
	}
	Expect(made).To(BeEmpty(), "an idle resync writes nothing")
}

// widgetAdmissionInstall is the widget install (conversion) with a
// validating and/or a mutating webhook on the widgets of group, served by
// the same deployment on paths /validate and /mutate.
func widgetAdmissionInstall(ns, group, crdName string, validating, mutating bool) *v1alpha1.WebhookInstall {
	install := newInstall(ns, "widgets", "widget-webhook", crdName)
	widgets := v1alpha1.AdmissionRule{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		APIGroups:  []string{group}, APIVersions: []string{"*"}, Resources: []string{"widgets"},
	}
	if validating {
		install.Spec.WebhookDefinitions = append(install.Spec.WebhookDefinitions,
			admissionDefinition(operatorsv1alpha1.ValidatingAdmissionWebhook, validatingName, "/validate", widgets))
	}
	if mutating {
		install.Spec.WebhookDefinitions = append(install.Spec.WebhookDefinitions,
			admissionDefinition(operatorsv1alpha1.MutatingAdmissionWebhook, mutatingName, "/mutate", widgets))
	}
	return install
}

// admissionDefinition is an admission webhook of the widget-webhook
// deployment, on the conversion webhook's port.
func admissionDefinition(kind operatorsv1alpha1.WebhookAdmissionType, name, path string, rules ...v1alpha1.AdmissionRule) v1alpha1.WebhookDefinition {
	return v1alpha1.WebhookDefinition{
		GenerateName: name, Type: kind, DeploymentName: "widget-webhook",
		ContainerPort: 443, TargetPort: ptr.To(intstr.FromInt32(9443)), WebhookPath: ptr.To(path),
		AdmissionReviewVersions: []string{"v1"}, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
		Rules: rules,
	}
}

func admissionStatus(name string, kind operatorsv1alpha1.WebhookAdmissionType, configuration string) OmegaMatcher {
	return And(HaveField("Name", name), HaveField("Type", string(kind)), HaveField("Configuration", configuration),
		HaveField("State", BeElementOf(v1alpha1.AdmissionRegistered, v1alpha1.AdmissionVerified)))
}

func admissionObjects() []client.Object {
	return []client.Object{&admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{}}
}

func liveValidating(ctx context.Context, name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKey{Name: name}, cfg)).To(Succeed())
	return cfg
}

func liveValidatingIn(ctx context.Context, g Gomega, name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, cfg)).To(Succeed())
	return cfg
}

func liveMutating(ctx context.Context, name string) *admissionregistrationv1.MutatingWebhookConfiguration {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKey{Name: name}, cfg)).To(Succeed())
	return cfg
}

// plainDeployment is a Deployment nobody serves (its Pods stay Pending on
// the test ground's node).
func plainDeployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:v1"}}},
			},
		},
	}
}

// webhookMux serves the widget webhook's program: validate on /validate,
// mutate on /mutate (when set), and the widget conversion on every other
// path, as one manager pod serves them with one certificate.
func webhookMux(validate, mutate *reviewer) http.Handler {
	mux := http.NewServeMux()
	if validate != nil {
		mux.Handle("/validate", validate)
	}
	if mutate != nil {
		mux.Handle("/mutate", mutate)
	}
	mux.Handle("/", &testcluster.WidgetConverter{})
	return mux
}

// reviewer is an admission webhook that allows every request, or, down,
// answers every review with HTTP 500 (a webhook that cannot be called).
type reviewer struct {
	calls atomic.Int64
	down  atomic.Bool
}

func (rv *reviewer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rv.calls.Add(1)
	if rv.down.Load() {
		http.Error(w, "the webhook is down", http.StatusInternalServerError)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

var suffixes atomic.Int64

func randomSuffix() string { return strconv.FormatInt(suffixes.Add(1), 10) }
