package controllers_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/internal/testcluster"
)

// Issue 13: one ordered CA rotation covers every caBundle an install
// writes, its CRDs' and its admission configurations'. Each spec converts
// continuously (reads at v2) and calls both admission webhooks
// continuously (server-side dry-run creates, each showing the mutating
// webhook's patch), and counts failures.
var _ = Describe("Admission webhooks under certificate rotation", func() {
	const (
		validating = "vrotate.hookwright.test"
		mutating   = "mrotate.hookwright.test"
	)
	var ns, group, crdName string
	var validator, mutator *testcluster.AdmissionReviewer
	BeforeEach(func(ctx context.Context) {
		ns, group, crdName = widgetNamespace(ctx)
		// A real cluster takes 30-100 s to show a Secret update to a running
		// pod; 3 s is enough to fail calls whenever an order is wrong.
		cluster.Kubelet.SetPropagationDelay(3 * time.Second)
		DeferCleanup(func() { cluster.Kubelet.SetPropagationDelay(0) })
		validator = &testcluster.AdmissionReviewer{Name: "validator"}
		mutator = &testcluster.AdmissionReviewer{Name: "mutator", Mutate: true}
		// One program, one certificate: conversion, validation, mutation.
		cluster.Kubelet.Serve(ns, "widget-webhook", testcluster.HandlerHost{Handler: testcluster.WebhookMux{
			Conversion: &testcluster.WidgetConverter{},
			Admission:  map[string]http.Handler{"/validate": validator, "/mutate": mutator},
		}})
	})

	// startInstall installs the widget conversion with a validating and a
	// mutating webhook on widgets, waits until all three are verified, and
	// creates widgets to read.
	startInstall := func(ctx context.Context) []string {
		install := newInstall(ns, "widgets", "widget-webhook", crdName)
		install.Spec.Certificates.TrustOverlap = &metav1.Duration{Duration: 2 * time.Second}
		rule := v1alpha1.AdmissionRule{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			APIGroups:  []string{group}, APIVersions: []string{"*"}, Resources: []string{"widgets"},
		}
		for _, w := range []struct {
			kind       operatorsv1alpha1.WebhookAdmissionType
			name, path string
		}{{operatorsv1alpha1.ValidatingAdmissionWebhook, validating, "/validate"}, {operatorsv1alpha1.MutatingAdmissionWebhook, mutating, "/mutate"}} {
			install.Spec.WebhookDefinitions = append(install.Spec.WebhookDefinitions, v1alpha1.WebhookDefinition{
				GenerateName: w.name, Type: w.kind, DeploymentName: "widget-webhook",
				ContainerPort: 443, TargetPort: ptr.To(intstr.FromInt32(9443)), WebhookPath: ptr.To(w.path),
				AdmissionReviewVersions: []string{"v1"}, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
				FailurePolicy: ptr.To(admissionregistrationv1.Fail), Rules: []v1alpha1.AdmissionRule{rule},
			})
		}
		Expect(k8s.Create(ctx, install)).To(Succeed())
		Eventually(func(g Gomega) {
			whi := installIn(ctx, g, ns, "widgets")
			g.Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), "%s: %s", whi.Status.Reason, whi.Status.Message)
			verified := condition(whi, v1alpha1.TypeAdmissionVerified)
			g.Expect(verified.Status).To(Equal(metav1.ConditionTrue), verified.Message)
			g.Expect(whi.Status.AdmissionWebhooks).To(HaveLen(2))
			for _, a := range whi.Status.AdmissionWebhooks {
				g.Expect(a.State).To(Equal(v1alpha1.AdmissionVerified))
				g.Expect(a.Message).To(ContainSubstring("dry-run create of " + group + "/v1 Widget in namespace " + ns))
			}
		}).Should(Succeed())
		var names []string
		for i := range 3 {
			names = append(names, fmt.Sprintf("w%d", i))
			Expect(k8s.Create(ctx, widget(group, "v1", ns, names[i], map[string]any{"value": fmt.Sprint(i)}))).To(Succeed())
		}
		return names
	}

	// expectOneTrust checks that the CRD and both admission configurations
	// trust exactly the install's active CA, and returns its fingerprint.
	expectOneTrust := func(ctx context.Context, g Gomega) string {
		whi := installIn(ctx, g, ns, "widgets")
		g.Expect(whi.Status.Services).To(HaveLen(1))
		active := whi.Status.Services[0].CAFingerprint
		for what, bundle := range installBundles(ctx, g, ns, crdName) {
			cas, err := certs.ParseCerts(bundle)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cas).To(HaveLen(1), "%s trusts the active CA alone", what)
			g.Expect(certs.Fingerprint(cas[0])).To(Equal(active), what)
		}
		return active
	}

	It("rotates CA and serving certificates 20 times under continuous reads and admission calls: zero failed reads, zero failed admission calls", func(ctx context.Context) {
		names := startInstall(ctx)
		// A promotion's CRD probe may be spared (load_barrier.go) when a
		// probe of another install still rotating in this suite was written
		// after the install's caBundle write: the barrier and a read
		// through the install's CRD prove the same.
		promotionProofs := func() float64 {
			return metricValue("hookwright_trust_probes_total", map[string]string{"gate": "promote", "result": "Trusted"}) +
				metricValue("hookwright_trust_probes_spared_total", map[string]string{"gate": "promote"})
		}
		probesBefore := promotionProofs()
		readers := startReaders(ctx, group, ns, names, 3)
		DeferCleanup(readers.Halt)
		callers := startAdmissionCallers(ctx, group, ns, 3)
		DeferCleanup(callers.Halt)

		started := time.Now()
		caRotations := 0
		for i := 1; i <= 20; i++ {
			kind := "serving"
			if i%2 == 1 {
				kind = "ca"
				caRotations++
			}
			request := fmt.Sprintf("%s: forced rotation %d", kind, i)
			requestRotation(ctx, ns, request)
			Eventually(func(g Gomega) {
				stopOnFailedRead(readers)
				callers.stopOnFailure()
				whi := installIn(ctx, g, ns, "widgets")
				g.Expect(whi.Status.HandledRotationRequest).To(Equal(request))
				for _, rec := range whi.Status.Rotations {
					g.Expect(rec.Outcome).NotTo(Equal(v1alpha1.RotationInProgress), "rotation %d still running: %+v (%s)", i, rec,
						condition(whi, v1alpha1.TypeCertificatesReady).Message)
				}
				g.Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), "%s: %s", whi.Status.Reason, whi.Status.Message)
				expectOneTrust(ctx, g)
			}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
		}
		readers.Halt()
		callers.Halt()
		elapsed := time.Since(started)

		report := fmt.Sprintf("%d CA + %d serving rotations in %s: %d reads ok, %d failed; %d admission calls ok, %d failed (%.1f calls/s); validating webhook called %d times, mutating %d",
			caRotations, 20-caRotations, elapsed.Round(time.Second), readers.OK.Load(), readers.Failed.Load(), callers.OK.Load(), callers.Failed.Load(),
			float64(callers.OK.Load()+callers.Failed.Load())/elapsed.Seconds(), validator.Calls.Load(), mutator.Calls.Load())
		AddReportEntry("admission under rotation", report, ReportEntryVisibilityAlways)
		fmt.Fprintln(GinkgoWriter, report)
		Expect(readers.Failed.Load()).To(BeZero(), "failed reads: %v", readers.FirstErrors())
		Expect(callers.Failed.Load()).To(BeZero(), "failed admission calls: %v", callers.FirstErrors())
		Expect(float64(callers.OK.Load()) / elapsed.Seconds()).To(BeNumerically(">=", 10))
		Expect(validator.Calls.Load()).To(BeNumerically(">=", callers.OK.Load()), "every admitted call went through the validating webhook")
		Expect(mutator.Calls.Load()).To(BeNumerically(">=", callers.OK.Load()), "every admitted call went through the mutating webhook")

		By("each promotion was proven through the CRD and both admission configurations")
		Expect(promotionProofs() - probesBefore).To(BeNumerically(">=", 3*caRotations))
		idle := managerNamespace + "/hookwright-trust-probe-idle"
		vprobe := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "hookwright-trust-probe"}, vprobe)).To(Succeed())
		mprobe := &admissionregistrationv1.MutatingWebhookConfiguration{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "hookwright-trust-probe"}, mprobe)).To(Succeed())
		for _, cc := range []admissionregistrationv1.WebhookClientConfig{vprobe.Webhooks[0].ClientConfig, mprobe.Webhooks[0].ClientConfig} {
			Expect(cc.Service.Namespace+"/"+cc.Service.Name).To(Equal(idle), "between probes, the probe configurations call no one")
		}

		whi := getInstall(ctx, ns, "widgets")
		Expect(condition(whi, v1alpha1.TypeAdmissionVerified).Status).To(Equal(metav1.ConditionTrue))
		for _, rec := range whi.Status.Rotations {
			Expect(rec.Outcome).To(Equal(v1alpha1.RotationSucceeded))
		}
	})

	It("does not promote a new CA while an admission configuration lacks it, and completes once it carries it: zero failed admission calls", func(ctx context.Context) {
		names := startInstall(ctx)
		configName := desired.AdmissionConfigurationName(getInstall(ctx, ns, "widgets"))
		var oldCA string
		Eventually(func(g Gomega) { oldCA = expectOneTrust(ctx, g) }).Should(Succeed())
		readers := startReaders(ctx, group, ns, names, 2)
		DeferCleanup(readers.Halt)
		callers := startAdmissionCallers(ctx, group, ns, 2)
		DeferCleanup(callers.Halt)

		By("another field manager keeps the validating configuration's caBundle at the old CA alone")
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: configName}, vwc)).To(Succeed())
		oldBundle := vwc.Webhooks[0].ClientConfig.CABundle
		fightCtx, stopFight := context.WithCancel(ctx)
		fought := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(fought)
			patch, _ := json.Marshal([]map[string]any{{"op": "replace", "path": "/webhooks/0/clientConfig/caBundle", "value": base64.StdEncoding.EncodeToString(oldBundle)}})
			for fightCtx.Err() == nil {
				cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: configName}}
				_ = k8s.Patch(fightCtx, cfg, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner("someone-else"))
				select {
				case <-fightCtx.Done():
				case <-time.After(300 * time.Millisecond):
				}
			}
		}()
		DeferCleanup(func() { stopFight(); <-fought })

		const request = "ca: rotate while a configuration lacks the new CA"
		requestRotation(ctx, ns, request)
		Eventually(func(g Gomega) {
			whi := installIn(ctx, g, ns, "widgets")
			g.Expect(whi.Status.HandledRotationRequest).To(Equal(request))
			cas, err := certs.ParseCerts(getCRD(ctx, crdName).Spec.Conversion.Webhook.ClientConfig.CABundle)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cas).To(HaveLen(2), "the CRD trusts old and new")
		}).Should(Succeed())
		By("the CRD has carried the new CA for well over the settle time, and the CA is still not promoted")
		Consistently(func(g Gomega) {
			callers.stopOnFailure()
			g.Expect(installIn(ctx, g, ns, "widgets").Status.Services[0].CAFingerprint).To(Equal(oldCA))
		}, 15*time.Second, 500*time.Millisecond).Should(Succeed())

		By("the other field manager stops: the rotation completes")
		stopFight()
		<-fought
		Eventually(func(g Gomega) {
			stopOnFailedRead(readers)
			callers.stopOnFailure()
			whi := installIn(ctx, g, ns, "widgets")
			for _, rec := range whi.Status.Rotations {
				g.Expect(rec.Outcome).NotTo(Equal(v1alpha1.RotationInProgress), "%+v (%s)", rec, condition(whi, v1alpha1.TypeCertificatesReady).Message)
			}
			g.Expect(expectOneTrust(ctx, g)).NotTo(Equal(oldCA))
		}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
		readers.Halt()
		callers.Halt()
		AddReportEntry("calls", fmt.Sprintf("%d reads ok, %d failed; %d admission calls ok, %d failed",
			readers.OK.Load(), readers.Failed.Load(), callers.OK.Load(), callers.Failed.Load()), ReportEntryVisibilityAlways)
		Expect(readers.Failed.Load()).To(BeZero(), "failed reads: %v", readers.FirstErrors())
		Expect(callers.Failed.Load()).To(BeZero(), "failed admission calls: %v", callers.FirstErrors())
		Expect(callers.OK.Load()).To(BeNumerically(">", 100))
	})
})

