package runner

import (
	"math"
	"testing"
	"time"
)

var heldT0 = time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)

// request is an audit event received at from (ms after heldT0) and
// completed at to.
func request(verb, resource, name, uri string, from, to float64) auditEvent {
	var e auditEvent
	e.Verb, e.ObjectRef.Resource, e.ObjectRef.Name, e.RequestURI = verb, resource, name, uri
	if resource != "customresourcedefinitions" && resource != "secrets" {
		e.ObjectRef.APIGroup = "operators.hookwright.dev"
	}
	e.Received = heldT0.Add(time.Duration(from * float64(time.Millisecond)))
	e.Completed = heldT0.Add(time.Duration(to * float64(time.Millisecond)))
	return e
}

func probeCRDWrite(crd string, from, to float64) auditEvent {
	return request("patch", "customresourcedefinitions", crd, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+crd, from, to)
}

func probeCRDRead(crd string, from, to float64) auditEvent {
	return request("get", "customresourcedefinitions", crd, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+crd, from, to)
}

func probeDryRun(resource string, from, to float64) auditEvent {
	return request("create", resource, "", "/apis/operators.hookwright.dev/v2/"+resource+"?dryRun=All", from, to)
}

// The storm's note says which requests held the operator's workers: by
// kind, largest first, the probes' requests apart from the installs',
// watches left out.
func TestHeldByKindSumsTimeInFlightPerKind(t *testing.T) {
	events := []auditEvent{
		request("get", "secrets", "ca", "/api/v1/namespaces/a/secrets/ca", 0, 10),
		request("get", "secrets", "serving", "/api/v1/namespaces/a/secrets/serving", 5, 25),
		probeCRDWrite("trustprobes2.operators.hookwright.dev", 0, 15),
		request("patch", "customresourcedefinitions", "widgets.example.com", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com", 0, 5),
		probeDryRun("trustprobes2", 20, 120),
		request("watch", "secrets", "", "/api/v1/secrets?watch=true", 0, 600000),
	}
	kinds, total := heldByKind(events)
	want := []heldKind{
		{Kind: "create the probe CRDs' objects (dry run) [trust probe]", Count: 1, Held: 100 * time.Millisecond},
		{Kind: "get secrets", Count: 2, Held: 30 * time.Millisecond},
		{Kind: "patch customresourcedefinitions [trust probe]", Count: 1, Held: 15 * time.Millisecond},
		{Kind: "patch customresourcedefinitions", Count: 1, Held: 5 * time.Millisecond},
	}
	if len(kinds) != len(want) {
		t.Fatalf("kinds = %+v, want %+v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Errorf("kind %d = %+v, want %+v", i, kinds[i], want[i])
		}
	}
	if total != 150*time.Millisecond {
		t.Errorf("total = %s, want 150ms (the watch is not a round trip)", total)
	}
}

// A probe's wait for the API server to load its write runs from the write
// to the end of the last dry run before the CRD's next write or read; the
// probe CRDs are followed apart, and requests of other CRDs ignored.
func TestProbeLoadsTimesEachWriteUntilItsLastDryRun(t *testing.T) {
	const one, two = "trustprobes.operators.hookwright.dev", "trustprobes2.operators.hookwright.dev"
	events := []auditEvent{
		// A probe on the first CRD: read, write idle, 3 dry runs, write the
		// target, 2 dry runs, read.
		probeCRDRead(one, 0, 5),
		probeCRDWrite(one, 10, 20),
		probeDryRun("trustprobes", 25, 60),
		probeDryRun("trustprobes", 70, 100),
		probeDryRun("trustprobes", 110, 210),
		probeCRDWrite(one, 220, 230),
		// Meanwhile a probe on the second CRD: its write with one dry run,
		// listed out of order (the audit log lists requests as they end).
		probeDryRun("trustprobes2", 150, 190),
		probeCRDWrite(two, 100, 110),
		probeDryRun("trustprobes", 240, 300),
		probeDryRun("trustprobes", 310, 520),
		probeCRDRead(one, 530, 540),
		// An install's CRD and its dry runs are no probe's.
		request("patch", "customresourcedefinitions", "widgets.example.com", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com", 0, 5),
		request("create", "widgets", "", "/apis/example.com/v2/namespaces/a/widgets?dryRun=All", 10, 900),
		// A write the probe gave up on before any dry run is no wait.
		probeCRDWrite(two, 600, 610),
		probeCRDRead(two, 620, 630),
	}
	got := probeLoads(events)
	// Waits: 10 → 210 (200 ms), 220 → 520 (300 ms), 100 → 190 (90 ms).
	if got.Phases != 3 {
		t.Fatalf("phases = %d, want 3 (%+v)", got.Phases, got)
	}
	if math.Abs(got.P50-0.200) > 1e-9 || math.Abs(got.P90-0.300) > 1e-9 {
		t.Errorf("p50 / p90 = %v / %v s, want 0.2 / 0.3", got.P50, got.P90)
	}
	if math.Abs(got.DryRuns-2) > 1e-9 {
		t.Errorf("dry runs per wait = %v, want 2 (6 over 3 waits)", got.DryRuns)
	}
}
