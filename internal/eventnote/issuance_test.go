package eventnote

import (
	"reflect"
	"strings"
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

func TestWithIssuanceReadsBackAfterAPhaseNote(t *testing.T) {
	issued := []Issued{{"hooks", "CA", fpCA}, {"hooks", "Serving", fpServing}}
	joined, fits := WithIssuance("Succeeded: 1 conversion CRD(s) served by their webhooks", Issuance(issued))
	if want := "Succeeded: 1 conversion CRD(s) served by their webhooks; first certificates issued for service hooks: CA " + fpCA + ", Serving " + fpServing; !fits || joined != want {
		t.Fatalf("WithIssuance = %q, %v; want %q, true", joined, fits, want)
	}
	if got, ok := ParseIssuance(joined); !ok || !reflect.DeepEqual(got, issued) {
		t.Errorf("ParseIssuance(%q) = %v, %v; want %v", joined, got, ok, issued)
	}
}

func TestWithIssuanceKeepsToTheNoteLimit(t *testing.T) {
	issuance := Issuance([]Issued{{"hooks", "CA", fpCA}})
	phase := func(n int) string { return "Succeeded: " + strings.Repeat("x", n-len("Succeeded: ")) }
	room := noteLimit - len(issuanceSeparator) - len(issuance)
	if joined, fits := WithIssuance(phase(room), issuance); !fits || len(joined) != noteLimit {
		t.Errorf("a note of exactly %d bytes: fits %v, %d bytes", noteLimit, fits, len(joined))
	}
	if _, fits := WithIssuance(phase(room+1), issuance); fits {
		t.Errorf("a note of %d bytes fits, want told apart", noteLimit+1)
	}
	if joined, fits := WithIssuance(phase(2*noteLimit), ""); !fits || joined != phase(2*noteLimit) {
		t.Errorf("no issuance: the note must stay as it is")
	}
}

func TestParseIssuanceFindsItOnlyAtTheEnd(t *testing.T) {
	// A phase note that mentions the words without the separator is not
	// an issuance.
	for _, note := range []string{
		"Failed: first certificates issued for service hooks: CA " + fpCA,
		"Succeeded: ok; first certificates issued for service hooks: CA " + fpCA + "; and more",
	} {
		if got, ok := ParseIssuance(note); ok {
			t.Errorf("ParseIssuance(%q) = %v, want not ok", note, got)
		}
	}
}
