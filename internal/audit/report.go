// Package audit is `hookwright audit`: one view, across namespaces, of
// every WebhookInstall's certificates and of every certificate rotation,
// for cluster admins. It reads what the operator already publishes (each
// install's status and its Events) and changes nothing.
package audit

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/rotation"
	"github.com/hookwright/hookwright/internal/eventnote"
)

// Report is what `hookwright audit -o json|yaml` prints; its schema is
// docs/audit-schema.yaml (tested).
type Report struct {
	// GeneratedAt is when the report was built.
	GeneratedAt metav1.Time `json:"generatedAt"`
	// Since bounds Rotations (and only them): those started at or after it.
	Since *metav1.Time `json:"since,omitempty"`
	// Installs, by namespace and name.
	Installs []Install `json:"installs"`
	// Rotations of every install in the period, oldest first, each once.
	Rotations []Rotation `json:"rotations"`
}

// Install is one WebhookInstall as its status reports it.
type Install struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Phase     string `json:"phase,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// CRDs are the conversion CRDs with their state (Verified, Failed...).
	CRDs     []CRD     `json:"crds,omitempty"`
	Services []Service `json:"services,omitempty"`
	// NextRotation is the earliest time a certificate of the install is
	// due for renewal.
	NextRotation *metav1.Time `json:"nextRotation,omitempty"`
	// LastRotation is the latest rotation started, any kind.
	LastRotation *Rotation `json:"lastRotation,omitempty"`
	// FailedRotations counts the failed rotations the status still lists.
	FailedRotations int `json:"failedRotations"`
	// Contested lists CRDs whose conversion another writer keeps changing.
	Contested []string `json:"contested,omitempty"`
}

// CRD is one conversion CRD of an install.
type CRD struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Message string `json:"message,omitempty"`
}

// Service is one webhook Service's certificates (fingerprints only).
type Service struct {
	Name               string       `json:"name"`
	CAFingerprint      string       `json:"caFingerprint,omitempty"`
	CANotAfter         *metav1.Time `json:"caNotAfter,omitempty"`
	ServingFingerprint string       `json:"servingFingerprint,omitempty"`
	ServingNotAfter    *metav1.Time `json:"servingNotAfter,omitempty"`
}

// Rotation is one certificate rotation.
type Rotation struct {
	Namespace      string       `json:"namespace"`
	Install        string       `json:"install"`
	Service        string       `json:"service"`
	Kind           string       `json:"kind"`
	Reason         string       `json:"reason,omitempty"`
	Message        string       `json:"message,omitempty"`
	Started        metav1.Time  `json:"started"`
	Completed      *metav1.Time `json:"completed,omitempty"`
	Outcome        string       `json:"outcome"`
	OldFingerprint string       `json:"oldFingerprint,omitempty"`
	NewFingerprint string       `json:"newFingerprint"`
	// Source is where the record was read: "status" (status.rotations,
	// the last 20 per install) or "event" (an older rotation still in the
	// install's Events).
	Source string `json:"source"`
}

// Build makes the report from the installs and the Events regarding them.
// Rotations started before since (when non-zero) are left out.
func Build(installs []v1alpha1.WebhookInstall, events []corev1.Event, since, now time.Time) Report {
	report := Report{GeneratedAt: metav1.NewTime(now.Truncate(time.Second)), Installs: []Install{}, Rotations: []Rotation{}}
	if !since.IsZero() {
		report.Since = &metav1.Time{Time: since}
	}
	sorted := append([]v1alpha1.WebhookInstall(nil), installs...)
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		return a.Namespace < b.Namespace || (a.Namespace == b.Namespace && a.Name < b.Name)
	})
	seen := map[string]bool{}
	for i := range sorted {
		in := &sorted[i]
		report.Installs = append(report.Installs, summarize(in))
		for _, rec := range in.Status.Rotations {
			r := fromRecord(in, rec)
			seen[r.key()] = true
			report.Rotations = append(report.Rotations, r)
		}
	}
	for _, r := range fromEvents(events) {
		if !seen[r.key()] {
			seen[r.key()] = true
			report.Rotations = append(report.Rotations, r)
		}
	}
	kept := report.Rotations[:0]
	for _, r := range report.Rotations {
		if since.IsZero() || !r.Started.Time.Before(since) {
			kept = append(kept, r)
		}
	}
	report.Rotations = kept
	sort.SliceStable(report.Rotations, func(i, j int) bool {
		return report.Rotations[i].Started.Before(&report.Rotations[j].Started)
	})
	return report
}

func (r Rotation) key() string {
	return strings.Join([]string{r.Namespace, r.Install, r.Service, r.Kind, r.NewFingerprint}, "/")
}

func summarize(in *v1alpha1.WebhookInstall) Install {
	out := Install{Namespace: in.Namespace, Name: in.Name, Phase: string(in.Status.Phase), Reason: in.Status.Reason, NextRotation: in.Status.CertsRotateAt}
	for _, c := range in.Status.ConversionCRDs {
		out.CRDs = append(out.CRDs, CRD{Name: c.Name, State: string(c.State), Message: c.Message})
		if c.DriftRestores > 0 && c.DriftWindowStart != nil {
			out.Contested = append(out.Contested, c.Name)
		}
	}
	if cond := apimeta.FindStatusCondition(in.Status.Conditions, v1alpha1.TypeConversionContested); cond != nil && cond.Status == metav1.ConditionTrue && len(out.Contested) == 0 {
		out.Contested = append(out.Contested, cond.Message)
	}
	for _, s := range in.Status.Services {
		out.Services = append(out.Services, Service{Name: s.Name, CAFingerprint: s.CAFingerprint, CANotAfter: s.CANotAfter,
			ServingFingerprint: s.ServingFingerprint, ServingNotAfter: s.ServingNotAfter})
	}
	for _, rec := range in.Status.Rotations {
		if rec.Outcome == v1alpha1.RotationFailed {
			out.FailedRotations++
		}
		if out.LastRotation == nil || !rec.Started.Before(&out.LastRotation.Started) {
			r := fromRecord(in, rec)
			out.LastRotation = &r
		}
	}
	return out
}

func fromRecord(in *v1alpha1.WebhookInstall, rec v1alpha1.RotationRecord) Rotation {
	return Rotation{Namespace: in.Namespace, Install: in.Name, Service: rec.Service, Kind: string(rec.Kind), Reason: rec.Reason,
		Message: rec.Message, Started: rec.Started, Completed: rec.Completed, Outcome: string(rec.Outcome),
		OldFingerprint: rec.OldFingerprint, NewFingerprint: rec.NewFingerprint, Source: "status"}
}

// startedNote is the note of a <Kind>RotationStarted Event
// (controllers/status_rotations.go): "<kind> certificate rotation of
// service <svc> started (<reason>: <message>): <old> -> <new>". An
// install's first certificates have no Started Event: Hookwright tells
// them in one note (eventnote.Issuance), at the end of the phase Event of
// the pass that put them in place or in a CertificatesIssued Event; releases
// before it wrote one <Kind>RotationCompleted Event each, with the
// started note and " and completed" after it, which a cluster upgraded
// within an Event's lifetime may still hold.
var startedNote = regexp.MustCompile(`^(\S+) certificate rotation of service (\S+) started \(([^:]*): .*\): (\S+) -> (\S+?)( and completed)?$`)

// fromEvents reads the rotations the Events of WebhookInstalls record.
// events.k8s.io folds repeats of one reason into a series whose note is
// the first one's, so an Event yields the first rotation of its series;
// the later ones are in status.rotations. Outcome is what the install's
// later Events say, when they still exist.
func fromEvents(events []corev1.Event) []Rotation {
	var out []Rotation
	for _, e := range events {
		if first, ok := fromIssuance(e); ok {
			out = append(out, first...)
			continue
		}
		started := strings.HasSuffix(e.Reason, "RotationStarted")
		if e.InvolvedObject.Kind != "WebhookInstall" || !started && !strings.HasSuffix(e.Reason, "RotationCompleted") {
			continue
		}
		m := startedNote.FindStringSubmatch(e.Message)
		if m == nil || started == (m[6] != "") {
			continue // a Completed Event of a later rotation: its start is the Started Event
		}
		old := m[4]
		if old == "(none)" {
			old = ""
		}
		// A first issuance's one Event is recorded when it completes: its
		// Started is that moment; status.rotations has the exact start.
		at := eventTime(e)
		outcome := string(v1alpha1.RotationSucceeded)
		if started {
			outcome = outcomeFromEvents(events, e, m[2], m[5])
		}
		out = append(out, Rotation{Namespace: e.InvolvedObject.Namespace, Install: e.InvolvedObject.Name, Service: m[2], Kind: m[1],
			Reason: m[3], Started: metav1.NewTime(at.Truncate(time.Second)), Outcome: outcome,
			OldFingerprint: old, NewFingerprint: m[5], Source: "event"})
	}
	return out
}

// fromIssuance reads an install's first certificates from the Event that
// tells them: its CertificatesIssued Event, or the phase Event of the pass
// that put them in place, whose note ends with them. The Event is
// recorded once they are in place: its time stands for their start
// (status.rotations has the exact one).
func fromIssuance(e corev1.Event) (first []Rotation, ok bool) {
	if e.InvolvedObject.Kind != "WebhookInstall" {
		return nil, false
	}
	issued, ok := eventnote.ParseIssuance(e.Message)
	if !ok {
		return nil, false
	}
	at := eventTime(e)
	out := make([]Rotation, 0, len(issued))
	for _, c := range issued {
		out = append(out, Rotation{Namespace: e.InvolvedObject.Namespace, Install: e.InvolvedObject.Name, Service: c.Service, Kind: c.Kind,
			Reason: rotation.ReasonInitial, Started: metav1.NewTime(at.Truncate(time.Second)), Outcome: string(v1alpha1.RotationSucceeded),
			NewFingerprint: c.Fingerprint, Source: "event"})
	}
	return out, true
}

// eventTime is when an Event happened: events.k8s.io's eventTime, or the
// core API's firstTimestamp for Events written without one.
func eventTime(e corev1.Event) time.Time {
	if e.EventTime.IsZero() {
		return e.FirstTimestamp.Time
	}
	return e.EventTime.Time
}

func outcomeFromEvents(events []corev1.Event, started corev1.Event, service, fingerprint string) string {
	kind := strings.TrimSuffix(started.Reason, "RotationStarted")
	for _, e := range events {
		if e.InvolvedObject.UID != started.InvolvedObject.UID {
			continue
		}
		switch e.Reason {
		case kind + "RotationCompleted":
			if strings.Contains(e.Message, fingerprint) {
				return string(v1alpha1.RotationSucceeded)
			}
		case kind + "RotationFailed":
			if strings.Contains(e.Message, "of service "+service+" ") {
				return string(v1alpha1.RotationFailed)
			}
		}
	}
	return "Unknown"
}

// expiresIn renders the time left until t, "expired" once past.
func expiresIn(t *metav1.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	d := t.Sub(now)
	if d <= 0 {
		return "expired"
	}
	return fmt.Sprintf("%s (%s)", t.UTC().Format(time.RFC3339), humanDuration(d))
}

func humanDuration(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	case d >= time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return d.Round(time.Second).String()
	}
}
