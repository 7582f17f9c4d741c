package controllers_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/internal/testcluster"
)

// Each spec breaks the webhook one way and reads what the API server
// answered in the ConversionVerified condition: its reason, and the API
// server's own message.
var _ = Describe("Verification through the API server", func() {
	var ns, group, crdName string
	BeforeEach(func(ctx context.Context) {
		ns, group, crdName = widgetNamespace(ctx)
	})

	It("reports a webhook whose certificate the caBundle does not trust as WebhookUntrusted, with the API server's x509 error, and True once it serves the mounted one", func(ctx context.Context) {
		// The pod serves a certificate of its own CA, not the one Hookwright
		// mounts: the caBundle Hookwright wrote cannot trust it.
		var foreign atomic.Bool
		foreign.Store(true)
		cluster.Kubelet.Serve(ns, "widget-webhook", foreignCertHost(ns, "widget-webhook", &foreign))
		Expect(k8s.Create(ctx, newInstall(ns, "widgets", "widget-webhook", crdName))).To(Succeed())

		whi := eventuallyConversionVerified(ctx, ns, "widgets", metav1.ConditionFalse, v1alpha1.ReasonWebhookUntrusted,
			"x509: certificate signed by unknown authority")
		Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseFailed))
		Expect(whi.Status.Reason).To(Equal(v1alpha1.ReasonWebhookUntrusted))
		Expect(whi.Status.ConversionCRDs[0].State).To(Equal(v1alpha1.ConversionFailed))
		Expect(condition(whi, v1alpha1.TypeConversionConfigured).Status).To(Equal(metav1.ConditionTrue), "configured, just not trusted")

		By("the pod serves the certificate Hookwright mounts: verified again without any change to the install")
		foreign.Store(false)
		whi = eventuallyConversionVerified(ctx, ns, "widgets", metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
		Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
	})

	It("reports a webhook no pod serves as WebhookUnreachable, and True again once a pod serves", func(ctx context.Context) {
		var podAddr atomic.Value
		cluster.Kubelet.Serve(ns, "widget-webhook", testcluster.HostFunc(func(ctx context.Context, env *testcluster.PodEnv) error {
			podAddr.Store(env.Listener.Addr().String())
			return testcluster.HandlerHost{Handler: &testcluster.WidgetConverter{}, DrainPeriod: time.Millisecond}.Run(ctx, env)
		}))
		createWidget(ctx, widget(group, "v1", ns, "w", map[string]any{"value": "1"}))
		Expect(k8s.Create(ctx, newInstall(ns, "widgets", "widget-webhook", crdName))).To(Succeed())
		eventuallyConversionVerified(ctx, ns, "widgets", metav1.ConditionTrue, v1alpha1.ReasonSucceeded)

		By("the pod goes away (its node is lost: the Pod and the Deployment still say ready), and the install changes")
		cluster.Kubelet.Forget(ns, "widget-webhook")
		Eventually(func() error {
			conn, err := net.Dial("tcp", podAddr.Load().(string))
			if err == nil {
				_ = conn.Close()
			}
			return err
		}).Should(HaveOccurred(), "the pod stopped listening")
		bumpVersion(ctx, ns, "widgets")
		whi := eventuallyConversionVerified(ctx, ns, "widgets", metav1.ConditionFalse, v1alpha1.ReasonWebhookUnreachable,
			"service "+ns+"/widget-webhook-service: dial ", "connection refused")
		Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseFailed))
		Expect(whi.Status.Reason).To(Equal(v1alpha1.ReasonWebhookUnreachable))

		By("a pod serves again: verified again without any change to the install")
		serve(ns, "widget-webhook")
		whi = eventuallyConversionVerified(ctx, ns, "widgets", metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
		Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
	})

	It("reports a webhookPath the webhook does not serve as WebhookPathNotFound, with the API server's 404, and True once it is fixed", func(ctx context.Context) {
		cluster.Kubelet.Serve(ns, "widget-webhook", testcluster.HandlerHost{Handler: onlyAt("/convert", &testcluster.WidgetConverter{})})
		createWidget(ctx, widget(group, "v1", ns, "w", map[string]any{"value": "1"}))
		install := newInstall(ns, "widgets", "widget-webhook", crdName)
		install.Spec.WebhookDefinitions[0].WebhookPath = ptr.To("/v1/convert")
		Expect(k8s.Create(ctx, install)).To(Succeed())

		whi := eventuallyConversionVerified(ctx, ns, "widgets", metav1.ConditionFalse, v1alpha1.ReasonWebhookPathNotFound,
			"the server could not find the requested resource", "/v1/convert")
		Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseFailed))
		Expect(whi.Status.Reason).To(Equal(v1alpha1.ReasonWebhookPathNotFound))

		By("webhookPath fixed")
		Eventually(func(g Gomega) {
			whi := installIn(ctx, g, ns, "widgets")
			whi.Spec.WebhookDefinitions[0].WebhookPath = ptr.To("/convert")
			g.Expect(k8s.Update(ctx, whi)).To(Succeed())
		}).Should(Succeed())
		whi = eventuallyConversionVerified(ctx, ns, "widgets", metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
		Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
	})

	It("reports an object the webhook refuses as ConversionRefused naming it, rotates the CA anyway, and is True again once the webhook is fixed", func(ctx context.Context) {
		converter := &refusingConverter{}
		converter.refuse("a-refused")
		cluster.Kubelet.Serve(ns, "widget-webhook", testcluster.HandlerHost{Handler: converter})
		createWidget(ctx, widget(group, "v1", ns, "a-refused", map[string]any{"value": "1"}))
		install := newInstall(ns, "widgets", "widget-webhook", crdName)
		install.Spec.Certificates.TrustOverlap = &metav1.Duration{Duration: 2 * time.Second}
		Expect(k8s.Create(ctx, install)).To(Succeed())

		whi := eventuallyConversionVerified(ctx, ns, "widgets", metav1.ConditionFalse, v1alpha1.ReasonConversionRefused,
			"converting "+ns+"/a-refused: spec.value 1 is not for v2")
		Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseFailed))
		Expect(whi.Status.Reason).To(Equal(v1alpha1.ReasonConversionRefused))
		Expect(whi.Status.ConversionCRDs[0].State).To(Equal(v1alpha1.ConversionFailed))
		_, err := readWidget(ctx, group, "v2", ns, "a-refused")
		Expect(err).To(MatchError(ContainSubstring("spec.value 1 is not for v2")), "the API server's own read fails the same way")

		By("a CA rotation goes through both verified steps: the webhook answered, so the API server trusts the caBundle")
		oldCA := whi.Status.Services[0].CAFingerprint
		const request = "ca: renew despite a refused object"
		patch := client.MergeFrom(whi.DeepCopy())
		whi.Annotations = map[string]string{v1alpha1.AnnotationRotate: request}
		Expect(k8s.Patch(ctx, whi, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			whi := installIn(ctx, g, ns, "widgets")
			g.Expect(whi.Status.HandledRotationRequest).To(Equal(request))
			g.Expect(whi.Status.Services[0].CAFingerprint).NotTo(Equal(oldCA), "promoted")
			g.Expect(whi.Status.Rotations).To(ContainElement(And(
				HaveField("Kind", v1alpha1.RotationServing), HaveField("Reason", "CARotation"))), "serving certificate moved to the new CA")
			bundle, err := certs.ParseCerts(getCRD(ctx, crdName).Spec.Conversion.Webhook.ClientConfig.CABundle)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bundle).To(HaveLen(1), "the old CA pruned")
			g.Expect(certs.Fingerprint(bundle[0])).To(Equal(whi.Status.Services[0].CAFingerprint))
			c := condition(whi, v1alpha1.TypeConversionVerified)
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonConversionRefused), c.Message)
		}, 2*time.Minute).Should(Succeed())

		By("the webhook fixed, the condition is True again without any change to the install")
		converter.refuse()
		whi = eventuallyConversionVerified(ctx, ns, "widgets", metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
		Expect(whi.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		Expect(whi.Status.ConversionCRDs[0].State).To(Equal(v1alpha1.ConversionVerified))
		Expect(whi.Status.ConversionCRDs[0].Message).To(ContainSubstring("read " + ns + "/a-refused at v2 through the webhook"))
		Eventually(func(g Gomega) {
			rotations := installIn(ctx, g, ns, "widgets").Status.Rotations
			g.Expect(rotations).To(ContainElement(And(
				HaveField("Kind", v1alpha1.RotationCA), HaveField("Reason", "Manual"), HaveField("Outcome", v1alpha1.RotationSucceeded))))
			g.Expect(rotations).To(ContainElement(And(
				HaveField("Kind", v1alpha1.RotationServing), HaveField("Reason", "CARotation"), HaveField("Outcome", v1alpha1.RotationSucceeded))))
		}).Should(Succeed(), "the rotation's records complete")
	})

	It("names no refused object of another namespace", func(ctx context.Context) {
		elsewhere := createNamespace(ctx)
		converter := &refusingConverter{}
		converter.refuse("someone-elses-secret-project")
		cluster.Kubelet.Serve(ns, "widget-webhook", testcluster.HandlerHost{Handler: converter})
		createWidget(ctx, widget(group, "v1", elsewhere, "someone-elses-secret-project", map[string]any{"value": "1"}))
		Expect(k8s.Create(ctx, newInstall(ns, "widgets", "widget-webhook", crdName))).To(Succeed())

		whi := eventuallyConversionVerified(ctx, ns, "widgets", metav1.ConditionFalse, v1alpha1.ReasonConversionRefused)
		Expect(whi.Status.ConversionCRDs[0].Message).To(ContainSubstring("outside namespace " + ns))
		for _, text := range []string{whi.Status.ConversionCRDs[0].Message, condition(whi, v1alpha1.TypeConversionVerified).Message, whi.Status.Message} {
			Expect(text).NotTo(ContainSubstring("someone-elses-secret-project"))
			Expect(text).NotTo(ContainSubstring(elsewhere))
		}
		Expect(managerLog.String()).To(ContainSubstring("someone-elses-secret-project"), "the manager's log has the details")

		By("the webhook fixed")
		converter.refuse()
		eventuallyConversionVerified(ctx, ns, "widgets", metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	})
})

