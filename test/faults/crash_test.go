package faults_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/internal/harness"
)

var errCrashed = errors.New("the operator crashed (fault injection)")

// crashPoint names one write of an operator run the same way in every
// fixture (the fixture's namespace reads <ns>), with its occurrence: the
// second status update of the install is {"status-update ... <ns>/widgets", 2}.
type crashPoint struct {
	write string
	nth   int
}

func (p crashPoint) String() string {
	if p.nth == 1 {
		return p.write
	}
	return fmt.Sprintf("%s (#%d)", p.write, p.nth)
}

// crashAfter kills an operator right after a given successful write (its
// client's or its Event sink's): from then on every write fails, as
// nothing runs in a dead process, and the test stops the operator. With
// no crash point it only records the writes.
type crashAfter struct {
	at      *crashPoint
	ns      string
	crashed chan struct{}

	mu     sync.Mutex
	writes []crashPoint
	seen   map[string]int
	dead   bool
	// Events the reconciler emitted and those written, per isomorphic key
	// (events.k8s.io: the first is created, the second patches the
	// series; later ones only count until the series is flushed minutes
	// later).
	emitted, written map[eventKey]int
}

func newCrashAfter(ns string, at *crashPoint) *crashAfter {
	return &crashAfter{at: at, ns: ns, crashed: make(chan struct{}), seen: map[string]int{},
		emitted: map[eventKey]int{}, written: map[eventKey]int{}}
}

func (c *crashAfter) write(what string, do func() error) error {
	what = strings.ReplaceAll(what, c.ns, "<ns>")
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return errCrashed
	}
	c.mu.Unlock()
	err := do()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.seen[what]++
		point := crashPoint{write: what, nth: c.seen[what]}
		c.writes = append(c.writes, point)
		if c.at != nil && point == *c.at && !c.dead {
			c.dead = true
			close(c.crashed)
		}
	}
	return err
}

// readOnly runs a request that persists nothing, unless the operator is
// already dead.
func (c *crashAfter) readOnly(do func() error) error {
	c.mu.Lock()
	dead := c.dead
	c.mu.Unlock()
	if dead {
		return errCrashed
	}
	return do()
}

func (c *crashAfter) log() []crashPoint {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]crashPoint(nil), c.writes...)
}

// unwrittenEvents lists the Events emitted whose write has not happened yet.
func (c *crashAfter) unwrittenEvents() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var pending []string
	for key, n := range c.emitted {
		if c.written[key] < min(n, 2) {
			pending = append(pending, fmt.Sprintf("%s %s %s/%s", key.reason, key.regarding.Kind, key.regarding.Namespace, key.regarding.Name))
		}
	}
	return pending
}

func objWrite(verb string, obj client.Object) string {
	name := obj.GetName()
	if name == "" {
		name = obj.GetGenerateName() + "*"
	}
	return fmt.Sprintf("%s %T %s", verb, obj, klog.KRef(obj.GetNamespace(), name))
}

// crashingClient routes every write of the reconciler through crashAfter.
type crashingClient struct {
	client.Client
	crash *crashAfter
}

func (c crashingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if isDryRun(opts) {
		// A dry run persists nothing, so crashing right after one is the
		// same as crashing before the next write: not a crash point. How
		// many verification dry runs a pass makes depends on timing, which
		// made a recorded point (the n-th dry run) unreachable in a replay.
		return c.crash.readOnly(func() error { return c.Client.Create(ctx, obj, opts...) })
	}
	return c.crash.write(objWrite("create", obj), func() error { return c.Client.Create(ctx, obj, opts...) })
}

func isDryRun(opts []client.CreateOption) bool {
	var o client.CreateOptions
	o.ApplyOptions(opts)
	return len(o.DryRun) > 0
}

func (c crashingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.crash.write(objWrite("update", obj), func() error { return c.Client.Update(ctx, obj, opts...) })
}

func (c crashingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.crash.write(objWrite("patch", obj), func() error { return c.Client.Patch(ctx, obj, patch, opts...) })
}

func (c crashingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.crash.write(objWrite("delete", obj), func() error { return c.Client.Delete(ctx, obj, opts...) })
}

