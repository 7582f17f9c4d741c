package runner

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hookwright/hookwright/internal/testcluster"
)

// auditEvent is the test ground's audit event (who did what to which
// object, when received and completed), with the benchmark's own notion of
// a write: dry runs are counted apart.
type auditEvent struct{ testcluster.AuditEvent }

// isWrite: a request that changes stored state. Dry runs are counted apart
// (dryRun): the server does the work but stores nothing.
func (e *auditEvent) isWrite() bool {
	switch e.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return !e.dryRun()
	}
	return false
}

func (e *auditEvent) dryRun() bool { return strings.Contains(e.RequestURI, "dryRun=") }

// resource names the object kind of the request, with its subresource.
func (e *auditEvent) resource() string {
	r := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		r += "/" + e.ObjectRef.Subresource
	}
	return r
}

// auditLog follows the API server's audit log, keeping the completed
// requests of the users the benchmark counts.
type auditLog struct {
	path  string
	users map[string]bool

	mu     sync.Mutex
	offset int64
	events []auditEvent // ResponseComplete events of users, in log order
	total  int          // every ResponseComplete event, any user
}

func newAuditLog(path string, users ...string) *auditLog {
	a := &auditLog{path: path, users: map[string]bool{}}
	for _, u := range users {
		a.users[u] = true
	}
	return a
}

// sync reads what was appended since the last call.
func (a *auditLog) sync() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := os.Open(a.path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if info, err := f.Stat(); err == nil && info.Size() < a.offset {
		return fmt.Errorf("the audit log %s shrank (rotated?): %d bytes, read up to %d", a.path, info.Size(), a.offset)
	}
	if _, err := f.Seek(a.offset, 0); err != nil {
		return err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) == 0 || line[len(line)-1] != '\n' {
			break // a partial last line is read next time
		}
		a.offset += int64(len(line))
		if !strings.Contains(string(line[:min(len(line), 400)]), `"stage":"ResponseComplete"`) {
			if err != nil {
				break
			}
			continue
		}
		a.total++
		var e auditEvent
		if a.mentionsUser(line) && json.Unmarshal(line, &e) == nil && e.Stage == "ResponseComplete" && a.users[e.User.Username] {
			a.events = append(a.events, e)
		}
		if err != nil {
			break
		}
	}
	return nil
}

// mentionsUser is a cheap filter before decoding a line.
func (a *auditLog) mentionsUser(line []byte) bool {
	for u := range a.users {
		if strings.Contains(string(line), `"username":"`+u+`"`) {
			return true
		}
	}
	return false
}

// mark is a position in the log: events after it are new.
func (a *auditLog) mark() (int, error) {
	if err := a.sync(); err != nil {
		return 0, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.events), nil
}

// since returns the events of user appended after mark.
func (a *auditLog) since(mark int, user string) ([]auditEvent, error) {
	if err := a.sync(); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []auditEvent
	for _, e := range a.events[mark:] {
		if e.User.Username == user {
			out = append(out, e)
		}
	}
	return out, nil
}

// waitQuiet waits until user made no write and no dry run for quiet, up
// to limit, and returns the events since mark. Dry runs count as activity:
// a verification's confirmation is a dry run that writes nothing when it
// agrees, and comes after the last write.
func (a *auditLog) waitQuiet(mark int, user string, quiet, limit time.Duration) ([]auditEvent, error) {
	deadline := time.Now().Add(limit)
	lastCount, lastChange := -1, time.Now()
	for {
		events, err := a.since(mark, user)
		if err != nil {
			return nil, err
		}
		if n := activityOf(events); n != lastCount {
			lastCount, lastChange = n, time.Now()
		}
		if time.Since(lastChange) >= quiet || time.Now().After(deadline) {
			return events, nil
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// receivedBy keeps the events of requests the API server received by t.
func receivedBy(events []auditEvent, t time.Time) []auditEvent {
	var out []auditEvent
	for _, e := range events {
		if !e.Received.After(t) {
			out = append(out, e)
		}
	}
	return out
}

// requestLine tells one request of a timeline that starts at from: when
// it was received, what it was, how long the API server took, its answer.
func requestLine(e auditEvent, from time.Time) string {
	dry := ""
	if e.dryRun() {
		dry = " (dry run)"
	}
	return fmt.Sprintf("+%s %s %s %s%s (%s, HTTP %d)",
		ms(e.Received.Sub(from).Seconds()), e.Verb, e.resource(), e.ObjectRef.Name, dry, ms(e.Completed.Sub(e.Received).Seconds()), e.ResponseStatus.Code)
}

// namespaceTimeline lists, in the order the API server received them, the
// requests about the bench's install in namespace ns: its namespace's
// objects, its CRDs and their objects (a verification's lists and dry
// runs), each timed from from.
func namespaceTimeline(events []auditEvent, ns string, from time.Time) []string {
	var mine []auditEvent
	for _, e := range events {
		switch {
		case e.Verb == "watch":
		case e.ObjectRef.Namespace == ns,
			e.ObjectRef.APIGroup == groupOf(ns),
			e.ObjectRef.Resource == "customresourcedefinitions" && strings.HasSuffix(e.ObjectRef.Name, "."+groupOf(ns)):
			mine = append(mine, e)
		}
	}
	sort.SliceStable(mine, func(i, j int) bool { return mine[i].Received.Before(mine[j].Received) })
	lines := make([]string, 0, len(mine))
	for _, e := range mine {
		lines = append(lines, requestLine(e, from))
	}
	return lines
}

// activityOf counts what waitQuiet waits to end: writes and dry runs.
func activityOf(events []auditEvent) int { return len(writesOf(events)) + dryRunsOf(events) }

func writesOf(events []auditEvent) []auditEvent {
	var out []auditEvent
	for _, e := range events {
		if e.isWrite() {
			out = append(out, e)
		}
	}
	return out
}

func dryRunsOf(events []auditEvent) int {
	n := 0
	for _, e := range events {
		if e.dryRun() {
			n++
		}
	}
	return n
}

// breakdown counts events by "verb resource", largest first.
func breakdown(events []auditEvent) string {
	count := kindCounts(events)
	var parts []string
	for _, k := range largestFirst(count) {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, count[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// kindCounts counts events by "<verb> <resource>".
func kindCounts(events []auditEvent) map[string]int {
	count := map[string]int{}
	for _, e := range events {
		count[e.Verb+" "+e.resource()]++
	}
	return count
}

// largestFirst lists count's keys, the largest count first, then by name.
func largestFirst(count map[string]int) []string {
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if count[keys[i]] != count[keys[j]] {
			return count[keys[i]] > count[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

// busyTime is the union of the requests' in-flight intervals at the API
// server: how much of a window the server spent serving this user.
func busyTime(events []auditEvent) time.Duration {
	type span struct{ a, b time.Time }
	spans := make([]span, 0, len(events))
	for _, e := range events {
		if e.Verb != "watch" && !e.Completed.Before(e.Received) && !e.Received.IsZero() {
			spans = append(spans, span{e.Received, e.Completed})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].a.Before(spans[j].a) })
	var total time.Duration
	var cur span
	for i, s := range spans {
		if i == 0 || s.a.After(cur.b) {
			if i > 0 {
				total += cur.b.Sub(cur.a)
			}
			cur = s
			continue
		}
		if s.b.After(cur.b) {
			cur.b = s.b
		}
	}
	if len(spans) > 0 {
		total += cur.b.Sub(cur.a)
	}
	return total
}