// eventuallyConversionVerified waits for the install's ConversionVerified
// condition, for its current generation, to have status and reason. A
// failed verification is retried every 10 s: the timeout leaves room.
func eventuallyConversionVerified(ctx context.Context, ns, name string, status metav1.ConditionStatus, reason string, messageHas ...string) *v1alpha1.WebhookInstall {
	var whi *v1alpha1.WebhookInstall
	EventuallyWithOffset(1, func(g Gomega) {
		whi = installIn(ctx, g, ns, name)
		c := condition(whi, v1alpha1.TypeConversionVerified)
		g.Expect(c.ObservedGeneration).To(Equal(whi.Generation))
		g.Expect(c.Status).To(Equal(status), "%s: %s", c.Reason, c.Message)
		g.Expect(c.Reason).To(Equal(reason), c.Message)
		for _, text := range messageHas {
			g.Expect(c.Message).To(ContainSubstring(text))
		}
	}, 90*time.Second).Should(Succeed())
	report(whi)
	return whi
}

// createWidget creates a widget, retrying while the client's REST mapper
// does not know the CRD's fresh group yet.
func createWidget(ctx context.Context, u *unstructured.Unstructured) {
	EventuallyWithOffset(1, func() error { return k8s.Create(ctx, u.DeepCopy()) }).Should(Succeed())
}