func (c crashingClient) Status() client.SubResourceWriter {
	return crashingStatus{SubResourceWriter: c.Client.Status(), crash: c.crash}
}

type crashingStatus struct {
	client.SubResourceWriter
	crash *crashAfter
}

func (c crashingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return c.crash.write(objWrite("status-update", obj), func() error { return c.SubResourceWriter.Update(ctx, obj, opts...) })
}

func (c crashingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return c.crash.write(objWrite("status-patch", obj), func() error { return c.SubResourceWriter.Patch(ctx, obj, patch, opts...) })
}

// eventKey is what events.k8s.io's broadcaster groups Events into a series
// by (the reporting controller and instance are the same for all).
type eventKey struct {
	eventType, reason, action string
	regarding, related        corev1.ObjectReference
}

func keyOf(e *eventsv1.Event) eventKey {
	key := eventKey{eventType: e.Type, reason: e.Reason, action: e.Action, regarding: e.Regarding}
	if e.Related != nil {
		key.related = *e.Related
	}
	return key
}

// crashingSink routes every Event write (create, or patch of a series)
// through crashAfter: an Event write is a crash point like any other.
type crashingSink struct {
	sink  events.EventSink
	crash *crashAfter
}

func eventWrite(verb string, e *eventsv1.Event) string {
	what := fmt.Sprintf("event-%s %s %s %s %s", verb, e.Type, e.Reason, e.Regarding.Kind, klog.KRef(e.Regarding.Namespace, e.Regarding.Name))
	if e.Related != nil {
		what += fmt.Sprintf(" (related %s %s)", e.Related.Kind, klog.KRef(e.Related.Namespace, e.Related.Name))
	}
	return what
}

func (s crashingSink) record(verb string, e *eventsv1.Event, do func() (*eventsv1.Event, error)) (*eventsv1.Event, error) {
	var out *eventsv1.Event
	err := s.crash.write(eventWrite(verb, e), func() error {
		var err error
		out, err = do()
		return err
	})
	// An Event created concurrently by the same series is written too.
	if err == nil || (verb == "create" && apierrors.IsAlreadyExists(err)) {
		s.crash.mu.Lock()
		s.crash.written[keyOf(e)]++
		s.crash.mu.Unlock()
	}
	return out, err
}

func (s crashingSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return s.record("create", e, func() (*eventsv1.Event, error) { return s.sink.Create(ctx, e) })
}

func (s crashingSink) Update(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return s.record("update", e, func() (*eventsv1.Event, error) { return s.sink.Update(ctx, e) })
}

func (s crashingSink) Patch(ctx context.Context, e *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	return s.record("patch", e, func() (*eventsv1.Event, error) { return s.sink.Patch(ctx, e, data) })
}

// emittingRecorder counts the Events the reconciler emits, so a recording
// run can wait until each is written.
type emittingRecorder struct {
	events.EventRecorder
	crash  *crashAfter
	scheme *runtime.Scheme
}

