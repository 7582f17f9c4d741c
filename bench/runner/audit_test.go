package runner

import (
	"slices"
	"testing"
	"time"
)

// waitQuiet waits for the operator's writes and dry runs to end: a first
// verification's confirmation is a dry run that comes 2 s after the last
// write, and P4's dry-run and reconcile columns must include it. Reads
// are not activity: a quiet operator may still read.
func TestActivityCountsWritesAndDryRuns(t *testing.T) {
	event := func(verb, uri string) auditEvent {
		var e auditEvent
		e.Verb, e.RequestURI = verb, uri
		return e
	}
	events := []auditEvent{
		event("patch", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com?fieldManager=hookwright"),
		event("create", "/apis/example.com/v2/namespaces/a/widgets?dryRun=All"),
		event("get", "/apis/example.com/v2/namespaces/a/widgets/w"),
		event("list", "/apis/example.com/v2/namespaces/a/widgets"),
	}
	if got := activityOf(events); got != 2 {
		t.Errorf("activityOf = %d, want 2 (the patch and the dry-run create)", got)
	}
	if got := len(writesOf(events)); got != 1 {
		t.Errorf("writesOf: %d, want 1 (a dry run stores nothing)", got)
	}
}

// A storm whose wait stopped counts only the requests of its window: the
// rotations still under way go on writing while the audit log is read.
func TestReceivedByKeepsTheWindow(t *testing.T) {
	end := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	event := func(name string, at time.Time) auditEvent {
		var e auditEvent
		e.Verb, e.ObjectRef.Name, e.Received = "patch", name, at
		return e
	}
	events := []auditEvent{
		event("before", end.Add(-time.Second)),
		event("at the end", end),
		event("after", end.Add(time.Millisecond)),
	}
	var got []string
	for _, e := range receivedBy(events, end) {
		got = append(got, e.ObjectRef.Name)
	}
	if want := []string{"before", "at the end"}; !slices.Equal(got, want) {
		t.Errorf("receivedBy = %q, want %q", got, want)
	}
}

// An idle resync that writes names the install and what it did before the
// write: every request about that install (its namespace's objects, its
// CRDs, their objects), in the order received, and nothing of others.
func TestTraceWritersFollowsEachWritingInstall(t *testing.T) {
	start := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	event := func(ms int, verb, resource, group, ns, name, uri string) auditEvent {
		var e auditEvent
		e.Verb, e.RequestURI = verb, uri
		e.ObjectRef.Resource, e.ObjectRef.APIGroup, e.ObjectRef.Namespace, e.ObjectRef.Name = resource, group, ns, name
		e.Received = start.Add(time.Duration(ms) * time.Millisecond)
		e.Completed, e.ResponseStatus.Code = e.Received.Add(time.Millisecond), 200
		return e
	}
	events := []auditEvent{
		event(30, "update", "webhookinstalls", "operators.hookwright.dev", "a", "bench", "/status"),
		event(10, "get", "customresourcedefinitions", "apiextensions.k8s.io", "", "widgets.a.bench.test", ""),
		event(20, "create", "widgets", "a.bench.test", "a", "", "?dryRun=All"),
		event(15, "get", "customresourcedefinitions", "apiextensions.k8s.io", "", "widgets.b.bench.test", ""),
		event(40, "patch", "customresourcedefinitions", "apiextensions.k8s.io", "", "gadgets.c.bench.test", ""),
		event(50, "watch", "secrets", "", "a", "", ""),
	}
	traces := traceWriters(events, writesOf(events), start)
	if len(traces) != 2 || traces[0].Namespace != "a" || traces[1].Namespace != "c" {
		t.Fatalf("traced %+v, want the installs in a (a status write) and c (a CRD patch)", traces)
	}
	want := []string{
		"+10 ms get customresourcedefinitions widgets.a.bench.test (1.0 ms, HTTP 200)",
		"+20 ms create widgets  (dry run) (1.0 ms, HTTP 200)",
		"+30 ms update webhookinstalls bench (1.0 ms, HTTP 200)",
	}
	if !slices.Equal(traces[0].Lines, want) {
		t.Errorf("a's timeline:\n%q\nwant\n%q", traces[0].Lines, want)
	}
}
