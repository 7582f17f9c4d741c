package eventnote

import (
	"reflect"
	"testing"
)

const (
	fpCA      = "3a:9f:00:c1"
	fpServing = "b2:07:5e:44"
)

func TestIssuanceRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		issued []Issued
		note   string
	}{
		{"one Service's CA and serving certificate",
			[]Issued{{"hooks", "CA", fpCA}, {"hooks", "Serving", fpServing}},
			"first certificates issued for service hooks: CA " + fpCA + ", Serving " + fpServing},
		{"a serving certificate issued a pass after its CA",
			[]Issued{{"hooks", "Serving", fpServing}},
			"first certificates issued for service hooks: Serving " + fpServing},
		{"two Services, in the order first seen",
			[]Issued{{"b", "CA", fpCA}, {"a", "CA", "01:02"}, {"b", "Serving", fpServing}},
			"first certificates issued for service b: CA " + fpCA + ", Serving " + fpServing + "; for service a: CA 01:02"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			note := Issuance(tc.issued)
			if note != tc.note {
				t.Fatalf("Issuance = %q, want %q", note, tc.note)
			}
			got, ok := ParseIssuance(note)
			want := append([]Issued(nil), tc.issued...)
			if len(want) == 3 { // parsed by Service: b's two, then a's
				want = []Issued{want[0], want[2], want[1]}
			}
			if !ok || !reflect.DeepEqual(got, want) {
				t.Errorf("ParseIssuance(%q) = %v, %v; want %v", note, got, ok, want)
			}
		})
	}
}

func TestParseIssuanceRejectsOtherNotes(t *testing.T) {
	for _, note := range []string{
		"",
		"CA certificate rotation of service hooks started (Initial: first certificates of the service): (none) -> " + fpCA + " and completed",
		"first certificates issued ",
		"first certificates issued for service hooks: CA",
		"first certificates issued for service hooks CA " + fpCA,
		"first certificates issued for service hooks: CA " + fpCA + " and more",
	} {
		if got, ok := ParseIssuance(note); ok {
			t.Errorf("ParseIssuance(%q) = %v, want not ok", note, got)
		}
	}
}
