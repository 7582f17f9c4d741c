package faults_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/internal/harness"
)

var errCrashed = errors.New("the operator crashed (fault injection)")

// crashAfter kills an operator right after its n-th successful write:
// from then on every write fails, as nothing runs in a dead process, and
// the test stops the operator. With n = 0 it only counts and logs writes.
type crashAfter struct {
	n       int
	mu      sync.Mutex
	writes  []string
	dead    bool
	crashed chan struct{}
}

func newCrashAfter(n int) *crashAfter { return &crashAfter{n: n, crashed: make(chan struct{})} }

func (c *crashAfter) write(what string, obj client.Object, do func() error) error {
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
		c.writes = append(c.writes, fmt.Sprintf("%s %T %s", what, obj, klog.KObj(obj)))
		if len(c.writes) == c.n {
			c.dead = true
			close(c.crashed)
		}
	}
	return err
}

func (c *crashAfter) log() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.writes...)
}

// crashingClient routes every write of the reconciler through crashAfter.
type crashingClient struct {
	client.Client
	crash *crashAfter
}

func (c crashingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.crash.write("create", obj, func() error { return c.Client.Create(ctx, obj, opts...) })
}

func (c crashingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.crash.write("update", obj, func() error { return c.Client.Update(ctx, obj, opts...) })
}

func (c crashingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.crash.write("patch", obj, func() error { return c.Client.Patch(ctx, obj, patch, opts...) })
}

func (c crashingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.crash.write("delete", obj, func() error { return c.Client.Delete(ctx, obj, opts...) })
}

func (c crashingClient) Status() client.SubResourceWriter {
	return crashingStatus{SubResourceWriter: c.Client.Status(), crash: c.crash}
}

type crashingStatus struct {
	client.SubResourceWriter
	crash *crashAfter
}

func (c crashingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return c.crash.write("status-update", obj, func() error { return c.SubResourceWriter.Update(ctx, obj, opts...) })
}

func (c crashingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return c.crash.write("status-patch", obj, func() error { return c.SubResourceWriter.Patch(ctx, obj, patch, opts...) })
}

// startOperator runs an operator whose writes go through crash.
func startOperator(crash *crashAfter) *harness.Operator {
	GinkgoHelper()
	op, err := harness.StartOperator(cluster.Config, GinkgoLogr.WithName("operator"),
		harness.WithClient(func(c client.Client) client.Client { return crashingClient{Client: c, crash: crash} }))
	Expect(err).NotTo(HaveOccurred())
	return op
}

// runUntilCrash runs an operator that dies after its n-th write, until it
// does (true) or until done holds without a crash (false: fewer writes
// were needed this time).
func runUntilCrash(ctx context.Context, n int, done func(Gomega)) bool {
	GinkgoHelper()
	crash := newCrashAfter(n)
	op := startOperator(crash)
	defer func() { Expect(op.Stop()).To(Succeed()) }()
	crashed := false
	Eventually(func(g Gomega) {
		select {
		case <-crash.crashed:
			crashed = true
			return
		default:
		}
		done(g)
	}, 2*time.Minute, 50*time.Millisecond).Should(Succeed())
	if crashed {
		GinkgoWriter.Printf("crashed after write %d: %s\n", n, crash.log()[n-1])
	}
	return crashed
}

// recordWrites runs a healthy operator until done holds and returns the
// writes it made: the crash points of the matrix.
func recordWrites(ctx context.Context, done func(Gomega)) []string {
	GinkgoHelper()
	crash := newCrashAfter(0)
	op := startOperator(crash)
	Eventually(done, 2*time.Minute, 50*time.Millisecond).Should(Succeed())
	Expect(op.Stop()).To(Succeed())
	return crash.log()
}

var _ = Describe("Crashing the operator after every write", func() {
	It("converges an install after a crash at each point, without a failed read", func(ctx context.Context) {
		f := newFixture(ctx)
		Expect(k8s.Create(ctx, f.install())).To(Succeed())
		points := recordWrites(ctx, func(g Gomega) { f.settled(ctx, g) })
		AddReportEntry("install writes (crash points)", points, ReportEntryVisibilityAlways)
		Expect(len(points)).To(BeNumerically(">=", 6), "certificates, workloads, claim, conversion and status at least")
		f.expectNoFailedReads("recording run")

		for n := 1; n <= len(points); n++ {
			By(fmt.Sprintf("crashing after write %d of %d (%s), then restarting", n, len(points), points[n-1]))
			f := newFixture(ctx)
			Expect(k8s.Create(ctx, f.install())).To(Succeed())
			runUntilCrash(ctx, n, func(g Gomega) { f.settled(ctx, g) })
			op := startOperator(newCrashAfter(0))
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
		op := startOperator(newCrashAfter(0))
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
		points := recordWrites(ctx, rotated("ca: recording run"))
		AddReportEntry("CA rotation writes (crash points)", points, ReportEntryVisibilityAlways)
		Expect(len(points)).To(BeNumerically(">=", 4), "new CA, bundle, promote, prune at least")

		for n := 1; n <= len(points); n++ {
			request := fmt.Sprintf("ca: crash after write %d", n)
			By(fmt.Sprintf("rotating the CA, crashing after write %d of %d (%s), then restarting", n, len(points), points[n-1]))
			f.requestRotation(ctx, request)
			runUntilCrash(ctx, n, rotated(request))
			op := startOperator(newCrashAfter(0))
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
