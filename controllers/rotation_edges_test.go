package controllers_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/internal/testcluster"
	"github.com/hookwright/hookwright/internal/testfixtures"
)

// Issue "Every guarantee holds at its edges", items 2 and 3: every
// confirmation of a CA rotation is a check that fails when what it
// confirms is false, and a lost or damaged CA Secret keeps the old trust.
// Each spec reads continuously through the webhook and counts failures.
var _ = Describe("Rotation at its edges", func() {
	const service = "widget-webhook-service"
	var ns, group, crdName string
	BeforeEach(func(ctx context.Context) {
		ns, group, crdName = widgetNamespace(ctx)
		// A real cluster takes 30-100 s to show a Secret update to a running
		// pod; 3 s is enough to fail reads whenever an order is wrong.
		cluster.Kubelet.SetPropagationDelay(3 * time.Second)
		DeferCleanup(func() { cluster.Kubelet.SetPropagationDelay(0) })
	})

	startInstall := func(ctx context.Context) []string {
		install := newInstall(ns, "widgets", "widget-webhook", crdName)
		install.Spec.Certificates.TrustOverlap = &metav1.Duration{Duration: 2 * time.Second}
		Expect(k8s.Create(ctx, install)).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		var names []string
		for i := range 3 {
			names = append(names, fmt.Sprintf("w%d", i))
			Expect(k8s.Create(ctx, widget(group, "v1", ns, names[i], map[string]any{"value": fmt.Sprint(i)}))).To(Succeed())
		}
		return names
	}

	// settled waits until the install serves from one CA other than not,
	// the CRD trusts it alone and no rotation is under way; it returns that
	// CA's fingerprint. It stops at the first failed read of readers.
	settled := func(ctx context.Context, not string, readers *testfixtures.Reader) string {
		var fingerprint string
		Eventually(func(g Gomega) {
			stopOnFailedRead(readers)
			whi := installIn(ctx, g, ns, "widgets")
			g.Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), "%s: %s", whi.Status.Reason, whi.Status.Message)
			g.Expect(whi.Status.Services).To(HaveLen(1))
			ready := condition(whi, v1alpha1.TypeCertificatesReady).Message
			for _, rec := range whi.Status.Rotations {
				g.Expect(rec.Outcome).NotTo(Equal(v1alpha1.RotationInProgress), "%+v (CertificatesReady: %s)", rec, ready)
			}
			fingerprint = whi.Status.Services[0].CAFingerprint
			g.Expect(fingerprint).NotTo(Equal(not))
			crd := getCRD(ctx, crdName)
			bundle, err := certs.ParseCerts(crd.Spec.Conversion.Webhook.ClientConfig.CABundle)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bundle).To(HaveLen(1), "the CRD trusts the active CA alone")
			g.Expect(certs.Fingerprint(bundle[0])).To(Equal(fingerprint))
			g.Expect(ready).NotTo(ContainSubstring("rotation under way"))
		}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
		return fingerprint
	}

	// rotatedWithoutFailedReads waits until the install has settled on
	// newCA after oldCA, stops the readers and holds that none failed.
	rotatedWithoutFailedReads := func(ctx context.Context, oldCA, newCA string, readers *testfixtures.Reader) {
		GinkgoHelper()
		Expect(settled(ctx, oldCA, readers)).To(Equal(newCA))
		readers.Halt()
		Expect(readers.OK.Load()).To(BeNumerically(">", 100))
		Expect(readers.Failed.Load()).To(BeZero(), "failed reads: %v", readers.FirstErrors())
	}

	It("keeps the CRDs' trust when the CA Secret is deleted, garbled or replaced by a foreign CA: zero failed reads each time", func(ctx context.Context) {
		// Pods take 10 s to start, as real ones may: an old pod serves
		// until its successor is ready. (The API server retries a failed
		// webhook call for about 4 s before a read fails.)
		cluster.Kubelet.Serve(ns, "widget-webhook", slowStart(10*time.Second, testcluster.HandlerHost{Handler: &testcluster.WidgetConverter{}}))
		names := startInstall(ctx)
		caSecret := client.ObjectKey{Namespace: ns, Name: desired.CASecretName(service)}
		// Foreign, but as the install's policy asks (else Hookwright rotates
		// away from it at once, in order too).
		foreign, err := certs.NewCA("someone-else", certs.ECDSAP256, 17520*time.Hour, time.Now())
		Expect(err).NotTo(HaveOccurred())

		readers := startReaders(ctx, group, ns, names, 4)
		DeferCleanup(readers.Halt)
		before := settled(ctx, "", nil)
		disturbances := []struct {
			name    string
			disturb func(*corev1.Secret)
		}{
			{"deleted", nil},
			{"garbled", func(s *corev1.Secret) {
				s.Data[corev1.TLSCertKey] = []byte("-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n")
				s.Data[corev1.TLSPrivateKeyKey] = []byte("garbage")
			}},
			{"replaced by a foreign CA", func(s *corev1.Secret) {
				s.Data = map[string][]byte{corev1.TLSCertKey: foreign.Pair.CertPEM, corev1.TLSPrivateKeyKey: foreign.Pair.KeyPEM}
			}},
		}
		for _, d := range disturbances {
			By("the CA Secret is " + d.name)
			secret := &corev1.Secret{}
			Expect(k8s.Get(ctx, caSecret, secret)).To(Succeed())
			if d.disturb == nil {
				Expect(k8s.Delete(ctx, secret)).To(Succeed())
			} else {
				d.disturb(secret)
				Expect(k8s.Update(ctx, secret)).To(Succeed())
			}
			after := settled(ctx, before, readers)
			if d.name == "replaced by a foreign CA" {
				Expect(after).To(Equal(certs.Fingerprint(foreign.Cert)), "a usable CA in the Secret is used, in order")
			}
			Expect(readers.Failed.Load()).To(BeZero(), "failed reads after the CA Secret was %s: %v", d.name, readers.FirstErrors())
			before = after
		}
		readers.Halt()
		AddReportEntry("reads", fmt.Sprintf("%d ok, %d failed", readers.OK.Load(), readers.Failed.Load()), ReportEntryVisibilityAlways)
		Expect(readers.OK.Load()).To(BeNumerically(">", 100))
		Expect(readers.Failed.Load()).To(BeZero(), "failed reads: %v", readers.FirstErrors())

		Eventually(func(g Gomega) {
			var events eventsv1.EventList
			g.Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
			kept := 0
			for _, e := range events.Items {
				if e.Reason == "CATrustKept" {
					kept++
				}
			}
			g.Expect(kept).To(BeNumerically(">=", 1), "a Warning Event says the trust was kept")
		}).Should(Succeed())
	})

	It("holds a CA rotation while a pod serves the old chain, says why, and completes once it serves the mounted certificate: zero failed reads", func(ctx context.Context) {
		var stuck atomic.Pointer[tls.Certificate]
		cluster.Kubelet.Serve(ns, "widget-webhook", stuckHost(&stuck))
		names := startInstall(ctx)
		oldCA := settled(ctx, "", nil)

		By("the webhook ignores what it mounts from now on, and keeps serving today's certificate")
		serving := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: desired.ServingSecretName(service)}, serving)).To(Succeed())
		pinned, err := tls.X509KeyPair(serving.Data[corev1.TLSCertKey], serving.Data[corev1.TLSPrivateKeyKey])
		Expect(err).NotTo(HaveOccurred())
		stuck.Store(&pinned)
		readers := startReaders(ctx, group, ns, names, 4)
		DeferCleanup(readers.Halt)

		const request = "ca: rotate while the webhook ignores its certificate"
		whi := getInstall(ctx, ns, "widgets")
		patch := client.MergeFrom(whi.DeepCopy())
		whi.Annotations = map[string]string{v1alpha1.AnnotationRotate: request}
		Expect(k8s.Patch(ctx, whi, patch)).To(Succeed())

		By("the rotation holds: the old CA stays in the caBundle, the condition and an Event say why")
		var newCA string
		Eventually(func(g Gomega) {
			stopOnFailedRead(readers)
			whi := installIn(ctx, g, ns, "widgets")
			g.Expect(whi.Status.HandledRotationRequest).To(Equal(request))
			newCA = whi.Status.Services[0].CAFingerprint
			g.Expect(newCA).NotTo(Equal(oldCA), "promoted")
			ready := condition(whi, v1alpha1.TypeCertificatesReady)
			g.Expect(ready.Message).To(ContainSubstring("held: the API server does not trust what the pods of service " + service + " serve through the new CA"))
			g.Expect(ready.Message).To(ContainSubstring("x509"))
			var events eventsv1.EventList
			g.Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(And(HaveField("Reason", "CARotationHeld"), HaveField("Type", corev1.EventTypeWarning),
				HaveField("Note", ContainSubstring("Kept the old CA "+oldCA)))))
		}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
		crd := getCRD(ctx, crdName)
		bundle, err := certs.ParseCerts(crd.Spec.Conversion.Webhook.ClientConfig.CABundle)
		Expect(err).NotTo(HaveOccurred())
		Expect(bundle).To(HaveLen(2), "the old CA is still trusted")
		whi = getInstall(ctx, ns, "widgets")
		Expect(whi.Status.Rotations).To(ContainElement(And(HaveField("Kind", v1alpha1.RotationCA), HaveField("NewFingerprint", newCA),
			HaveField("Outcome", v1alpha1.RotationInProgress))), "the CA rotation is not complete")
		Expect(condition(whi, v1alpha1.TypeConversionVerified).Status).To(Equal(metav1.ConditionTrue), "conversions work meanwhile")
		Expect(readers.Failed.Load()).To(BeZero(), "failed reads while held: %v", readers.FirstErrors())

		By("the webhook serves the certificate it mounts again: the rotation completes")
		stuck.Store(nil)
		rotatedWithoutFailedReads(ctx, oldCA, newCA, readers)
		whi = getInstall(ctx, ns, "widgets")
		Expect(whi.Status.Rotations).To(ContainElement(And(HaveField("Kind", v1alpha1.RotationCA), HaveField("NewFingerprint", newCA),
			HaveField("Outcome", v1alpha1.RotationSucceeded))))
	})

	// load_barrier.go: a trust probe proves the API server loaded every
	// CRD write made before it, whoever made it. Here the install's own
	// probes can never prove trust (its webhook drops every TrustProbe
	// review), but their first write to the probe CRD still comes after
	// the new caBundle's: the promote gate then reads through the
	// install's own CRD instead, which only that proof makes meaningful.
	It("promotes a new CA once a probe written after its caBundle proved it loaded, though the webhook drops every trust probe review: zero failed reads", func(ctx context.Context) {
		var dropProbes atomic.Bool
		converter := &testcluster.WidgetConverter{}
		cluster.Kubelet.Serve(ns, "widget-webhook", testcluster.HandlerHost{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if dropProbes.Load() && bytes.Contains(body, []byte(`"kind":"TrustProbe`)) {
				panic(http.ErrAbortHandler) // no answer at all: the probe cannot prove trust
			}
			converter.ServeHTTP(w, r)
		})})
		names := startInstall(ctx)
		oldCA := settled(ctx, "", nil)
		readers := startReaders(ctx, group, ns, names, 4)
		DeferCleanup(readers.Halt)
		spared := metricValue("hookwright_trust_probes_spared_total", map[string]string{"gate": "promote"})

		dropProbes.Store(true)
		requestRotation(ctx, ns, "ca: promote behind the barrier")
		By("the new CA is promoted while no trust probe of this webhook is answered")
		var newCA string
		Eventually(func(g Gomega) {
			stopOnFailedRead(readers)
			whi := installIn(ctx, g, ns, "widgets")
			newCA = whi.Status.Services[0].CAFingerprint
			g.Expect(newCA).NotTo(Equal(oldCA), "not promoted: %s", condition(whi, v1alpha1.TypeCertificatesReady).Message)
		}, time.Minute, 200*time.Millisecond).Should(Succeed())
		Expect(metricValue("hookwright_trust_probes_spared_total", map[string]string{"gate": "promote"})).To(BeNumerically(">", spared))
		bundle, err := certs.ParseCerts(getCRD(ctx, crdName).Spec.Conversion.Webhook.ClientConfig.CABundle)
		Expect(err).NotTo(HaveOccurred())
		Expect(bundle).To(HaveLen(2), "the old CA stays until the prune gate's own probe proves the new one alone")

		By("the webhook answers trust probes again: the old CA is pruned")
		dropProbes.Store(false)
		rotatedWithoutFailedReads(ctx, oldCA, newCA, readers)
	})
})