// report shows the API server's message as the status carries it.
func report(whi *v1alpha1.WebhookInstall) {
	c := condition(whi, v1alpha1.TypeConversionVerified)
	AddReportEntry("ConversionVerified "+c.Reason, c.Message, ReportEntryVisibilityFailureOrVerbose)
	fmt.Fprintf(GinkgoWriter, "ConversionVerified %s %s: %s\nphase %s %s: %s\n", c.Status, c.Reason, c.Message, whi.Status.Phase, whi.Status.Reason, whi.Status.Message)
}

// bumpVersion changes spec.version, which changes no workload: a new
// generation, so Hookwright verifies again.
func bumpVersion(ctx context.Context, ns, name string) {
	Eventually(func(g Gomega) {
		whi := installIn(ctx, g, ns, name)
		whi.Spec.Version = "1.0.1"
		g.Expect(k8s.Update(ctx, whi)).To(Succeed())
	}).Should(Succeed())
}

// foreignCertHost serves the widget converter, while foreign is set, with
// a certificate for the right Service names issued by a CA of its own: a
// pod that ignores the certificate Hookwright mounts. Otherwise it serves
// the mounted one.
func foreignCertHost(ns, deployment string, foreign *atomic.Bool) testcluster.Host {
	return testcluster.HostFunc(func(ctx context.Context, env *testcluster.PodEnv) error {
		ca, err := certs.NewCA("someone-else", certs.ECDSAP256, time.Hour, time.Now())
		if err != nil {
			return err
		}
		pair, err := ca.IssueServing(certs.ServiceDNSNames(desired.ServiceName(deployment), ns), certs.ECDSAP256, time.Hour, time.Now())
		if err != nil {
			return err
		}
		own, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
		if err != nil {
			return err
		}
		mounted, err := env.MountDir(testcluster.DefaultCertMount)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: &testcluster.WidgetConverter{}, ReadHeaderTimeout: 10 * time.Second,
			TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
				if foreign.Load() {
					return &own, nil
				}
				cert, err := tls.LoadX509KeyPair(filepath.Join(mounted, "tls.crt"), filepath.Join(mounted, "tls.key"))
				return &cert, err
			}},
			ErrorLog: log.New(io.Discard, "", 0)} // the API server's failed handshakes are the point
		go func() { <-ctx.Done(); _ = srv.Close() }()
		env.MarkReady()
		if err := srv.ServeTLS(env.Listener, "", ""); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
}

