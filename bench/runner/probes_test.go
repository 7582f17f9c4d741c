package runner

import "testing"

func TestProbeDeltaCountsOnlyWhatTheWindowAdded(t *testing.T) {
	before := parseProm(`hookwright_trust_probes_total{gate="promote",result="Trusted"} 5
hookwright_trust_probes_total{gate="prune",result="Untrusted"} 0
hookwright_trust_probes_spared_total{gate="move"} 2
`)
	after := parseProm(`hookwright_trust_probes_total{gate="promote",result="Trusted"} 9
hookwright_trust_probes_total{gate="promote",result="Inconclusive"} 3
hookwright_trust_probes_total{gate="prune",result="Untrusted"} 0
hookwright_trust_probes_spared_total{gate="move"} 7
hookwright_trust_probes_spared_total{gate="promote"} 1
`)
	got := probeDelta(before, after).describe()
	want := "7 trust probes (promote Trusted ×4, promote Inconclusive ×3); 6 done without (move ×5, promote ×1)"
	if got != want {
		t.Errorf("describe() = %q\nwant          %q", got, want)
	}
	if got, want := probeDelta(after, after).describe(), "0 trust probes; 0 done without"; got != want {
		t.Errorf("an idle window: %q, want %q", got, want)
	}
}
