package runner

import (
	"fmt"
	"strings"
)

// writePurposes says what each kind of the operator's write to converge
// a new install is for, per install, beyond what the P4 floor writes: a
// Secret, a Service, a Deployment and one patch per CRD.
var writePurposes = map[string]string{
	"patch customresourcedefinitions": "one per CRD to point it at the webhook, as the floor does, and one per CRD before anything is made for it, to claim it (one owner per CRD, written with optimistic concurrency)",
	"patch secrets":                   "the serving certificate's Secret, as the floor's, and the CA's own Secret, whose key is never mounted into the webhook's pods",
	"patch deployments":               "the webhook Deployment, as the floor's",
	"patch services":                  "the webhook Service, as the floor's",
	"update webhookinstalls/status":   "the status, first written by the pass that verifies the webhook (earlier only when a Deployment takes longer than 5 s to turn available)",
	"create events":                   "the Event that tells the install Succeeded, with its first certificates",
	"create serviceaccounts":          "the webhook pods' ServiceAccount, which the install names and nothing made",
	"patch webhookinstalls":           "the finalizer, so that a deleted install hands its CRDs back",
}

// writesNote tells, from a P4 batch's writes by kind, how many of each an
// install took and what each is for.
func writesNote(kinds map[string]int, n int, floor *p4FloorResult) string {
	total := 0
	for _, c := range kinds {
		total += c
	}
	var parts []string
	for _, k := range largestFirst(kinds) {
		part := fmt.Sprintf("%s %.1f", k, float64(kinds[k])/float64(n))
		if purpose, ok := writePurposes[k]; ok {
			part += " (" + purpose + ")"
		}
		parts = append(parts, part)
	}
	note := fmt.Sprintf("**P4 writes.** At N=%d, %.1f writes per install (audit log), by kind: %s.", n, float64(total)/float64(n), strings.Join(parts, "; "))
	if floor != nil && floor.Converged > 0 {
		note += fmt.Sprintf(" The floor wrote %.1f per install.", float64(floor.Writes)/float64(floor.Converged))
	}
	return note
}