// onlyAt serves handler at path alone: any other path is a 404.
func onlyAt(path string, handler http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(path, handler)
	return mux
}

// refusingConverter is the widget converter with a bug: it answers a
// Failure result, naming the object, for every object named in refuse.
type refusingConverter struct {
	widgets testcluster.WidgetConverter
	mu      sync.Mutex
	refused map[string]bool
}

// refuse sets the names refused; none fixes the webhook.
func (c *refusingConverter) refuse(names ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refused = map[string]bool{}
	for _, n := range names {
		c.refused[n] = true
	}
}

func (c *refusingConverter) refuses(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refused[name]
}

func (c *refusingConverter) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	var review apiextensionsv1.ConversionReview
	if err := json.Unmarshal(body, &review); err == nil && review.Request != nil {
		for _, raw := range review.Request.Objects {
			var obj struct {
				metav1.ObjectMeta `json:"metadata"`
				Spec              map[string]any `json:"spec"`
			}
			if json.Unmarshal(raw.Raw, &obj) != nil || !c.refuses(obj.Name) {
				continue
			}
			review.Response = &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{
				Status:  metav1.StatusFailure,
				Message: fmt.Sprintf("converting %s/%s: spec.value %v is not for %s", obj.Namespace, obj.Name, obj.Spec["value"], versionOf(review.Request.DesiredAPIVersion)),
			}}
			review.Request = nil
			_ = json.NewEncoder(rw).Encode(review)
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	c.widgets.ServeHTTP(rw, r)
}

func versionOf(apiVersion string) string {
	for i := len(apiVersion) - 1; i >= 0; i-- {
		if apiVersion[i] == '/' {
			return apiVersion[i+1:]
		}
	}
	return apiVersion
}