// installBundles are the caBundles the widget install writes: its CRD's,
// and each webhook's in its two admission configurations.
func installBundles(ctx context.Context, g Gomega, ns, crdName string) map[string][]byte {
	name := desired.AdmissionConfigurationName(&v1alpha1.WebhookInstall{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "widgets"}})
	bundles := map[string][]byte{"CRD " + crdName: getCRD(ctx, crdName).Spec.Conversion.Webhook.ClientConfig.CABundle}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, vwc)).To(Succeed())
	for _, w := range vwc.Webhooks {
		bundles["ValidatingWebhookConfiguration webhook "+w.Name] = w.ClientConfig.CABundle
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, mwc)).To(Succeed())
	for _, w := range mwc.Webhooks {
		bundles["MutatingWebhookConfiguration webhook "+w.Name] = w.ClientConfig.CABundle
	}
	g.Expect(bundles).To(HaveLen(3))
	return bundles
}

// admissionCallers dry-run create widgets (at v1 and v2 in turn) until
// halted: each request goes through the mutating and the validating
// webhook (and, at v2, the conversion webhook). A call fails when the API
// server refuses it, or when its answer lacks the mutating webhook's patch.
type admissionCallers struct {
	OK, Failed atomic.Int64
	mu         sync.Mutex
	firstErrs  []string
	stop       chan struct{}
	stopOnce   sync.Once
	wg         sync.WaitGroup
}

