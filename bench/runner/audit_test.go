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
