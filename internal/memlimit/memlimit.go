// Package memlimit gives the operator a soft memory limit below its
// container's hard one.
//
// The manager's memory limit is sized from make bench's peak, which is a
// burst: a restart reconciles every install at once, and most of what it
// allocates is garbage by the end of the pass. Go's collector, paced by
// GOGC alone, lets the heap grow to about twice what is live before it
// collects, so the peak grows with the garbage of a burst, and a cluster
// with more installs than the bench ran can push it past the limit: the
// kernel then kills the container (OOMKilled) in the middle of its
// restart, and the next restart does the same burst again. With a soft
// limit the runtime collects more often as the heap nears it
// (runtime/debug.SetMemoryLimit, https://go.dev/doc/gc-guide#Memory_limit),
// so only what is live has to fit under the hard limit.
package memlimit

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// EnvVar carries the container's memory limit, in bytes, as the manager's
// Deployment passes it through the downward API (resourceFieldRef
// limits.memory, config/manager/manager.yaml). A quantity such as 576Mi
// is accepted too, for a manager run by hand.
const EnvVar = "HOOKWRIGHT_MEMORY_LIMIT"

// SharePercent is the part of the container's limit the Go runtime may
// use. The rest is memory the runtime does not count against its limit:
// the resident pages of the binary itself (tens of MiB) and the kernel's
// own accounting of the process.
const SharePercent = 90

// FromEnv returns the soft limit to set, in bytes, and false when none
// applies: GOMEMLIMIT, set by an admin, wins (the runtime applied it at
// start); EnvVar unset or zero means no limit was given.
func FromEnv(getenv func(string) string) (int64, bool, error) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, false, nil
	}
	raw := getenv(EnvVar)
	if raw == "" {
		return 0, false, nil
	}
	q, err := resource.ParseQuantity(raw)
	if err != nil {
		return 0, false, fmt.Errorf("%s=%q is not a memory quantity (bytes, or a quantity such as 576Mi): %w", EnvVar, raw, err)
	}
	limit := q.Value()
	switch {
	case limit < 0:
		return 0, false, fmt.Errorf("%s=%q is negative: give the container's memory limit (bytes, or a quantity such as 576Mi)", EnvVar, raw)
	case limit == 0:
		return 0, false, nil
	}
	return Soft(limit), true, nil
}

// Soft is the soft limit for a container limited to limit bytes.
func Soft(limit int64) int64 {
	return limit / 100 * SharePercent
}
