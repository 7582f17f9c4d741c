package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// appendAudit appends one ResponseComplete audit event of the operator
// writing secret ns/name, received at received.
func appendAudit(t *testing.T, path, verb, ns, name string, received time.Time) {
	t.Helper()
	line, err := json.Marshal(map[string]any{
		"stage": "ResponseComplete", "verb": verb, "user": map[string]string{"username": operatorUser},
		"objectRef":                map[string]string{"resource": "secrets", "namespace": ns, "name": name},
		"requestURI":               "/api/v1/namespaces/" + ns + "/secrets/" + name,
		"requestReceivedTimestamp": received.Format(time.RFC3339Nano),
		"stageTimestamp":           received.Add(time.Millisecond).Format(time.RFC3339Nano),
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
}

// The watch can see a renewed certificate before the API server has
// written the renewal's audit event (it writes it after answering): P2
// failed a loaded make test with "no renewal write found in the audit log".
func TestRenewalDelaysWaitsForTheAuditLogToCatchUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	issued := time.Now().Truncate(time.Second)
	appendAudit(t, path, "create", "p2-00", "serving", issued.Add(100*time.Millisecond))
	b := &bench{sz: sizes{p2Rotations: 1, p2RenewBefore: 14 * time.Second}, audit: newAuditLog(path, operatorUser)}
	seen := map[string][]servingCert{"p2-00": {
		{fingerprint: "old", notAfter: issued.Add(20 * time.Second), seen: issued.Add(200 * time.Millisecond)},
		{fingerprint: "new", notAfter: issued.Add(26 * time.Second), seen: issued.Add(6200 * time.Millisecond)},
	}}
	due := issued.Add(6 * time.Second)

	// Not in the log yet when P2 looks, in the log 300 ms later.
	written := make(chan struct{})
	go func() {
		defer close(written)
		time.Sleep(300 * time.Millisecond)
		appendAudit(t, path, "patch", "p2-00", "serving", due.Add(40*time.Millisecond))
	}()
	delays, err := b.renewalDelays(0, seen, "serving", 10*time.Second)
	<-written
	if err != nil {
		t.Fatal(err)
	}
	if len(delays) != 1 || delays[0] != 40*time.Millisecond {
		t.Fatalf("delays %v, want the renewal written 40ms after due", delays)
	}
}

func TestRenewalDelaysGivesUpAfterItsWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	issued := time.Now().Truncate(time.Second)
	appendAudit(t, path, "create", "p2-00", "serving", issued)
	b := &bench{sz: sizes{p2Rotations: 1, p2RenewBefore: 14 * time.Second}, audit: newAuditLog(path, operatorUser)}
	seen := map[string][]servingCert{"p2-00": {
		{notAfter: issued.Add(20 * time.Second), seen: issued.Add(100 * time.Millisecond)},
		{notAfter: issued.Add(26 * time.Second), seen: issued.Add(6100 * time.Millisecond)},
	}}
	delays, err := b.renewalDelays(0, seen, "serving", 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(delays) != 0 {
		t.Fatalf("delays %v: the initial create is not a renewal", delays)
	}
}
