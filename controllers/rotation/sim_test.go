package rotation

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"math/rand"
	"slices"
	"time"

	"github.com/hookwright/hookwright/certs"
)

// sim plays Hookwright's executor and the cluster around the pure planner:
// it stores what the Secrets, the CRDs' caBundle and the webhook Deployment
// would hold, runs one pass per wake-up (the planner's requested DueAt, the
// watch event of a write, a rollout finishing, or a spurious resync), and
// applies each Action as controllers/step_rotation.go does. Between passes
// nothing changes, so every certificate a pod may serve is checked against
// the caBundle over each interval (checkServed).
//
// The cluster model: a write's own watch event arrives after 1 ms to
// maxLatency; a rollout (new pods serving, old pods gone) takes 0 to
// maxRollout, and both old and new pods serve in between. The executor's
// proofs through the API server: before Promote and MoveServing, every pod
// that may serve verifies under the current caBundle (the sim's API server
// loads a caBundle at once); before Prune, every pod verifies under the
// active CA alone (controllers/trustprobe.go), unless every CA being
// retired has expired. A pod may be stuck on one certificate (stuck: a
// webhook that ignores the one it mounts).
type sim struct {
	rng        *rand.Rand
	policy     certs.Policy
	overlap    time.Duration
	maxRollout time.Duration
	maxLatency time.Duration
	spurious   float64 // probability of an extra pass inside an interval
	names      []string
	now        time.Time

	// The Secrets.
	active, next *certs.CA
	previous     []*x509.Certificate
	pruneAt      time.Time
	serving      *certs.KeyPair
	caBroken     certs.Verdict // why the CA Secret holds no usable CA (active nil)

	// The CRDs and the Deployment.
	bundle      []byte
	bundleAt    time.Time // Hookwright's last apply of the caBundle
	template    string    // serving fingerprint in the pod template
	pods        [][]byte  // serving certificates pods may present
	rolloutDone time.Time
	stuck       []byte // when set, every pod presents this certificate, whatever it mounts

	manual     string // pending manual request: "ca" or "serving"
	manualWhy  string
	wake       []time.Time
	outage     bool // reads already fail (the CA expired while the operator was down): checks resume once every pod verifies
	stopReason string

	// Accounting.
	passes         int
	writes         []simWrite // Secret writes
	cas            []simCA    // every CA created, in order
	actions        map[ActionKind]int
	reasons        map[string]int
	violations     []string
	outageEnded    time.Time
	validUntil     map[[2]string]time.Time // verified pod certificate and bundle: valid until
	disturbed      []time.Time             // when a test changed a Secret or the rotate annotation
	repairsFromDue int                     // serving certificates repaired from a due CA (Plan's step 3)
	heldPrunes     int                     // Prune actions whose proof failed (the rotation held)
	heldUntil      time.Time               // a failed Prune proof is not tried again before (the executor's memory)
	lost           map[string]bool         // fingerprints of CAs a test took out of the CA Secret
	sleptUntil     time.Time               // the end of the last operator outage
	maxPasses      int
	strictIssuing  bool // record any issuing from a due CA as a violation, even a repair
	keepGoing      bool // run on after a violation (to count what a broken planner does)
}

type simWrite struct {
	at     time.Time
	secret string // "ca" or "serving"
	kind   ActionKind
	newCA  bool // the write stored a CA created for it
}

// A Prune whose proof failed is tried again after pruneHeldRetry, twice as
// long after each failure, up to pruneHeldMaxRetry (as controllers does).
const (
	pruneHeldRetry    = 5 * time.Second
	pruneHeldMaxRetry = 5 * time.Minute
)

type simCA struct {
	fingerprint string
	created     time.Time
	notAfter    time.Time
	promoted    time.Time // zero until it signs serving certificates
}

func newSim(seed int64, policy certs.Policy, overlap time.Duration, start time.Time) *sim {
	return &sim{
		rng: rand.New(rand.NewSource(seed)), policy: policy, overlap: overlap,
		maxRollout: 2 * time.Second, maxLatency: 200 * time.Millisecond, spurious: 0.2,
		names: certs.ServiceDNSNames("svc", "ns"), now: start,
		actions: map[ActionKind]int{}, reasons: map[string]int{}, maxPasses: 200000, strictIssuing: true,
	}
}

