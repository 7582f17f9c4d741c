package runner

import "testing"

func TestOptionsSelectPhasesByPrefix(t *testing.T) {
	for _, tc := range []struct {
		phases []string
		phase  string
		want   bool
	}{
		{nil, "Rotation storm", true},
		{[]string{"P4"}, "P4", true},
		{[]string{"P4"}, "P4 profile", true},
		{[]string{"P4"}, "P1 Hookwright", false},
		{[]string{"P1", "kit"}, "P1 floor", true},
		{[]string{"P1", "kit"}, "kit", true},
		{[]string{"P1", "kit"}, "cert", false},
		{[]string{"Rotation"}, "Rotation storm", true},
		{[]string{"P4", "-P4 floor"}, "P4 floor", false},
		{[]string{"P4", "-P4 floor"}, "P4", true},
		{[]string{"-P4 floor"}, "P3", true},
		{[]string{"-P4 floor"}, "P4 floor", false},
	} {
		if got := (Options{Phases: tc.phases}).runs(tc.phase); got != tc.want {
			t.Errorf("Options{Phases: %q}.runs(%q) = %v, want %v", tc.phases, tc.phase, got, tc.want)
		}
	}
}
