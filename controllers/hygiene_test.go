package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/internal/testcluster"
)

var _ = Describe("A steady install", func() {
	It("makes zero API writes on an idle resync", func(ctx context.Context) {
		ns := createNamespace(ctx)
		group := ns + ".hookwright.test"
		createWidgetCRD(ctx, group)
		serve(ns, "widget-webhook")
		_, created := managerWrites(0)
		statuses := watchStatus(ctx, ns, "widgets")
		Expect(k8s.Create(ctx, newInstall(ns, "widgets", "widget-webhook", "widgets."+group))).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)

		// Let the install's follow-up passes and Events settle: two
		// consecutive 2 s windows without a write.
		_, offset := managerWrites(0)
		quiet := 0
		Eventually(func() int {
			writes, next := managerWrites(offset)
			offset = next
			if !slices.ContainsFunc(writes, func(e testcluster.AuditEvent) bool { return e.ObjectRef.Namespace == ns }) {
				quiet++
			} else {
				quiet = 0
			}
			return quiet
		}, 60*time.Second, 2*time.Second).Should(BeNumerically(">=", 2))

		expectTransitionEventsOnly(ctx, ns, "widgets")

		// Converging took one write per object Hookwright owns or points,
		// one status write and one Event: the first pass, which could
		// only say "waiting for the deployment", left the status to the
		// pass that verified the webhook (deferFirstStatus). Installs of
		// other specs keep rotating meanwhile: only this install's
		// objects count.
		converged, _ := managerWrites(created)
		want := []string{
			"create events",                   // Succeeded, with the first certificates' fingerprints
			"create serviceaccounts",          // the pods' account, bare
			"patch customresourcedefinitions", // the claim
			"patch customresourcedefinitions", // the conversion, once the webhook serves
			"patch deployments",               // applied
			"patch secrets",                   // the CA, applied
			"patch secrets",                   // the serving certificate, applied
			"patch services",                  // applied
			"patch webhookinstalls",           // the finalizer
			"update webhookinstalls/status",   // Succeeded: verified, the first certificates recorded
		}
		if slow := availableAfter(ctx, ns, "widget-webhook"); slow >= controllers.FirstStatusGrace-time.Second {
			// On a loaded machine the Deployment can take the whole grace
			// (measured to the second): the 5 s pass then reports it
			// unavailable, as it must (one more status write).
			AddReportEntry("deployment available after", slow.String())
			want = append(want, "update webhookinstalls/status")
		}
		Expect(writeKinds(converged, ns, "widgets."+group)).To(Equal(want),
			"a first install's writes to converge. The writes:\n%s\nThe statuses its watch delivered:\n%s",
			writeTimeline(converged, ns, "widgets."+group), strings.Join(statuses(), "\n"))

		reconciles := reconcileCount()
		whi := getInstall(ctx, ns, "widgets")
		patch := client.MergeFrom(whi.DeepCopy())
		whi.Annotations = map[string]string{"example.com/poke": "resync"}
		Expect(k8s.Patch(ctx, whi, patch)).To(Succeed())
		Eventually(reconcileCount).Should(BeNumerically(">", reconciles), "the annotation woke the reconciler")
		time.Sleep(time.Second) // room for any write the pass would make
		// Installs of other specs (short certificate lifetimes) keep
		// rotating meanwhile: only this install's objects count.
		writes, _ := managerWrites(offset)
		ours := slices.DeleteFunc(writes, func(e testcluster.AuditEvent) bool {
			return e.ObjectRef.Namespace != ns && e.ObjectRef.Name != "widgets."+group
		})
		Expect(ours).To(BeEmpty(), "an idle resync writes nothing")

		// A write to the status alone wakes no pass: a pass writes status
		// last, so the pass its own write would wake has nothing to do. A
		// status someone else wrote is set right by the next pass anything
		// else brings.
		_, offset = managerWrites(0)
		whi = getInstall(ctx, ns, "widgets")
		message := whi.Status.Message
		whi.Status.Message = "written by a test"
		Expect(k8s.Status().Update(ctx, whi)).To(Succeed())
		Consistently(func() []string { return managerRequestsIn(ns, offset) }, 2*time.Second, 200*time.Millisecond).Should(BeEmpty(),
			"the status write woke a pass")
		whi = getInstall(ctx, ns, "widgets")
		patch = client.MergeFrom(whi.DeepCopy())
		whi.Annotations = map[string]string{"example.com/poke": "again"}
		Expect(k8s.Patch(ctx, whi, patch)).To(Succeed())
		Eventually(func() string { return getInstall(ctx, ns, "widgets").Status.Message }).Should(Equal(message),
			"the next pass rewrites the status from the cluster")
	})
})

// managerRequestsIn lists the manager's requests (reads included) on
// objects in namespace ns, from the audit log after offset.
func managerRequestsIn(ns string, offset int64) []string {
	events, _, err := cluster.AuditEvents(offset)
	Expect(err).NotTo(HaveOccurred())
	var requests []string
	for _, e := range events {
		if e.User.Username == managerUser && e.ObjectRef.Namespace == ns {
			requests = append(requests, e.Verb+" "+e.RequestURI)
		}
	}
	return requests
}