func (s *sim) violate(format string, args ...any) {
	if len(s.violations) < 10 {
		s.violations = append(s.violations, fmt.Sprintf("%s (+%s): ", s.now.UTC().Format(time.RFC3339Nano), s.sinceStart())+fmt.Sprintf(format, args...))
	}
}

func (s *sim) sinceStart() string {
	if len(s.cas) == 0 {
		return "0"
	}
	return days(s.now.Sub(s.cas[0].created))
}

func days(d time.Duration) string {
	return fmt.Sprintf("%.4fd", d.Hours()/24)
}

func (s *sim) observe() Observed {
	o := Observed{
		Now: s.now, Policy: s.policy, Overlap: s.overlap, DNSNames: s.names,
		Active: s.active, Next: s.next, Previous: s.previous, PruneAt: s.pruneAt, Serving: s.serving,
	}
	if s.active == nil {
		o.ActiveOK = certs.Verdict{Reason: certs.ReasonMissing, Message: "no CA has been issued yet"}
		if s.caBroken.Reason != "" {
			o.ActiveOK = s.caBroken
		}
	}
	if len(s.bundle) > 0 {
		o.Known, _ = certs.ParseCerts(s.bundle)
	}
	if s.next != nil && certs.BundleContains(s.bundle, s.next.Cert) {
		o.NextTrustedFor = max(s.now.Sub(s.bundleAt), 0)
	}
	if s.active != nil && certs.BundleContains(s.bundle, s.active.Cert) {
		o.ActiveTrustedFor = max(s.now.Sub(s.bundleAt), 0)
	}
	if s.serving != nil {
		if c, err := certs.ParseCert(s.serving.CertPEM); err == nil {
			o.RolledOut = s.template == certs.Fingerprint(c) && !s.now.Before(s.rolloutDone)
		}
	}
	switch s.manual {
	case "ca":
		o.ManualCA = s.manualWhy
	case "serving":
		o.ManualServing = s.manualWhy
	}
	return o
}

// pass runs the certificate step, then the workloads and conversion steps.
func (s *sim) pass() Action {
	s.passes++
	if len(s.pods) > 1 && !s.now.Before(s.rolloutDone) {
		s.pods = s.pods[len(s.pods)-1:]
	}
	a := Plan(s.observe())
	s.actions[a.Kind]++
	if a.Reason != "" {
		s.reasons[a.Reason]++
	}
	wrote := s.execute(a)
	if s.serving != nil {
		if c, err := certs.ParseCert(s.serving.CertPEM); err == nil && certs.Fingerprint(c) != s.template {
			s.template = certs.Fingerprint(c)
			// Pods of the template before last may still run; older
			// ones are gone (Kubernetes scales the oldest down first).
			s.pods = append(s.pods[max(len(s.pods)-2, 0):], s.serving.CertPEM)
			s.rolloutDone = s.now.Add(time.Duration(s.rng.Int63n(int64(s.maxRollout) + 1)))
			s.at(s.rolloutDone)
			wrote = true
		}
	}
	if want := Bundle(s.active, s.next, s.previous...); !bytes.Equal(want, s.bundle) {
		s.bundle, s.bundleAt = want, s.now
		wrote = true
	}
	if wrote {
		s.at(s.now.Add(time.Millisecond + time.Duration(s.rng.Int63n(int64(s.maxLatency)))))
	}
	return a
}

func (s *sim) at(t time.Time) { s.wake = append(s.wake, t) }

// loseCASecret empties the CA Secret as a test does (deleted, garbled):
// its CAs are lost, and verdict says why no CA is usable.
func (s *sim) loseCASecret(verdict certs.Verdict) {
	s.replaceCASecret(nil)
	s.caBroken = verdict
}

