package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/internal/eventnote"
	"github.com/hookwright/hookwright/internal/testcluster"
	"github.com/hookwright/hookwright/internal/testfixtures"
)

func startReaders(ctx context.Context, group, ns string, names []string, workers int) *testfixtures.Reader {
	return testfixtures.StartReaders(ctx, k8s, group, ns, names, workers)
}

var _ = Describe("Certificate rotation", func() {
	var ns, group, crdName string
	BeforeEach(func(ctx context.Context) {
		ns, group, crdName = widgetNamespace(ctx)
		serve(ns, "widget-webhook")
	})

	It("rotates CA and serving certificates 20 times under continuous reads without a single failed read", func(ctx context.Context) {
		const propagation = 3 * time.Second
		cluster.Kubelet.SetPropagationDelay(propagation)
		DeferCleanup(func() { cluster.Kubelet.SetPropagationDelay(0) })

		install := newInstall(ns, "widgets", "widget-webhook", crdName)
		install.Spec.Certificates.TrustOverlap = &metav1.Duration{Duration: 2 * time.Second}
		Expect(k8s.Create(ctx, install)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		var names []string
		for i := range 5 {
			names = append(names, fmt.Sprintf("w%d", i))
			Expect(k8s.Create(ctx, widget(group, "v1", ns, names[i], map[string]any{"value": fmt.Sprint(i)}))).To(Succeed())
		}

		failedVerificationsBefore := metricValue("hookwright_conversion_verifications_total", map[string]string{"result": "failure"})
		verifiedSeen := watchCondition(ctx, ns, "widgets", v1alpha1.TypeConversionVerified)
		readers := startReaders(ctx, group, ns, names, 4)
		started := time.Now()
		caRotations, servingRotations := 0, 0
		for i := 1; i <= 20; i++ {
			kind := "serving"
			if i%2 == 1 {
				kind = "ca"
				caRotations++
			} else {
				servingRotations++
			}
			request := fmt.Sprintf("%s: forced rotation %d", kind, i)
			whi := getInstall(ctx, ns, "widgets")
			patch := client.MergeFrom(whi.DeepCopy())
			whi.Annotations = map[string]string{v1alpha1.AnnotationRotate: request}
			Expect(k8s.Patch(ctx, whi, patch)).To(Succeed())
			Eventually(func(g Gomega) {
				whi := installIn(ctx, g, ns, "widgets")
				g.Expect(whi.Status.HandledRotationRequest).To(Equal(request))
				for _, rec := range whi.Status.Rotations {
					g.Expect(rec.Outcome).NotTo(Equal(v1alpha1.RotationInProgress), "rotation %d still running: %+v", i, rec)
				}
				g.Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
			}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
		}
		readers.Halt()
		elapsed := time.Since(started)

		ok, failed := readers.OK.Load(), readers.Failed.Load()
		report := fmt.Sprintf("%d CA + %d serving rotations in %s: %d reads ok, %d failed (%.1f reads/s), propagation delay %s",
			caRotations, servingRotations, elapsed.Round(time.Second), ok, failed, float64(ok+failed)/elapsed.Seconds(), propagation)
		AddReportEntry("rotation under load", report, ReportEntryVisibilityAlways)
		fmt.Fprintln(GinkgoWriter, report)
		Expect(failed).To(BeZero(), "failed reads: %v", readers.FirstErrors())
		Expect(float64(ok) / elapsed.Seconds()).To(BeNumerically(">=", 20))
		// Reads never failed, and the status never said otherwise: a CA
		// rotation's caBundle writes keep ConversionVerified True (an alert
		// on it must not fire on every rotation).
		seen := verifiedSeen()
		Expect(len(seen)).To(BeNumerically(">=", 20), "one status write per rotation at least")
		Expect(seen).To(HaveEach(HavePrefix(string(metav1.ConditionTrue))), "ConversionVerified, every status written during the rotations")

		whi := getInstall(ctx, ns, "widgets")
		Expect(whi.Status.Rotations).To(HaveLen(20), "the audit trail is bounded to 20")
		manual := 0
		for _, rec := range whi.Status.Rotations {
			Expect(rec.Outcome).To(Equal(v1alpha1.RotationSucceeded))
			Expect(rec.Completed).NotTo(BeNil())
			Expect(rec.NewFingerprint).NotTo(BeEmpty())
			Expect(rec.OldFingerprint).NotTo(BeEmpty())
			Expect(rec.NewFingerprint).NotTo(Equal(rec.OldFingerprint))
			if rec.Reason == "Manual" {
				manual++
				Expect(rec.Message).To(ContainSubstring("forced rotation"))
			}
		}
		Expect(manual).To(BeNumerically(">=", 10))
		last := whi.Status.Rotations[len(whi.Status.Rotations)-1]
		Expect(last.Kind).To(Equal(v1alpha1.RotationServing))
		Expect(whi.Status.Services[0].ServingFingerprint).To(Equal(last.NewFingerprint))

		crd := getCRD(ctx, crdName)
		bundle, err := certs.ParseCerts(crd.Spec.Conversion.Webhook.ClientConfig.CABundle)
		Expect(err).NotTo(HaveOccurred())
		Expect(bundle).To(HaveLen(1), "the old CA was pruned after the last CA rotation")
		Expect(certs.Fingerprint(bundle[0])).To(Equal(whi.Status.Services[0].CAFingerprint))

		svc := whi.Status.Services[0]
		Expect(metricValue("hookwright_certificate_expiry_timestamp_seconds", map[string]string{"namespace": ns, "install": "widgets", "kind": "CA"})).
			To(Equal(float64(svc.CANotAfter.Unix())))
		Expect(metricValue("hookwright_certificate_expiry_timestamp_seconds", map[string]string{"namespace": ns, "install": "widgets", "kind": "Serving"})).
			To(Equal(float64(svc.ServingNotAfter.Unix())))
		Expect(metricValue("hookwright_rotations_total", map[string]string{"kind": "CA", "reason": "Manual", "outcome": "Succeeded"})).To(BeNumerically(">=", caRotations))
		Expect(metricValue("hookwright_rotations_total", map[string]string{"kind": "Serving", "reason": "Manual", "outcome": "Succeeded"})).To(BeNumerically(">=", servingRotations))
		Expect(metricValue("hookwright_rotation_duration_seconds", map[string]string{"kind": "CA"})).To(BeNumerically(">=", caRotations))
		Expect(metricValue("hookwright_conversion_verifications_total", map[string]string{"result": "success"})).To(BeNumerically(">=", caRotations+servingRotations))
		Expect(metricValue("hookwright_conversion_verifications_total", map[string]string{"result": "failure"})).To(Equal(failedVerificationsBefore),
			"no verification failed during the rotations")

		// Every forced rotation has one Started and one Completed Event.
		// The install's first certificates (one CA, one serving) are told
		// together, in its Succeeded Event; the serving certificates
		// each CA rotation reissues from the new CA have none: their CA
		// rotation's Events tell them (status.rotations lists them).
		Eventually(func(g Gomega) {
			g.Expect(rotationEvents(ctx, g, ns)).To(Equal(map[string]int32{
				firstCertificatesTold:      1,
				"CARotationStarted":        int32(caRotations),
				"CARotationCompleted":      int32(caRotations),
				"ServingRotationStarted":   int32(servingRotations),
				"ServingRotationCompleted": int32(servingRotations),
			}))
		}).Should(Succeed())
	})

	It("records a rotation superseded before its rollout completed as failed, with a Warning Event", func(ctx context.Context) {
		Expect(k8s.Create(ctx, newInstall(ns, "widgets", "widget-webhook", crdName))).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)

		By("holding back every new pod of the webhook: a serving rotation cannot roll out")
		gate := make(chan struct{})
		cluster.Kubelet.Serve(ns, "widget-webhook", testcluster.HostFunc(func(ctx context.Context, env *testcluster.PodEnv) error {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil
			}
			return testcluster.HandlerHost{Handler: &testcluster.WidgetConverter{}}.Run(ctx, env)
		}))
		requestRotation(ctx, ns, "serving: stuck rollout")
		Eventually(func(g Gomega) {
			whi := installIn(ctx, g, ns, "widgets")
			g.Expect(whi.Status.HandledRotationRequest).To(Equal("serving: stuck rollout"))
			g.Expect(whi.Status.Rotations).To(ContainElement(And(HaveField("Kind", v1alpha1.RotationServing),
				HaveField("Message", "stuck rollout"), HaveField("Outcome", v1alpha1.RotationInProgress))))
		}).Should(Succeed())

		By("superseding it with a second serving rotation")
		requestRotation(ctx, ns, "serving: supersede")
		var failed v1alpha1.RotationRecord
		Eventually(func(g Gomega) {
			whi := installIn(ctx, g, ns, "widgets")
			g.Expect(whi.Status.HandledRotationRequest).To(Equal("serving: supersede"))
			found := false
			for _, rec := range whi.Status.Rotations {
				if rec.Kind == v1alpha1.RotationServing && rec.Reason == "Manual" && rec.Outcome == v1alpha1.RotationFailed {
					failed, found = rec, true
				}
			}
			g.Expect(found).To(BeTrue(), "%+v", whi.Status.Rotations)
		}).Should(Succeed())
		Expect(failed.Message).To(Equal("stuck rollout (superseded by a newer rotation before it completed)"))
		Expect(failed.Completed).NotTo(BeNil())

		By("letting the rollout through: the second rotation completes")
		close(gate)
		Eventually(func(g Gomega) {
			whi := installIn(ctx, g, ns, "widgets")
			g.Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
			g.Expect(whi.Status.Rotations).To(ContainElement(And(HaveField("Kind", v1alpha1.RotationServing),
				HaveField("Message", "supersede"), HaveField("Outcome", v1alpha1.RotationSucceeded))))
		}, 2*time.Minute).Should(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(rotationEvents(ctx, g, ns)).To(Equal(map[string]int32{
				firstCertificatesTold:      1, // in the Succeeded Event, the pass they are in place
				"ServingRotationStarted":   2, // both requests
				"ServingRotationCompleted": 1, // the second request
				"ServingRotationFailed":    1,
			}))
			var events eventsv1.EventList
			g.Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(And(
				HaveField("Reason", v1alpha1.ReasonSucceeded), HaveField("Type", corev1.EventTypeNormal), HaveField("Action", "Reconcile"),
				HaveField("Note", MatchRegexp(`^Succeeded: 1 conversion CRD\(s\) served by their webhooks; first certificates issued for service widget-webhook-service: CA [0-9a-f:]{95}, Serving [0-9a-f:]{95}$`)))))
			g.Expect(events.Items).To(ContainElement(And(
				HaveField("Reason", "ServingRotationFailed"), HaveField("Type", corev1.EventTypeWarning), HaveField("Action", "Rotate"),
				HaveField("Regarding.Kind", "WebhookInstall"), HaveField("Regarding.Name", "widgets"),
				HaveField("Note", ContainSubstring("did not complete: stuck rollout (superseded by a newer rotation before it completed)")))))
		}).Should(Succeed())
	})

	It("starts a rotation within a second of its due time", func(ctx context.Context) {
		install := newInstall(ns, "widgets", "widget-webhook", crdName)
		install.Spec.Certificates.ServingLifetime = &metav1.Duration{Duration: 15 * time.Second}
		install.Spec.Certificates.TrustOverlap = &metav1.Duration{Duration: time.Second}
		Expect(k8s.Create(ctx, install)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)

		var secret corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: desired.ServingSecretName("widget-webhook-service")}, &secret)).To(Succeed())
		first, err := certs.ParseCert(secret.Data["tls.crt"])
		Expect(err).NotTo(HaveOccurred())
		due := certs.Policy{ServingLifetime: 15 * time.Second}.RenewAt(first)

		var rec v1alpha1.RotationRecord
		Eventually(func(g Gomega) {
			whi := installIn(ctx, g, ns, "widgets")
			found := false
			for _, r := range whi.Status.Rotations {
				if r.Kind == v1alpha1.RotationServing && r.Reason == "Expiring" && r.OldFingerprint == certs.Fingerprint(first) {
					rec, found = r, true
				}
			}
			g.Expect(found).To(BeTrue())
		}, time.Minute).Should(Succeed())
		// Started is stored with second precision.
		Expect(rec.Started.Time).To(BeTemporally(">=", due.Truncate(time.Second)))
		Expect(rec.Started.Time).To(BeTemporally("<=", due.Add(time.Second)))
	})

	It("publishes a new CA and promotes it in the pass it scheduled, not in one its own writes woke", func(ctx context.Context) {
		Expect(k8s.Create(ctx, newInstall(ns, "widgets", "widget-webhook", crdName))).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		// The install's follow-up passes (its verification's confirmation)
		// are over once 2 s pass without a request of the manager's in ns.
		_, offset := managerWrites(0)
		Eventually(func() []string {
			requests := managerRequestsIn(ns, offset)
			_, offset = managerWrites(offset)
			return requests
		}, 30*time.Second, 2*time.Second).Should(BeEmpty())

		service := "widget-webhook-service"
		requestRotation(ctx, ns, "ca: one pass per step")
		// From the pass that publishes the new CA (its write of the CA
		// Secret) to the promotion (the serving certificate reissued from
		// that CA): the passes in between, each of which reads the CRD live.
		var between []testcluster.AuditEvent
		Eventually(func(g Gomega) {
			events, _, err := cluster.AuditEvents(offset)
			g.Expect(err).NotTo(HaveOccurred())
			start, promoted := -1, -1
			for i, e := range events {
				if e.User.Username != managerUser || !e.IsWrite() || e.ObjectRef.Resource != "secrets" || e.ObjectRef.Namespace != ns {
					continue
				}
				if start < 0 && e.ObjectRef.Name == desired.CASecretName(service) {
					start = i
				}
				if start >= 0 && e.ObjectRef.Name == desired.ServingSecretName(service) {
					promoted = i
					break
				}
			}
			g.Expect(promoted).To(BeNumerically(">", start), "the new CA is promoted")
			between = events[start+1 : promoted]
		}, time.Minute, time.Second).Should(Succeed())
		var passes, statusWrites []string
		for _, e := range between {
			switch {
			case e.User.Username != managerUser:
			case e.Verb == "get" && e.ObjectRef.Resource == "customresourcedefinitions" && e.ObjectRef.Name == crdName:
				passes = append(passes, e.Received.Format(time.StampMicro))
			case e.ObjectRef.Subresource == "status" && e.ObjectRef.Namespace == ns:
				statusWrites = append(statusWrites, e.Received.Format(time.StampMicro))
			}
		}
		Expect(passes).To(HaveLen(1), "only the promoting pass reads the CRD: the echoes of the publishing pass's writes (the CA Secret, the CRD's caBundle) woke no pass")
		Expect(statusWrites).To(HaveLen(1), "the publishing pass's status says what the wait is; no pass writes it in between")
	})

	It("re-issues a deleted serving Secret at once and refuses a rotation request it cannot read", func(ctx context.Context) {
		Expect(k8s.Create(ctx, newInstall(ns, "widgets", "widget-webhook", crdName))).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)

		serving := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: desired.ServingSecretName("widget-webhook-service")}, serving)).To(Succeed())
		Expect(k8s.Delete(ctx, serving)).To(Succeed())
		Eventually(func(g Gomega) {
			whi := installIn(ctx, g, ns, "widgets")
			g.Expect(whi.Status.Rotations).To(ContainElement(And(
				HaveField("Kind", v1alpha1.RotationServing), HaveField("Reason", "Missing"), HaveField("Outcome", v1alpha1.RotationSucceeded))))
			g.Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		}).Should(Succeed())

		records := len(getInstall(ctx, ns, "widgets").Status.Rotations)
		whi := getInstall(ctx, ns, "widgets")
		patch := client.MergeFrom(whi.DeepCopy())
		whi.Annotations = map[string]string{v1alpha1.AnnotationRotate: "everything: please"}
		Expect(k8s.Patch(ctx, whi, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(installIn(ctx, g, ns, "widgets").Status.HandledRotationRequest).To(Equal("everything: please"))
			var events eventsv1.EventList
			g.Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(And(
				HaveField("Reason", "RotationRequestInvalid"), HaveField("Note", ContainSubstring(`Write "ca: <reason>" or "serving: <reason>"`)))))
		}).Should(Succeed())
		Expect(getInstall(ctx, ns, "widgets").Status.Rotations).To(HaveLen(records), "nothing was rotated")
	})
})