func (r emittingRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	// The references as the recorder takes them, before this call returns.
	if ref, err := reference.GetReference(r.scheme, regarding); err == nil {
		key := eventKey{eventType: eventtype, reason: reason, action: action, regarding: *ref}
		if related != nil {
			if rel, err := reference.GetReference(r.scheme, related); err == nil {
				key.related = *rel
			}
		}
		r.crash.mu.Lock()
		r.crash.emitted[key]++
		r.crash.mu.Unlock()
	}
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// startOperator runs an operator whose writes, Events included, go through crash.
func startOperator(crash *crashAfter) *harness.Operator {
	GinkgoHelper()
	scheme := harness.Scheme()
	op, err := harness.StartOperator(cluster.Config, GinkgoLogr.WithName("operator"),
		harness.WithClient(func(c client.Client) client.Client { return crashingClient{Client: c, crash: crash} }),
		harness.WithEventSink(func(s events.EventSink) events.EventSink { return crashingSink{sink: s, crash: crash} }),
		harness.WithRecorder(func(r events.EventRecorder) events.EventRecorder {
			return emittingRecorder{EventRecorder: r, crash: crash, scheme: scheme}
		}))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(op.Stop) // a failed spec leaves no operator behind
	return op
}

// runUntilCrash runs an operator in the fixture's namespace ns that dies
// right after the write at. It reports false when the run finished (done
// holds, every Event written) without making that write: which writes a
// run makes can depend on timing (how many passes a rollout takes), so the
// caller runs that point again. A point never reached tests nothing.
func runUntilCrash(ns string, at crashPoint, done func(Gomega)) (reached bool) {
	GinkgoHelper()
	crash := newCrashAfter(ns, &at)
	op := startOperator(crash)
	defer func() { Expect(op.Stop()).To(Succeed()) }()
	Eventually(func(g Gomega) {
		select {
		case <-crash.crashed:
			reached = true
			return
		default:
		}
		done(g)
		g.Expect(crash.unwrittenEvents()).To(BeEmpty(), "Events emitted, not written yet")
	}, 2*time.Minute, 50*time.Millisecond).Should(Succeed(), func() string {
		return fmt.Sprintf("crash point %q: the run neither reached it nor finished; the operator wrote:\n%s", at, formatWrites(crash.log()))
	})
	if !reached {
		// A write still in flight as the run finished counts too.
		select {
		case <-crash.crashed:
			reached = true
		case <-time.After(2 * time.Second):
		}
	}
	if reached {
		GinkgoWriter.Printf("crashed after %s (write %d of this run)\n", at, len(crash.log()))
	} else {
		GinkgoWriter.Printf("finished without reaching %s; the operator wrote:\n%s", at, formatWrites(crash.log()))
	}
	return reached
}

// triesPerPoint bounds the runs spent reaching one crash point.
const triesPerPoint = 3

// repeat: the point is not the first write of its kind in a run (the
// n-th status update for n > 1, or a patch of an Event series). How many
// of those a run makes depends on timing: a rollout seen in one pass more
// or less adds or drops a status update.
func (p crashPoint) repeat() bool {
	return p.nth > 1 || strings.HasPrefix(p.write, "event-patch ") || strings.HasPrefix(p.write, "event-update ")
}

// crashAt makes runs (run reports whether it crashed at p) until one
// crashes at p. The recording run's n-th write of a kind may be one
// more than a replay makes however often it runs (seen: a CA rotation
// recorded with seven status updates, replayed with six three times), so
// a repeat point no run reached is reported and skipped: the first write
// of its kind and the write before it are points of their own. The first
// write of a kind must be reached.
func crashAt(p crashPoint, run func(try int) bool) {
	GinkgoHelper()
	for try := 1; try <= triesPerPoint; try++ {
		if run(try) {
			return
		}
	}
	Expect(p.repeat()).To(BeTrue(), "crash point %q not reached in %d runs", p, triesPerPoint)
	AddReportEntry("crash point not reached (a repeat write this timing did not make)",
		fmt.Sprintf("%s: in none of %d runs", p, triesPerPoint), ReportEntryVisibilityAlways)
}

// recordWrites runs a healthy operator in the fixture's namespace ns until
// done holds and every Event it emitted is written, and returns its
// writes: the crash points of the matrix.
func recordWrites(ns string, done func(Gomega)) []crashPoint {
	GinkgoHelper()
	crash := newCrashAfter(ns, nil)
	op := startOperator(crash)
	Eventually(func(g Gomega) {
		done(g)
		g.Expect(crash.unwrittenEvents()).To(BeEmpty(), "Events emitted, not written yet")
	}, 2*time.Minute, 50*time.Millisecond).Should(Succeed())
	Expect(op.Stop()).To(Succeed())
	return crash.log()
}

func formatWrites(points []crashPoint) string {
	var b strings.Builder
	for i, p := range points {
		fmt.Fprintf(&b, "%3d %s\n", i+1, p)
	}
	return b.String()
}

// expectEventPoints checks that the matrix crashes after Event writes too.
func expectEventPoints(points []crashPoint) {
	GinkgoHelper()
	events := 0
	for _, p := range points {
		if strings.HasPrefix(p.write, "event-") {
			events++
		}
	}
	Expect(events).To(BeNumerically(">", 0), "no Event write among the crash points:\n%s", formatWrites(points))
}

var _ = Describe("Crashing the operator after every write", func() {
	It("converges an install after a crash at each point, without a failed read", func(ctx context.Context) {
		f := newFixture(ctx)
		Expect(k8s.Create(ctx, f.install())).To(Succeed())
		points := recordWrites(f.ns, func(g Gomega) { f.settled(ctx, g) })
		AddReportEntry("install writes (crash points)", formatWrites(points), ReportEntryVisibilityAlways)
		Expect(len(points)).To(BeNumerically(">=", 6), "certificates, workloads, claim, conversion and status at least")
		expectEventPoints(points)
		f.expectNoFailedReads("recording run")

		for n := 1; n <= len(points); n++ {
			By(fmt.Sprintf("crashing after write %d of %d (%s), then restarting", n, len(points), points[n-1]))
			var f *fixture
			crashAt(points[n-1], func(int) bool {
				f = newFixture(ctx)
				Expect(k8s.Create(ctx, f.install())).To(Succeed())
				return runUntilCrash(f.ns, points[n-1], func(g Gomega) { f.settled(ctx, g) })
			})
			op := startOperator(newCrashAfter(f.ns, nil))
			Eventually(func(g Gomega) {
				whi := f.settled(ctx, g)
				g.Expect(countRecords(whi, v1alpha1.RotationCA, "")).To(Equal(1), "one CA issued: %+v", whi.Status.Rotations)
				g.Expect(countRecords(whi, v1alpha1.RotationServing, "")).To(Equal(1), "one serving certificate issued: %+v", whi.Status.Rotations)
			}).Should(Succeed())
			Expect(op.Stop()).To(Succeed())
			f.expectNoFailedReads(fmt.Sprintf("install, crash after write %d", n))
		}
	})

	It("completes a CA rotation exactly once after a crash at each point, without a failed read", func(ctx context.Context) {
		f := newFixture(ctx)
		Expect(k8s.Create(ctx, f.install())).To(Succeed())
		op := startOperator(newCrashAfter(f.ns, nil))
		Eventually(func(g Gomega) { f.settled(ctx, g) }).Should(Succeed())
		Expect(op.Stop()).To(Succeed())

		rotated := func(request string) func(Gomega) {
			return func(g Gomega) {
				whi := f.settled(ctx, g)
				g.Expect(whi.Status.HandledRotationRequest).To(Equal(request))
				g.Expect(countRecords(whi, v1alpha1.RotationCA, request[len("ca: "):])).To(Equal(1), "%+v", whi.Status.Rotations)
			}
		}
		f.requestRotation(ctx, "ca: recording run")
		points := recordWrites(f.ns, rotated("ca: recording run"))
		AddReportEntry("CA rotation writes (crash points)", formatWrites(points), ReportEntryVisibilityAlways)
		Expect(len(points)).To(BeNumerically(">=", 4), "new CA, bundle, promote, prune at least")
		expectEventPoints(points)

		for n := 1; n <= len(points); n++ {
			By(fmt.Sprintf("rotating the CA, crashing after write %d of %d (%s), then restarting", n, len(points), points[n-1]))
			var request string
			crashAt(points[n-1], func(try int) bool {
				request = fmt.Sprintf("ca: crash after write %d, run %d", n, try)
				f.requestRotation(ctx, request)
				return runUntilCrash(f.ns, points[n-1], rotated(request))
			})
			op := startOperator(newCrashAfter(f.ns, nil))
			Eventually(rotated(request)).Should(Succeed())
			// Stay a moment: a request carried out twice would start again now.
			Consistently(rotated(request), 3*time.Second, 200*time.Millisecond).Should(Succeed())
			Expect(op.Stop()).To(Succeed())
		}
		f.expectNoFailedReads("CA rotations with crashes")
		whi := f.get(ctx)
		GinkgoWriter.Printf("rotation history: %+v\n", whi.Status.Rotations)
	})
})