// replaceCASecret overwrites the CA Secret with active alone (nil: none).
func (s *sim) replaceCASecret(active *certs.CA) {
	if s.lost == nil {
		s.lost = map[string]bool{}
	}
	for _, ca := range []*certs.CA{s.active, s.next} {
		if ca != nil {
			s.lost[certs.Fingerprint(ca.Cert)] = true
		}
	}
	s.active, s.next, s.previous, s.pruneAt = active, nil, nil, time.Time{}
}

func (s *sim) write(secret string, kind ActionKind) {
	newCA := secret == "ca" && len(s.cas) > 0 && s.cas[len(s.cas)-1].created.Equal(s.now) &&
		!slices.ContainsFunc(s.writes, func(w simWrite) bool { return w.newCA && w.at.Equal(s.now) })
	s.writes = append(s.writes, simWrite{at: s.now, secret: secret, kind: kind, newCA: newCA})
}

func (s *sim) newCA() *certs.CA {
	ca, err := certs.NewCA("svc.ns-ca", s.policy.KeyAlgorithm, s.policy.CALifetime, s.now)
	if err != nil {
		panic(err)
	}
	s.cas = append(s.cas, simCA{fingerprint: certs.Fingerprint(ca.Cert), created: s.now, notAfter: ca.Cert.NotAfter})
	return ca
}

func (s *sim) caIndex(ca *certs.CA) int {
	for i := len(s.cas) - 1; i >= 0; i-- {
		if s.cas[i].fingerprint == certs.Fingerprint(ca.Cert) {
			return i
		}
	}
	return -1
}

func (s *sim) issueServing(kind ActionKind) {
	repair := s.servingUnusable()
	switch {
	case !s.now.Before(s.active.Cert.NotAfter):
		s.violate("serving certificate issued from a CA that expired at %s", s.active.Cert.NotAfter.UTC().Format(time.RFC3339))
	case !s.now.Before(s.policy.RenewAt(s.active.Cert)) && (s.strictIssuing || !repair):
		s.violate("serving certificate issued (%s) from a CA due since %s", kind, s.policy.RenewAt(s.active.Cert).UTC().Format(time.RFC3339))
	case !s.now.Before(s.policy.RenewAt(s.active.Cert)):
		s.repairsFromDue++
	}
	pair, err := s.active.IssueServing(s.names, s.policy.KeyAlgorithm, s.policy.ServingLifetime, s.now)
	if err != nil {
		panic(err)
	}
	s.serving = &pair
	s.write("serving", kind)
	if i := s.caIndex(s.active); i >= 0 && s.cas[i].promoted.IsZero() {
		s.cas[i].promoted = s.now
	}
}

// verifies is the API server's conversion check: every pod that may
// answer presents a certificate trusted by the caBundle now.
func (s *sim) verifies() bool { return s.verifiesUnder(s.bundle) }

// verifiesUnder: every pod that may answer presents a certificate that
// bundle trusts (the trust probe of controllers/trustprobe.go).
func (s *sim) verifiesUnder(bundle []byte) bool {
	for _, p := range s.served() {
		if certs.VerifyServing(p, bundle, s.names[0], s.now) != nil {
			return false
		}
	}
	return len(s.pods) > 0
}

// served are the certificates pods may present now.
func (s *sim) served() [][]byte {
	if s.stuck != nil && len(s.pods) > 0 {
		return [][]byte{s.stuck}
	}
	return s.pods
}

// retiredExpired: every CA being retired has expired; keeping it helps
// no read, so Prune needs no proof.
func (s *sim) retiredExpired() bool {
	for _, c := range s.previous {
		if s.now.Before(c.NotAfter) {
			return false
		}
	}
	return true
}