func startAdmissionCallers(ctx context.Context, group, ns string, workers int) *admissionCallers {
	c := &admissionCallers{stop: make(chan struct{})}
	for w := range workers {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for i := w; ; i++ {
				select {
				case <-c.stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				version, field := "v1", "value"
				if i%2 == 1 {
					version, field = "v2", "amount"
				}
				u := widget(group, version, ns, "", map[string]any{field: "1"})
				u.SetGenerateName("dry-")
				err := k8s.Create(ctx, u, client.DryRunAll)
				if err == nil && u.GetAnnotations()[testcluster.AdmissionAnnotation] != "mutator" {
					err = fmt.Errorf("admitted at %s without the mutating webhook's patch: annotations %v", version, u.GetAnnotations())
				}
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					c.Failed.Add(1)
					c.mu.Lock()
					if len(c.firstErrs) < 5 {
						c.firstErrs = append(c.firstErrs, err.Error())
					}
					c.mu.Unlock()
					continue
				}
				c.OK.Add(1)
			}
		}()
	}
	return c
}

// Halt stops the callers and waits for them; calling it again is harmless.
func (c *admissionCallers) Halt() {
	c.stopOnce.Do(func() { close(c.stop) })
	c.wg.Wait()
}

// FirstErrors are up to five of the failures, for the test's message.
func (c *admissionCallers) FirstErrors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.firstErrs...)
}

// stopOnFailure ends an Eventually or Consistently at the first failed call.
func (c *admissionCallers) stopOnFailure() {
	if c.Failed.Load() > 0 {
		StopTrying(fmt.Sprintf("%d failed admission calls: %v", c.Failed.Load(), c.FirstErrors())).Now()
	}
}