// eventuallyRotationsSucceeded waits until install "widgets" of ns is
// Succeeded with want rotation records, every one Succeeded, and also
// holds.
func eventuallyRotationsSucceeded(ctx context.Context, ns string, want int, also func(g Gomega, whi *v1alpha1.WebhookInstall)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		whi := installIn(ctx, g, ns, "widgets")
		g.Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), "%s: %s", whi.Status.Reason, whi.Status.Message)
		also(g, whi)
		g.Expect(whi.Status.Rotations).To(HaveLen(want))
		for _, rec := range whi.Status.Rotations {
			g.Expect(rec.Outcome).To(Equal(v1alpha1.RotationSucceeded), "%+v (%s)", rec, condition(whi, v1alpha1.TypeCertificatesReady).Message)
		}
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed()) // as the other rotation specs: a loaded suite slows a CA rotation's steps
}

func requestRotation(ctx context.Context, ns, request string) {
	GinkgoHelper()
	whi := getInstall(ctx, ns, "widgets")
	patch := client.MergeFrom(whi.DeepCopy())
	whi.Annotations = map[string]string{v1alpha1.AnnotationRotate: request}
	Expect(k8s.Patch(ctx, whi, patch)).To(Succeed())
}

// watchCondition watches an install's status from now on; the function
// it returns stops the watch and lists the condition's status and reason
// ("True Succeeded") in every version of the object the watch delivered.
func watchCondition(ctx context.Context, ns, name, conditionType string) func() []string {
	return watchInstall(ctx, ns, name, func(whi *v1alpha1.WebhookInstall) string {
		if c := meta.FindStatusCondition(whi.Status.Conditions, conditionType); c != nil {
			return string(c.Status) + " " + c.Reason
		}
		return ""
	})
}