// execute mirrors WebhookInstallReconciler.execute; it reports a write.
func (s *sim) execute(a Action) bool {
	handled := false
	switch a.Kind {
	case IssueInitial:
		s.active, s.next, s.previous, s.pruneAt, s.caBroken = s.newCA(), nil, nil, time.Time{}, certs.Verdict{}
		s.write("ca", a.Kind)
		s.issueServing(a.Kind)
		handled = true
	case KeepTrust:
		if s.active == nil {
			s.active, s.next, s.caBroken = s.newCA(), nil, certs.Verdict{}
		}
		s.previous = append(s.previous, a.Keep...)
		s.pruneAt = s.now.Add(SettleTime + s.overlap)
		s.write("ca", a.Kind)
		s.at(s.now.Add(SettleTime))
		return true
	case MoveServing:
		if !s.verifies() {
			s.at(s.now.Add(SettleTime))
			return false
		}
		s.issueServing(a.Kind)
		return true
	case IssueServing:
		s.issueServing(a.Kind)
		handled = true
	case StartCARotation:
		s.next = s.newCA()
		s.write("ca", a.Kind)
		handled = true
	case Promote:
		if !s.verifies() {
			s.at(s.now.Add(SettleTime))
			return false
		}
		s.previous, s.pruneAt, s.active, s.next = []*x509.Certificate{s.active.Cert}, s.now.Add(s.overlap), s.next, nil
		s.write("ca", a.Kind)
		s.issueServing(a.Kind)
		s.at(s.now.Add(s.overlap))
		return true
	case Prune:
		if s.now.Before(s.heldUntil) {
			return false // held: the proof is tried again at heldUntil
		}
		if !s.retiredExpired() && !s.verifiesUnder(Bundle(s.active, nil)) {
			s.heldPrunes++
			s.heldUntil = s.now.Add(min(pruneHeldRetry<<(s.heldPrunes-1), pruneHeldMaxRetry))
			s.at(s.heldUntil)
			return false
		}
		s.previous, s.pruneAt, s.heldUntil = nil, time.Time{}, time.Time{}
		s.write("ca", a.Kind)
		return true
	case Wait, Nothing:
		if !a.DueAt.IsZero() {
			s.at(maxTime(a.DueAt, s.now.Add(time.Millisecond)))
		}
		return false
	}
	if handled && a.Reason == ReasonManual {
		s.manual, s.manualWhy = "", ""
	}
	return true
}

