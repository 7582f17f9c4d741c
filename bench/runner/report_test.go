package runner

import (
	"strings"
	"testing"
	"time"
)

func TestOverBudget(t *testing.T) {
	for _, tc := range []struct {
		name         string
		took, budget time.Duration
		over         bool
	}{
		{"within", 21 * time.Minute, 24 * time.Minute, false},
		{"exactly", 24 * time.Minute, 24 * time.Minute, false},
		{"over", 34*time.Minute + 31*time.Second, 24 * time.Minute, true},
		{"no budget recorded", time.Hour, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			note := overBudget(tc.took, tc.budget)
			if got := note != ""; got != tc.over {
				t.Fatalf("overBudget(%s, %s) = %q: over %v, want %v", tc.took, tc.budget, note, got, tc.over)
			}
			if tc.over && !strings.Contains(note, "over its "+tc.budget.String()+" budget") {
				t.Errorf("overBudget(%s, %s) = %q: does not name the budget", tc.took, tc.budget, note)
			}
		})
	}
}

func TestMarkdownHeaderSaysWhenTheRunWasOverBudget(t *testing.T) {
	r := &Report{Started: time.Date(2026, 11, 30, 0, 14, 0, 0, time.UTC), Duration: 34 * time.Minute, Budget: 24 * time.Minute, Cores: 2, Commit: "a83b23f"}
	header := strings.SplitN(r.Markdown(), "\n\n", 3)[1]
	if !strings.Contains(header, "in one run of 34m0s, over its 24m0s budget") {
		t.Errorf("header %q does not say the run was over its budget", header)
	}
	r.Duration = 21 * time.Minute
	if header := strings.SplitN(r.Markdown(), "\n\n", 3)[1]; strings.Contains(header, "budget") {
		t.Errorf("header %q speaks of a budget the run kept", header)
	}
}
