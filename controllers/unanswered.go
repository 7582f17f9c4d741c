package controllers

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// A webhook that accepts connections and never answers (a stuck process, a
// network policy that drops the API server's packets) fails each request
// through it only when the API server gives up: 30 s for a conversion
// (defaultRequestTimeout, k8s.io/apiserver pkg/util/webhook), the
// configuration's timeoutSeconds for an admission webhook. The pass that
// verifies it holds a reconcile worker that long, and tries again 10 s
// later (verifyFailedRetry). Before lanes, as many such installs as there
// are workers held every worker most of the time, and every other install's
// passes, certificate rotations included, queued behind them.
//
// So the installs whose last verification waited for the API server's
// timeout (unansweredAfter or more, and the error says the wait ran out:
// foundUnanswered) take turns: at most a quarter of
// the workers (at least one, unansweredLanes) run their passes at once.
// The others stay free for every other install. A pass that finds no free
// lane reads nothing and writes nothing, and looks again after
// verifyFailedRetry; a deletion is never held back (finalize runs before
// the lanes). A pass that does not find the webhook unanswered (it
// answered, it refused the connection, nothing needed verifying) frees the
// install of the lanes.
//
// Hookwright does not cut the API server's wait short instead: under load
// the API server can take seconds to answer a healthy webhook's
// conversion, and a verification that gave up early would report such a
// webhook unreachable.
const unansweredAfter = 5 * time.Second

// unansweredLanes is how many passes of installs with unanswered webhooks
// run at once, of concurrency reconcile workers.
func unansweredLanes(concurrency int) int {
	return max(1, concurrency/4)
}

// unansweredInstalls are the installs whose last verification waited
// unansweredAfter or more for a webhook that was unreachable, and the
// lanes their passes take.
type unansweredInstalls struct {
	mu     sync.Mutex
	limit  int // lanes; 0 counts as 1
	held   int
	marked map[types.NamespacedName]bool
}

// admit lets a pass of key run: at once when key is not marked, else in a
// free lane, which release gives back. ok is false when every lane is
// taken.
func (u *unansweredInstalls) admit(key types.NamespacedName) (release func(), ok bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.marked[key] {
		return func() {}, true
	}
	if u.held >= max(1, u.limit) {
		return nil, false
	}
	u.held++
	var once sync.Once
	return func() {
		once.Do(func() {
			u.mu.Lock()
			u.held--
			u.mu.Unlock()
		})
	}, true
}

// observe records what key's pass found: unanswered marks it, anything
// else frees it.
func (u *unansweredInstalls) observe(key types.NamespacedName, unanswered bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if unanswered {
		if u.marked == nil {
			u.marked = map[types.NamespacedName]bool{}
		}
		u.marked[key] = true
	} else {
		delete(u.marked, key)
	}
	unansweredInstallsGauge.Set(float64(len(u.marked)))
}

// forget drops a deleted install.
func (u *unansweredInstalls) forget(key types.NamespacedName) { u.observe(key, false) }

// foundUnanswered: a verification of the pass, conversion or admission,
// took unansweredAfter or more and found its webhook unreachable because
// the API server's wait ran out.
//
// Slow alone is not enough: the API server retries a webhook that refuses
// connections for a few seconds, with backoff, so a webhook whose pod is
// not serving yet fails slowly too, and on a loaded API server slower
// still. Marking those made new installs take turns: make bench's P4 at
// 1,000 installs (cc8090c) had 32 converged when its wait ended, against
// all 1,000 the run before.
func foundUnanswered(s *installState) bool {
	for _, c := range s.crds {
		if c.verifyReason == v1alpha1.ReasonWebhookUnreachable && c.verifyTook >= unansweredAfter && noAnswerInTime(c.message) {
			return true
		}
	}
	for _, a := range s.admission {
		if a.verifyReason == v1alpha1.ReasonWebhookUnreachable && a.verifyTook >= unansweredAfter && noAnswerInTime(a.message) {
			return true
		}
	}
	return false
}

// noAnswerInTime: the API server's error, quoted in a verification's
// message, says its wait for the webhook ran out (its HTTP client's
// timeout, a dial or TLS handshake that got no answer), not that the
// connection was refused or found no endpoint.
func noAnswerInTime(message string) bool {
	for _, timedOut := range []string{"context deadline exceeded", "Client.Timeout exceeded", "i/o timeout", "TLS handshake timeout", "timeout awaiting response headers"} {
		if strings.Contains(message, timedOut) {
			return true
		}
	}
	return false
}

var unansweredInstallsGauge = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "hookwright_unanswered_webhook_installs",
	Help: "Installs whose last verification waited for the API server to give up on a webhook that did not answer in time; their passes take turns in a quarter of the reconcile workers.",
})

func init() { ctrlmetrics.Registry.MustRegister(unansweredInstallsGauge) }
