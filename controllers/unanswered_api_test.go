package controllers_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/internal/testcluster"
)

// Webhooks that accept connections and never answer make each
// verification wait for the API server's 30 s timeout. More of them than
// the suite's lanes (8 workers, 2 lanes) take turns once each has been
// found so: their verifications, counted where the webhook hangs, never
// run more than two at a time. Without the lanes all four retry together
// 10 s after their first failures, four at a time.
var _ = Describe("Webhooks that accept connections and never answer", func() {
	It("take turns in a quarter of the workers, and are freed once they answer", func(ctx context.Context) {
		const installs, lanes = 4, 2
		hang := &hangingConverter{}
		var namespaces []string
		for range installs {
			ns, _, crdName := widgetNamespace(ctx)
			cluster.Kubelet.Serve(ns, "widget-webhook", testcluster.HandlerHost{Handler: hang})
			Expect(k8s.Create(ctx, newInstall(ns, "widgets", "widget-webhook", crdName))).To(Succeed())
			namespaces = append(namespaces, ns)
		}

		By("each first verification waits out the API server and finds the webhook unreachable")
		Eventually(func(g Gomega) {
			for _, ns := range namespaces {
				c := condition(installIn(ctx, g, ns, "widgets"), v1alpha1.TypeConversionVerified)
				g.Expect(c.Status).To(Equal(metav1.ConditionFalse), ns)
				g.Expect(c.Reason).To(Equal(v1alpha1.ReasonWebhookUnreachable), ns)
			}
		}, "240s").Should(Succeed())
		Expect(metricValue("hookwright_unanswered_webhook_installs", nil)).To(BeEquivalentTo(installs))

		By("their next verifications take turns")
		hang.recount()
		Eventually(hang.started, "240s", "1s").Should(BeNumerically(">=", installs))
		Expect(hang.mostAtOnce()).To(BeNumerically("<=", lanes), "verifications of unanswered webhooks in flight at once")

		By("answered, every install converges and leaves the lanes")
		hang.answer()
		Eventually(func(g Gomega) {
			for _, ns := range namespaces {
				c := condition(installIn(ctx, g, ns, "widgets"), v1alpha1.TypeConversionVerified)
				g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", ns, c.Reason, c.Message)
			}
		}, "240s").Should(Succeed())
		Eventually(func() float64 { return metricValue("hookwright_unanswered_webhook_installs", nil) }).Should(BeZero())
	})
})

// hangingConverter holds every request until the client gives up, and
// counts them, until answer makes it the widget converter.
type hangingConverter struct {
	widgets  testcluster.WidgetConverter
	mu       sync.Mutex
	answered bool
	release  chan struct{}
	inFlight int
	most     int // of inFlight since the last recount
	count    int // requests started since the last recount
}

func (h *hangingConverter) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.mu.Lock()
	if h.release == nil {
		h.release = make(chan struct{})
	}
	if h.answered {
		h.mu.Unlock()
		h.widgets.ServeHTTP(rw, r)
		return
	}
	release := h.release
	h.inFlight++
	h.count++
	h.most = max(h.most, h.inFlight)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.inFlight--
		h.mu.Unlock()
	}()
	// With the body read, the server notices the client closing the
	// connection and cancels the request's context.
	select {
	case <-r.Context().Done():
	case <-release:
		h.widgets.ServeHTTP(rw, r)
	}
}

// recount starts counting afresh from the requests in flight now.
func (h *hangingConverter) recount() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.most, h.count = h.inFlight, 0
}

func (h *hangingConverter) started() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count
}

func (h *hangingConverter) mostAtOnce() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.most
}

// answer ends the hang: requests in flight and later ones are converted.
func (h *hangingConverter) answer() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answered = true
	if h.release == nil {
		h.release = make(chan struct{})
	}
	close(h.release)
}
