package runner

import (
	"testing"
	"time"
)

// splitP1 takes each install's last CRD patch, last dry run and last
// status write; an install whose window lacks one, or whose status write
// came before its dry run was answered, has no split.
func TestSplitP1(t *testing.T) {
	start := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d * time.Millisecond) }
	req := func(verb, resource, sub, uri string, from, to time.Duration) auditEvent {
		var e auditEvent
		e.Verb, e.ObjectRef.Resource, e.ObjectRef.Subresource, e.RequestURI = verb, resource, sub, uri
		e.Received, e.Completed = at(from), at(to)
		return e
	}
	complete := []auditEvent{
		req("update", "webhookinstalls", "status", "/status", 1, 10), // an earlier pass's
		req("patch", "customresourcedefinitions", "", "/crd", 12, 20),
		req("list", "widgets", "", "/widgets", 24, 30),
		req("create", "widgets", "", "/widgets?dryRun=All", 24, 44),
		req("update", "webhookinstalls", "status", "/status", 46, 61),
	}
	unverified := []auditEvent{
		req("patch", "customresourcedefinitions", "", "/crd", 3, 9),
		req("update", "webhookinstalls", "status", "/status", 10, 20),
	}
	windows := map[string][2]time.Time{"a": {start, at(64)}, "b": {start, at(30)}}
	got := splitP1(windows, map[string][]auditEvent{"a": complete, "b": unverified})
	want := p1Split{Installs: 1, Reaction: 12 * time.Millisecond, Verified: 32 * time.Millisecond,
		ToStatus: 2 * time.Millisecond, Status: 15 * time.Millisecond, Seen: 3 * time.Millisecond}
	if got != want {
		t.Errorf("splitP1 = %+v, want %+v", got, want)
	}
}