// servingUnusable: no pod could present the stored serving certificate
// to the API server successfully (missing, broken, from another CA, wrong
// names, expired). Only then may it be repaired from a due CA.
func (s *sim) servingUnusable() bool {
	if s.serving == nil || s.active == nil {
		return true
	}
	switch s.policy.CheckServing(s.serving, s.active, s.names, s.now).Reason {
	case certs.ReasonMissing, certs.ReasonInvalid, certs.ReasonCAChanged, certs.ReasonNamesChanged:
		return true
	}
	c, err := certs.ParseCert(s.serving.CertPEM)
	return err != nil || !s.now.Before(c.NotAfter)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// checkServed: every certificate a pod may present verifies under the
// caBundle over the whole of [from, to).
func (s *sim) checkServed(from, to time.Time) {
	if s.outage {
		if len(s.pods) > 1 || !s.verifies() {
			return
		}
		s.outage = false
		s.outageEnded = s.now
	}
	// Every certificate is valid from a NotBefore in the past (backdated
	// by ClockSkew), so a chain that verifies at the end of the interval
	// verifies throughout it. A verified chain stays valid until the
	// earliest NotAfter in it, which spares most Verify calls.
	at := maxTime(from, to.Add(-time.Nanosecond))
	for _, p := range s.served() {
		key := [2]string{string(p), string(s.bundle)}
		if until, ok := s.validUntil[key]; ok && !at.After(until) {
			continue
		}
		until, err := chainValidUntil(p, s.bundle, s.names[0], at)
		if err != nil {
			c, _ := certs.ParseCert(p)
			s.violate("a read at %s fails: pod certificate (NotAfter %s) does not verify under the caBundle: %v",
				at.UTC().Format(time.RFC3339Nano), c.NotAfter.UTC().Format(time.RFC3339), err)
			return
		}
		if s.validUntil == nil {
			s.validUntil = map[[2]string]time.Time{}
		}
		s.validUntil[key] = until
	}
}

// chainValidUntil verifies as the API server does at time at, and returns
// until when the verified chains stay valid.
func chainValidUntil(servingPEM, bundlePEM []byte, dnsName string, at time.Time) (time.Time, error) {
	if err := certs.VerifyServing(servingPEM, bundlePEM, dnsName, at); err != nil {
		return time.Time{}, err
	}
	leaf, _ := certs.ParseCert(servingPEM)
	cas, _ := certs.ParseCerts(bundlePEM)
	until := leaf.NotAfter
	best := time.Time{}
	for _, ca := range cas {
		if leaf.CheckSignatureFrom(ca) == nil && ca.NotAfter.After(best) {
			best = ca.NotAfter
		}
	}
	if best.Before(until) {
		until = best
	}
	return until, nil
}

// run passes until the clock reaches end, the pass budget is spent or a
// violation is found.
func (s *sim) run(end time.Time) { s.runUntil(end, nil) }

// runUntil runs as run does, and also stops after a pass that makes stop true.
func (s *sim) runUntil(end time.Time, stop func(Action) bool) {
	for s.now.Before(end) && (len(s.violations) == 0 || s.keepGoing) {
		if s.passes >= s.maxPasses {
			s.stopReason = fmt.Sprintf("pass budget of %d spent at +%s", s.maxPasses, s.sinceStart())
			return
		}
		a := s.pass()
		if s.active != nil && !s.now.Before(s.active.Cert.NotAfter) {
			s.violate("the active CA expired at %s", s.active.Cert.NotAfter.UTC().Format(time.RFC3339))
		}
		s.wake = slices.DeleteFunc(s.wake, func(t time.Time) bool { return !t.After(s.now) })
		if len(s.wake) == 0 {
			s.violate("stalled: the planner waits for an event that never comes (last action %v)", Plan(s.observe()))
			return
		}
		next := slices.MinFunc(s.wake, func(a, b time.Time) int { return a.Compare(b) })
		if s.rng.Float64() < s.spurious {
			// A resync or an unrelated event: an extra pass in between.
			next = s.now.Add(time.Duration(s.rng.Int63n(int64(next.Sub(s.now))) + 1))
		}
		if next.After(end) {
			next = end
		}
		s.checkServed(s.now, next)
		s.now = next
		if stop != nil && stop(a) {
			return
		}
	}
}

// sleep stops the operator until t: nothing is written, pods keep
// serving. If reads fail at t, the checks resume once they succeed again.
func (s *sim) sleep(t time.Time) {
	s.now = t
	s.wake = append(s.wake[:0], t)
	if len(s.pods) > 1 && !s.now.Before(s.rolloutDone) {
		s.pods = s.pods[len(s.pods)-1:]
	}
	s.outage = !s.verifies()
	s.sleptUntil = t
}

// writesPerCA counts the Secret writes of each CA generation: from the
// write that created a CA (IssueInitial or StartCARotation) to the write
// that created the next one.
// It also counts the disturbances (see TestPlanPropertiesDisturbed) in
// that generation and the one before: a manual serving request made in
// one generation may be carried out in the next.
func (s *sim) writesPerCA() (writes, disturbances []int) {
	var starts []time.Time
	for _, w := range s.writes {
		if w.newCA {
			writes = append(writes, 0)
			starts = append(starts, w.at)
		}
		if len(writes) > 0 {
			writes[len(writes)-1]++
		}
	}
	for i := range starts {
		n := 0
		for _, d := range s.disturbed {
			if (i == 0 || !d.Before(starts[max(i-1, 0)])) && (i+1 == len(starts) || d.Before(starts[i+1])) {
				n++
			}
		}
		disturbances = append(disturbances, n)
	}
	return writes, disturbances
}

func (s *sim) count(secret string) int {
	n := 0
	for _, w := range s.writes {
		if w.secret == secret {
			n++
		}
	}
	return n
}

func (s *sim) summary() string {
	return fmt.Sprintf("policy{ca %s, serving %s, renewBefore %s} overlap %s: %d passes, %d CAs created, %d CA writes, %d serving writes, actions %v, reasons %v",
		s.policy.CALifetime, s.policy.ServingLifetime, s.policy.RenewBefore, s.overlap, s.passes, len(s.cas), s.count("ca"), s.count("serving"), s.actions, s.reasons)
}
