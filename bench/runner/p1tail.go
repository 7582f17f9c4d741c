package runner

import (
	"bufio"
	"os"
	"regexp"
	"time"
)

// P1's tail: kube-controller-manager's EndpointSlice controller.
//
// The operator points a CRD at its webhook only once the Service's
// EndpointSlices list a ready endpoint (pointing it sooner fails the
// conversions in between: the floor's failures). kube-controller-manager's
// EndpointSlice controller writes that, and when a sync finds its informer
// cache behind its own last write, it logs "Error syncing endpoint slices
// for service, retrying" and syncs the Service again only 1 s later
// (defaultSyncBackOff, kubernetes pkg/controller/endpointslice): the
// install then waits a second on the Service's endpoints, whoever points
// the CRD. The pod stand-in reports a pod running, then ready, in two
// status writes milliseconds apart, each a change the controller syncs.

// sliceRetryBackOff is the EndpointSlice controller's first retry delay.
const sliceRetryBackOff = time.Second

// p1P99Goal is P1's goal for the p99 of Deployment available → conversion working.
const p1P99Goal = 500 * time.Millisecond

// p1Tail counts, among the installs whose Deployment available →
// conversion working took longer than the p99 goal, those that waited on
// such a retry.
type p1Tail struct {
	Read                        bool // kube-controller-manager's log was read
	Over, OverRetried           int  // Hookwright's installs over the goal; those that waited on a retry
	FloorOver, FloorOverRetried int  // the same, the floor's
}

var sliceRetryLine = regexp.MustCompile(`^[IWE](\d{4} \d{2}:\d{2}:\d{2}\.\d{6}) .*"Error syncing endpoint slices for service, retrying".* key="([^"/]+)/[^"]*"`)

// sliceRetries reads the test ground's kube-controller-manager log; false
// (and a line in the run's log) when it cannot.
func (b *bench) sliceRetries() (map[string][]time.Time, bool) {
	retries, err := sliceRetries(b.cluster.ControllerManagerLog(), time.Now().Year())
	if err != nil {
		b.logf("P1: kube-controller-manager's log unread (%v): the tail goes unexplained", err)
		return nil, false
	}
	return retries, true
}

// sliceRetries reads a kube-controller-manager log (klog's text format)
// and returns, per namespace, when its EndpointSlice controller logged a
// retry of a Service there.
func sliceRetries(logPath string, year int) (map[string][]time.Time, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	out := map[string][]time.Time{}
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for scanner.Scan() {
		m := sliceRetryLine.FindStringSubmatch(scanner.Text())
		if m == nil {
			continue
		}
		at, err := time.ParseInLocation("0102 15:04:05.000000", m[1], time.Local)
		if err != nil {
			continue
		}
		out[m[2]] = append(out[m[2]], at.AddDate(year, 0, 0))
	}
	return out, scanner.Err()
}

// overAndRetried counts the windows (available, working) longer than
// limit, and those among them during which a retry logged for their
// namespace came due: a retry logged at t writes at t + 1 s.
func overAndRetried(windows map[string][2]time.Time, limit time.Duration, retries map[string][]time.Time) (over, retried int) {
	for ns, w := range windows {
		if w[1].Sub(w[0]) <= limit {
			continue
		}
		over++
		for _, t := range retries[ns] {
			if due := t.Add(sliceRetryBackOff); due.After(w[0]) && !due.After(w[1]) {
				retried++
				break
			}
		}
	}
	return over, retried
}
