package runner

import (
	"strings"
	"testing"
)

func TestWritesNoteGivesEachKindPerInstallAndWhatItIsFor(t *testing.T) {
	kinds := map[string]int{"patch customresourcedefinitions": 400, "update webhookinstalls/status": 100, "patch configmaps": 50}
	note := writesNote(kinds, 100, &p4FloorResult{Converged: 100, Writes: 500})
	for _, want := range []string{
		"At N=100, 5.5 writes per install",
		"patch customresourcedefinitions 4.0 (one per CRD to point it",
		"update webhookinstalls/status 1.0 (the status",
		"patch configmaps 0.5.", // a kind with no known purpose is still counted
		"The floor wrote 5.0 per install.",
	} {
		if !strings.Contains(note, want) {
			t.Errorf("the note lacks %q:\n%s", want, note)
		}
	}
	if strings.Index(note, "customresourcedefinitions") > strings.Index(note, "webhookinstalls/status") {
		t.Errorf("kinds are not largest first:\n%s", note)
	}
}
