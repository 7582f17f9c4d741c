package controllers_test

import (
	"context"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/internal/testcluster"
)

var _ = Describe("Installing a conversion webhook", func() {
	var ns, group, crdName string
	BeforeEach(func(ctx context.Context) {
		ns = createNamespace(ctx)
		group = ns + ".hookwright.test"
		crdName = "widgets." + group
	})

	It("runs the webhook, points the CRD at it, and the API server converts through it (dotted deployment name)", func(ctx context.Context) {
		const deployment = "widget.webhook.v1" // OLM names its Service and its CRD reference differently for dots
		createWidgetCRD(ctx, group)
		converter := serve(ns, deployment)
		Expect(k8s.Create(ctx, newInstall(ns, "widgets", deployment, crdName))).To(Succeed())

		whi := eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		for _, t := range []string{v1alpha1.TypeReady, v1alpha1.TypeCertificatesReady, v1alpha1.TypeWebhooksAvailable, v1alpha1.TypeConversionConfigured, v1alpha1.TypeConversionVerified} {
			Expect(condition(whi, t).Status).To(Equal(metav1.ConditionTrue), t)
		}
		// verifiedSince is what a restarted Hookwright reads to confirm a
		// verification its predecessor may not have (verify_confirm.go).
		Expect(whi.Status.ConversionCRDs).To(ConsistOf(And(HaveField("State", v1alpha1.ConversionVerified), HaveField("VerifiedSince", Not(BeNil())))))

		const service = "widget-webhook-v1-service"
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: service}, &corev1.Service{})).To(Succeed())
		Expect(conversionService(getCRD(ctx, crdName))).To(Equal(ns + "/" + service))

		servingSecret := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: desired.ServingSecretName(service)}, servingSecret)).To(Succeed())
		Expect(servingSecret.Type).To(Equal(corev1.SecretTypeTLS))
		Expect(servingSecret.Data).To(HaveKey("ca.crt"))
		caSecret := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: desired.CASecretName(service)}, caSecret)).To(Succeed())
		Expect(servingSecret.Data["tls.key"]).NotTo(Equal(caSecret.Data["tls.key"]), "the CA key stays in its own Secret")
		ca, err := certs.ParseCert(caSecret.Data["tls.crt"])
		Expect(err).NotTo(HaveOccurred())
		Expect(whi.Status.Services).To(ConsistOf(And(
			HaveField("Name", service), HaveField("CAFingerprint", certs.Fingerprint(ca)),
			HaveField("SecretName", desired.ServingSecretName(service)))))
		Expect(whi.Status.CertsRotateAt).NotTo(BeNil())
		Expect(getCRD(ctx, crdName).Spec.Conversion.Webhook.ClientConfig.CABundle).To(Equal(caSecret.Data["tls.crt"]))

		var sa corev1.ServiceAccount
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widget-webhook"}, &sa)).To(Succeed(), "missing service account created bare")

		table, err := cluster.Kubectl(ctx, "get", "whi", "-n", ns, "-o", "wide")
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Fields(strings.SplitN(table, "\n", 2)[0])).To(Equal([]string{"NAME", "PHASE", "CRDS", "CA-EXPIRES", "ROTATE-AT", "SERVING-EXPIRES", "REASON", "ADMISSION", "MIGRATION", "AGE"}))
		Expect(table).To(ContainSubstring("Succeeded"))
		Expect(table).To(ContainSubstring(crdName))

		Expect(k8s.Create(ctx, widget(group, "v1", ns, "made-in-v1", map[string]any{"value": "42"}))).To(Succeed())
		before := converter.Calls.Load()
		asV2, err := readWidget(ctx, group, "v2", ns, "made-in-v1")
		Expect(err).NotTo(HaveOccurred())
		Expect(specField(asV2, "amount")).To(Equal("42"))
		Expect(converter.Calls.Load()).To(BeNumerically(">", before))
	})

	It("writes the CRD's conversion only once the webhook Deployment is available", func(ctx context.Context) {
		const deployment = "widget-webhook"
		createWidgetCRD(ctx, group)
		_, start, err := cluster.AuditEvents(0)
		Expect(err).NotTo(HaveOccurred())
		Expect(k8s.Create(ctx, newInstall(ns, "widgets", deployment, crdName))).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseInstalling, v1alpha1.ReasonDeploymentUnavailable)
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: deployment}, &appsv1.Deployment{})).To(Succeed())

		By("running the webhook's pod, which gets ready only once the gate opens")
		gate := make(chan struct{})
		cluster.Kubelet.Serve(ns, deployment, testcluster.HostFunc(func(ctx context.Context, env *testcluster.PodEnv) error {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil
			}
			return testcluster.HandlerHost{Handler: &testcluster.WidgetConverter{}}.Run(ctx, env)
		}))
		// The pod runs, not ready: the deployment controller writes an
		// unavailable status, and the operator, woken by it, runs a pass (it
		// reads the CRD live).
		Eventually(func(g Gomega) {
			events, _, err := cluster.AuditEvents(start)
			g.Expect(err).NotTo(HaveOccurred())
			reported := deploymentStatusWrites(events, ns, deployment)
			g.Expect(reported).NotTo(BeEmpty(), "the deployment controller reported the Deployment")
			g.Expect(operatorRequests(events, "get", "customresourcedefinitions", "", crdName)).To(ContainElement(
				HaveField("Received", BeTemporally(">", reported[len(reported)-1].Completed))), "a pass of the operator since")
		}).Should(Succeed())
		gateOpened := time.Now()
		close(gate)

		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		Expect(conversionService(getCRD(ctx, crdName))).To(Equal(ns + "/widget-webhook-service"))

		By("telling where the install ended, not the steps it waited in")
		Eventually(func(g Gomega) []string { return eventNotes(ctx, g, ns) }).Should(ContainElement(HavePrefix("Succeeded: ")))
		Expect(eventNotes(ctx, Default, ns)).NotTo(ContainElement(HavePrefix("Installing: ")),
			"a new install's wait for its Deployment is a step: the status shows it, and the Event tells its end")

		By("reading the order of the writes in the API server's audit log")
		events, _, err := cluster.AuditEvents(start)
		Expect(err).NotTo(HaveOccurred())
		applied := operatorRequests(events, "", "deployments", "", deployment)
		Expect(applied).NotTo(BeEmpty(), "the operator's write of the Deployment")
		var madeAvailable *testcluster.AuditEvent
		for _, w := range deploymentStatusWrites(events, ns, deployment) {
			if w.Received.After(gateOpened) { // the pod got ready only then
				madeAvailable = &w
				break
			}
		}
		Expect(madeAvailable).NotTo(BeNil(), "the deployment controller's status write once the pod got ready")
		var dep appsv1.Deployment
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: deployment}, &dep)).To(Succeed())
		Expect(dep.Status.AvailableReplicas).To(BeNumerically(">=", 1), "the Deployment is available")
		// The CRD's claim is patched before the Deployment is applied; any
		// later patch of the CRD is the conversion.
		var conversionPatches []testcluster.AuditEvent
		for _, p := range operatorRequests(events, "patch", "customresourcedefinitions", "", crdName) {
			if p.Received.After(applied[0].Received) {
				conversionPatches = append(conversionPatches, p)
			}
		}
		Expect(conversionPatches).NotTo(BeEmpty(), "the operator's patch of spec.conversion")
		for _, p := range conversionPatches {
			Expect(p.Received).To(BeTemporally(">=", madeAvailable.Completed),
				"the CRD was patched at %s, before the Deployment was available (status written at %s, the pod got ready after %s)",
				p.Received.Format(time.StampMicro), madeAvailable.Completed.Format(time.StampMicro), gateOpened.Format(time.StampMicro))
		}

		By("verifying in the pass that pointed the CRD, once the operator's CRD watch showed the write")
		pointed := conversionPatches[len(conversionPatches)-1]
		var dryRun *testcluster.AuditEvent
		for _, e := range operatorRequests(events, "create", "widgets", "", "") {
			if e.Received.After(pointed.Completed) {
				dryRun = &e
				break
			}
		}
		Expect(dryRun).NotTo(BeNil(), "the operator's verification (a dry-run create at v2) after it pointed the CRD")
		for _, get := range operatorRequests(events, "get", "customresourcedefinitions", "", crdName) {
			Expect(get.Received.After(pointed.Completed) && get.Received.Before(dryRun.Received)).To(BeFalse(),
				"a pass began (a live read of the CRD at %s) between the conversion write (%s) and its verification (%s): the verification waited for a pass of its own",
				get.Received.Format(time.StampMicro), pointed.Completed.Format(time.StampMicro), dryRun.Received.Format(time.StampMicro))
		}
	})

	It("waits in Pending for a missing CRD and converges when it is created", func(ctx context.Context) {
		serve(ns, "widget-webhook")
		Expect(k8s.Create(ctx, newInstall(ns, "widgets", "widget-webhook", crdName))).To(Succeed())
		whi := eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhasePending, v1alpha1.ReasonCRDNotFound)
		Expect(whi.Status.Message).To(ContainSubstring("CRD " + crdName + " does not exist yet"))
		Expect(condition(whi, v1alpha1.TypeReady).Reason).To(Equal(v1alpha1.ReasonCRDNotFound))

		createWidgetCRD(ctx, group)
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
	})

	It("refuses a conversion someone else configured until an admin hands it over", func(ctx context.Context) {
		foreignCA, err := certs.NewCA("foreign", certs.ECDSAP256, time.Hour, time.Now())
		Expect(err).NotTo(HaveOccurred())
		crd := createForeignCRD(ctx, group, ns, foreignCA.Pair.CertPEM)
		serve(ns, "widget-webhook")
		Expect(k8s.Create(ctx, newInstall(ns, "widgets", "widget-webhook", crdName))).To(Succeed())

		whi := eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseFailed, v1alpha1.ReasonForeignConversion)
		Expect(whi.Status.Message).To(ContainSubstring("kubectl annotate crd " + crdName + " " + v1alpha1.AnnotationHandover + "=" + ns + "/widgets"))
		Consistently(func() string { return conversionService(getCRD(ctx, crdName)) }, time.Second).Should(Equal(ns + "/someone-elses-webhook"))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widget-webhook"}, &appsv1.Deployment{})).To(Satisfy(apierrors.IsNotFound), "a refused install deploys nothing")

		patch := client.MergeFrom(crd.DeepCopy())
		crd.Annotations = map[string]string{v1alpha1.AnnotationHandover: ns + "/widgets"}
		Expect(k8s.Patch(ctx, crd, patch)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		taken := getCRD(ctx, crdName)
		Expect(conversionService(taken)).To(Equal(ns + "/widget-webhook-service"))
		Expect(taken.Annotations).NotTo(HaveKey(v1alpha1.AnnotationHandover), "a handover is used once")
	})
})