// writeKinds lists, sorted, the writes among events to the objects of
// namespace ns and to CRD crd, as "<verb> <resource>[/<subresource>]".
// A dry run (verification's conversion check) stores nothing: not a write.
// availableAfter is how long the Deployment took from its creation to
// its last Available=True (whole seconds, as the API server stores both).
func availableAfter(ctx context.Context, ns, name string) time.Duration {
	d := &appsv1.Deployment{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Sub(d.CreationTimestamp.Time)
		}
	}
	Fail("deployment " + ns + "/" + name + " is not available")
	return 0
}

func writeKinds(events []testcluster.AuditEvent, ns, crd string) []string {
	var kinds []string
	for _, e := range events {
		if e.ObjectRef.Namespace != ns && e.ObjectRef.Name != crd || strings.Contains(e.RequestURI, "dryRun=") {
			continue
		}
		kind := e.Verb + " " + e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			kind += "/" + e.ObjectRef.Subresource
		}
		kinds = append(kinds, kind)
	}
	slices.Sort(kinds)
	return kinds
}

// writeTimeline lists the manager's writes to the objects of namespace
// ns and to CRD crd, one per line, with when the API server received each
// and its answer: what a failed count needs to be read. Unlike writeKinds
// it keeps the dry runs, which place the verifications among the writes.
func writeTimeline(events []testcluster.AuditEvent, ns, crd string) string {
	var lines []string
	for _, e := range events {
		if e.ObjectRef.Namespace == ns || e.ObjectRef.Name == crd {
			lines = append(lines, fmt.Sprintf("%s %d %s %s", e.Received.Format("15:04:05.000"), e.ResponseStatus.Code, e.Verb, e.RequestURI))
		}
	}
	return strings.Join(lines, "\n")
}

// watchStatus watches an install from now on (it need not exist yet);
// the function it returns stops the watch and lists, for each version of
// the object the watch delivered whose status changed, its resource
// version, phase, reason and message.
func watchStatus(ctx context.Context, ns, name string) func() []string {
	last := ""
	return watchInstall(ctx, ns, name, func(whi *v1alpha1.WebhookInstall) string {
		status := fmt.Sprintf("%s %s: %s", whi.Status.Phase, whi.Status.Reason, whi.Status.Message)
		if status == last {
			return ""
		}
		last = status
		return whi.ResourceVersion + " " + status
	})
}

// expectTransitionEventsOnly holds a converged install's Events to the
// transitions a person needs: the phase changes (note "<Phase>: ...",
// which may end with the first certificates issued in the same pass) and
// the certificates issued and rotated. A step (claim, ServiceAccount,
// apply, CRD write) records none.
func expectTransitionEventsOnly(ctx context.Context, ns, install string) {
	var events eventsv1.EventList
	Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
	phaseNote := regexp.MustCompile(`^(Pending|Installing|Succeeded|Failed|Replacing|Replaced): `)
	var reasons []string
	for _, e := range events.Items {
		if e.Regarding.Kind != "WebhookInstall" || e.Regarding.Name != install {
			continue
		}
		reasons = append(reasons, e.Reason)
		rotation := strings.HasSuffix(e.Reason, "RotationStarted") || strings.HasSuffix(e.Reason, "RotationCompleted") || e.Reason == "CertificatesIssued"
		Expect(rotation || phaseNote.MatchString(e.Note)).To(BeTrue(), "Event %s (%q) is not a transition", e.Reason, e.Note)
	}
	Expect(reasons).To(ContainElement(v1alpha1.ReasonSucceeded))
}

// After every spec: the shipped RBAC was exactly what the operator used
// (rbac_test.go), and no key material is in any status, Event or log line
// the operator produced during the whole suite.
var _ = AfterSuite(func(ctx context.Context) {
	expectShippedRBACMatchesUse()
	expectNoKeyMaterial(ctx)
})

func expectNoKeyMaterial(ctx context.Context) {
	var secrets corev1.SecretList
	Expect(k8s.List(ctx, &secrets, client.MatchingLabels{desired.LabelManagedBy: desired.ManagedByValue})).To(Succeed())
	var keyLines []string
	for _, s := range secrets.Items {
		for _, line := range strings.Split(string(s.Data["tls.key"]), "\n") {
			if len(line) > 20 && !strings.HasPrefix(line, "-----") {
				keyLines = append(keyLines, line)
			}
		}
	}
	Expect(keyLines).NotTo(BeEmpty(), "the suite issued keys to look for")

	var installs v1alpha1.WebhookInstallList
	Expect(k8s.List(ctx, &installs)).To(Succeed())
	statuses, err := json.Marshal(installs)
	Expect(err).NotTo(HaveOccurred())
	var events eventsv1.EventList
	Expect(k8s.List(ctx, &events)).To(Succeed())
	eventText, err := json.Marshal(events)
	Expect(err).NotTo(HaveOccurred())
	Expect(events.Items).NotTo(BeEmpty())

	for name, text := range map[string]string{"status": string(statuses), "events": string(eventText), "log": managerLog.String()} {
		Expect(text).NotTo(ContainSubstring("PRIVATE KEY"), name)
		for _, line := range keyLines {
			Expect(text).NotTo(ContainSubstring(line), "key material in %s", name)
		}
	}
}