// stopOnFailedRead ends an Eventually at the first failed read.
func stopOnFailedRead(readers *testfixtures.Reader) {
	if readers != nil && readers.Failed.Load() > 0 {
		StopTrying(fmt.Sprintf("%d failed reads: %v", readers.Failed.Load(), readers.FirstErrors())).Now()
	}
}

// slowStart runs host after a pause, like a pod that takes time to start:
// the stand-in routes to it only once it is ready.
func slowStart(pause time.Duration, host testcluster.Host) testcluster.Host {
	return testcluster.HostFunc(func(ctx context.Context, env *testcluster.PodEnv) error {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
		return host.Run(ctx, env)
	})
}

// stuckHost serves the widget converter with the certificate its pod
// mounts, read at each handshake, except while stuck holds one: then it
// serves that one, whatever it mounts (a webhook that ignores the
// certificate Hookwright gives it). Every pod of the Deployment shares
// stuck, so a rollout does not help.
func stuckHost(stuck *atomic.Pointer[tls.Certificate]) testcluster.Host {
	return testcluster.HostFunc(func(ctx context.Context, env *testcluster.PodEnv) error {
		mounted, err := env.MountDir(testcluster.DefaultCertMount)
		if err != nil {
			return err
		}
		var draining atomic.Bool
		converter := &testcluster.WidgetConverter{}
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if draining.Load() {
				w.Header().Set("Connection", "close")
			}
			converter.ServeHTTP(w, r)
		})
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second,
			TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
				if pinned := stuck.Load(); pinned != nil {
					return pinned, nil
				}
				cert, err := tls.LoadX509KeyPair(filepath.Join(mounted, "tls.crt"), filepath.Join(mounted, "tls.key"))
				return &cert, err
			}},
			ErrorLog: log.New(io.Discard, "", 0)} // the probe's failed handshakes are the point
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			<-ctx.Done()
			// Drain as testcluster.HandlerHost does: the pod is out of the
			// Service, pooled connections move to other pods.
			draining.Store(true)
			time.Sleep(testcluster.DefaultDrainPeriod)
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shutdownCtx)
		}()
		env.MarkReady()
		if err := srv.ServeTLS(env.Listener, "", ""); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		<-stopped
		return nil
	})
}