// watchInstall watches an install from now on (it need not exist yet);
// the function it returns stops the watch and lists what describe says
// of each version of the object the watch delivered ("" : nothing).
func watchInstall(ctx context.Context, ns, name string, describe func(*v1alpha1.WebhookInstall) string) func() []string {
	wc, err := client.NewWithWatch(cluster.Config, client.Options{Scheme: k8s.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &v1alpha1.WebhookInstallList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": name})
	Expect(err).NotTo(HaveOccurred())
	var seen []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.ResultChan() {
			if whi, ok := e.Object.(*v1alpha1.WebhookInstall); ok {
				if d := describe(whi); d != "" {
					seen = append(seen, d)
				}
			}
		}
	}()
	return func() []string {
		w.Stop()
		<-done
		return seen
	}
}

// firstCertificatesTold counts, in rotationEvents, the Events that tell
// first certificates (eventnote.Issuance), whatever their reason.
const firstCertificatesTold = "(first certificates told)"

// rotationEvents counts the namespace's certificate Events per reason
// (rotations), or under firstCertificatesTold (first certificates), each
// repeat of a series (events.k8s.io's series.count) included.
func rotationEvents(ctx context.Context, g Gomega, ns string) map[string]int32 {
	var events eventsv1.EventList
	g.Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
	count := map[string]int32{}
	for _, e := range events.Items {
		if _, ok := eventnote.ParseIssuance(e.Note); ok {
			count[firstCertificatesTold]++
			continue
		}
		if !strings.Contains(e.Reason, "Rotation") || e.Reason == "RotationRequestInvalid" {
			continue
		}
		n := int32(1)
		if e.Series != nil {
			n = e.Series.Count
		}
		count[e.Reason] += n
	}
	return count
}
