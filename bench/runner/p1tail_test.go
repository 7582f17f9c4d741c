package runner

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSliceRetriesExplainP1Tail(t *testing.T) {
	log := `I1128 20:01:02.100000   12345 endpointslice_controller.go:358] "Error syncing endpoint slices for service, retrying" logger="endpointslice-controller" key="p1-hw-001/webhook-service" err="EndpointSlice informer cache is out of date"
I1128 20:01:02.150000   12345 endpointslice_controller.go:310] "Finished syncing service endpoint slices" logger="endpointslice-controller" key="p1-hw-002/webhook-service" elapsed="2.1ms"
I1128 20:01:05.000000   12345 endpointslice_controller.go:358] "Error syncing endpoint slices for service, retrying" logger="endpointslice-controller" key="p1-floor-007/webhook-service" err="EndpointSlice informer cache is out of date"
`
	path := filepath.Join(t.TempDir(), "kube-controller-manager.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	retries, err := sliceRetries(path, 2026)
	if err != nil {
		t.Fatal(err)
	}
	if len(retries) != 2 || len(retries["p1-hw-001"]) != 1 || len(retries["p1-floor-007"]) != 1 {
		t.Fatalf("retries %v, want one for p1-hw-001 and one for p1-floor-007", retries)
	}
	at := func(clock string) time.Time {
		t.Helper()
		v, err := time.ParseInLocation("2006-01-02 15:04:05.000", "2026-11-28 "+clock, time.Local)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got, want := retries["p1-hw-001"][0], at("20:01:02.100"); !got.Equal(want) {
		t.Fatalf("retry logged at %v, want %v", got, want)
	}
	windows := map[string][2]time.Time{
		"p1-hw-001": {at("20:01:02.120"), at("20:01:03.150")}, // over the goal; its retry came due at 20:01:03.100, inside
		"p1-hw-002": {at("20:01:02.120"), at("20:01:02.170")}, // under the goal
		"p1-hw-003": {at("20:01:04.000"), at("20:01:04.900")}, // over the goal, no retry of its own
		"p1-hw-004": {at("20:01:06.000"), at("20:01:06.700")}, // over; p1-floor-007's retry is not its
	}
	retries["p1-hw-003"] = []time.Time{at("20:01:04.500")} // came due after its conversion worked
	over, retried := overAndRetried(windows, p1P99Goal, retries)
	if over != 3 || retried != 1 {
		t.Fatalf("over %d, retried %d; want 3 over the goal, 1 of them waiting on a retry", over, retried)
	}
}
