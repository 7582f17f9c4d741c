package controllers_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/internal/testcluster"
)

// probeGathering holds each TrustProbe conversion review until want of
// them are in flight at once (or a while has passed), until that happened
// once, and records the most it saw: a probe holds its probe CRD until its
// reviews are answered, so probes run at once only on different CRDs.
type probeGathering struct {
	want           int
	mu             sync.Mutex
	inFlight, most int
	gathered       chan struct{} // closed once want were in flight at once
}

func (g *probeGathering) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"kind":"TrustProbe`)) {
			next.ServeHTTP(w, r)
			return
		}
		g.mu.Lock()
		g.inFlight++
		if g.most < g.want && g.inFlight == g.want {
			close(g.gathered)
		}
		g.most = max(g.most, g.inFlight)
		g.mu.Unlock()
		select {
		case <-g.gathered:
		case <-time.After(3 * time.Second): // a dry run makes two reviews, both within the probe's 10 s timeout
		}
		next.ServeHTTP(w, r)
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	})
}

var _ = Describe("CA rotations of several installs at once", func() {
	It("are proven at once, one probe CRD each, instead of one after the other, each writing its CRD once", func(ctx context.Context) {
		const installs = 4 // the pool's probe CRDs (trustprobes2-5); the operator has 4 reconcile workers
		gathering := &probeGathering{want: installs, gathered: make(chan struct{})}
		var namespaces, crdNames []string
		for range installs {
			ns, _, crdName := widgetNamespace(ctx)
			cluster.Kubelet.Serve(ns, "widget-webhook", testcluster.HandlerHost{Handler: gathering.wrap(&testcluster.WidgetConverter{})})
			install := newInstall(ns, "widgets", "widget-webhook", crdName)
			install.Spec.Certificates.TrustOverlap = &metav1.Duration{Duration: time.Second} // the rotation ends soon after promotion
			Expect(k8s.Create(ctx, install)).To(Succeed())
			namespaces = append(namespaces, ns)
			crdNames = append(crdNames, crdName)
		}
		for _, ns := range namespaces {
			eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		}
		_, auditFrom := managerWrites(0)
		probesBefore := crdTrustProbes()

		request := "ca: four at once"
		for _, ns := range namespaces {
			requestRotation(ctx, ns, request)
		}
		// Each CRD is written by someone else right after its new caBundle
		// (2 s before the promote gate, rotation.SettleTime): no probe of
		// another install can then prove it loaded (load_barrier.go), so
		// every install's gate runs a probe of its own.
		for _, name := range crdNames {
			Eventually(func(g Gomega) {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
				bundle, err := certs.ParseCerts(crd.Spec.Conversion.Webhook.ClientConfig.CABundle)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(bundle).To(HaveLen(2))
				patch := client.MergeFrom(crd.DeepCopy())
				metav1.SetMetaDataAnnotation(&crd.ObjectMeta, "example.com/touched", "after the new caBundle")
				g.Expect(k8s.Patch(ctx, crd, patch)).To(Succeed())
			}, 10*time.Second, 20*time.Millisecond).Should(Succeed())
		}
		for _, ns := range namespaces {
			Eventually(func(g Gomega) {
				whi := installIn(ctx, g, ns, "widgets")
				g.Expect(whi.Status.HandledRotationRequest).To(Equal(request))
				for _, rec := range whi.Status.Rotations {
					g.Expect(rec.Outcome).To(Equal(v1alpha1.RotationSucceeded), "%s: %+v; %s", ns, rec, condition(whi, v1alpha1.TypeCertificatesReady).Message)
				}
			}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
		}

		events, _, err := cluster.AuditEvents(auditFrom)
		Expect(err).NotTo(HaveOccurred())
		const barrier = "trustprobes" // the barrier rounds' CRD, outside the pool
		probed, written := map[string]int{}, map[string]int{}
		for _, e := range events {
			if e.User.Username != managerUser {
				continue
			}
			if e.Verb == "create" && strings.HasPrefix(e.ObjectRef.Resource, "trustprobes") && e.ObjectRef.Resource != barrier && strings.Contains(e.RequestURI, "dryRun=All") {
				probed[e.ObjectRef.Resource]++
			}
			if plural, isProbeCRD := strings.CutSuffix(e.ObjectRef.Name, ".operators.hookwright.dev"); isProbeCRD && e.ObjectRef.Resource == "customresourcedefinitions" && e.Verb == "patch" {
				written[plural]++
			}
		}
		probes := crdTrustProbes() - probesBefore
		gathering.mu.Lock()
		most := gathering.most
		gathering.mu.Unlock()
		report := fmt.Sprintf("%d CA rotations: at most %d trust probe reviews in flight at once; dry runs per probe CRD %v; %.0f CRD probes; writes per probe CRD %v",
			installs, most, probed, probes, written)
		AddReportEntry("concurrent trust probes", report, ReportEntryVisibilityAlways)
		Expect(most).To(Equal(installs), report)
		Expect(probed).To(HaveLen(installs), "every probe CRD of the pool held a probe: %s", report)
		pool := 0
		for plural, n := range written {
			if plural != barrier {
				pool += n
			}
		}
		Expect(probes).To(BeNumerically(">=", installs), report)
		Expect(float64(pool)).To(BeNumerically("<=", probes), "a probe writes its pool CRD once, at the webhook under test, with no idle write first: %s", report)
		Expect(written).To(HaveKey(barrier), "barrier rounds proved the probes' writes loaded: %s", report)
	})
})

// crdTrustProbes counts the trust probes of CRD gates (promote, move,
// prune) so far, whatever their result.
func crdTrustProbes() float64 {
	total := 0.0
	for _, gate := range []string{"promote", "move", "prune"} {
		total += metricValue("hookwright_trust_probes_total", map[string]string{"gate": gate})
	}
	return total
}