func createForeignCRD(ctx context.Context, group, ns string, caBundle []byte) *apiextensionsv1.CustomResourceDefinition {
	crd := createWidgetCRD(ctx, group)
	patch := client.MergeFrom(crd.DeepCopy())
	crd.Spec.Conversion = testcluster.WidgetCRD(group, ns, "someone-elses-webhook", caBundle).Spec.Conversion
	Expect(k8s.Patch(ctx, crd, patch, client.FieldOwner("someone-else"))).To(Succeed())
	return crd
}

// deploymentStatusWrites are the deployment controller's successful
// writes of the Deployment's status, in the order the API server received
// them.
func deploymentStatusWrites(events []testcluster.AuditEvent, ns, deployment string) []testcluster.AuditEvent {
	var writes []testcluster.AuditEvent
	for _, e := range events {
		if e.User.Username == testcluster.ControllerManagerUser && e.IsWrite() && succeeded(e) && e.ObjectRef.Resource == "deployments" &&
			e.ObjectRef.Subresource == "status" && e.ObjectRef.Namespace == ns && e.ObjectRef.Name == deployment {
			writes = append(writes, e)
		}
	}
	sortByReceived(writes)
	return writes
}

// operatorRequests are the operator's successful requests with verb (any
// write when empty) on resource/subresource name, in the order received.
func operatorRequests(events []testcluster.AuditEvent, verb, resource, subresource, name string) []testcluster.AuditEvent {
	var found []testcluster.AuditEvent
	for _, e := range events {
		if e.User.Username == managerUser && succeeded(e) && (e.Verb == verb || verb == "" && e.IsWrite()) &&
			e.ObjectRef.Resource == resource && e.ObjectRef.Subresource == subresource && e.ObjectRef.Name == name {
			found = append(found, e)
		}
	}
	sortByReceived(found)
	return found
}

func succeeded(e testcluster.AuditEvent) bool {
	return e.ResponseStatus.Code >= 200 && e.ResponseStatus.Code < 300
}

func sortByReceived(events []testcluster.AuditEvent) {
	sort.SliceStable(events, func(i, j int) bool { return events[i].Received.Before(events[j].Received) })
}
