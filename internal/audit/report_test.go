package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/internal/eventnote"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

func ptrTime(d time.Duration) *metav1.Time { t := at(d); return &t }

func install(ns, name string, rotations ...v1alpha1.RotationRecord) v1alpha1.WebhookInstall {
	in := v1alpha1.WebhookInstall{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name)}}
	in.Status.Phase = v1alpha1.PhaseSucceeded
	in.Status.Rotations = rotations
	in.Status.Services = []v1alpha1.ServiceStatus{
		{Name: "a-service", CAFingerprint: "ca-a", CANotAfter: ptrTime(90 * 24 * time.Hour), ServingNotAfter: ptrTime(30 * 24 * time.Hour)},
		{Name: "b-service", CAFingerprint: "ca-b", CANotAfter: ptrTime(60 * 24 * time.Hour), ServingNotAfter: ptrTime(40 * 24 * time.Hour)},
	}
	return in
}

func record(kind v1alpha1.RotationKind, started time.Duration, old, new string, outcome v1alpha1.RotationOutcome) v1alpha1.RotationRecord {
	return v1alpha1.RotationRecord{Service: "a-service", Kind: kind, Reason: "Manual", Started: at(started), OldFingerprint: old, NewFingerprint: new, Outcome: outcome}
}

// startedEvent is an Event as controllers/status_rotations.go writes it.
func startedEvent(in v1alpha1.WebhookInstall, kind string, started time.Duration, old, new string) corev1.Event {
	return corev1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "WebhookInstall", Namespace: in.Namespace, Name: in.Name, UID: in.UID},
		Reason:         kind + "RotationStarted",
		Message:        kind + " certificate rotation of service a-service started (Manual: rotate now: yes): " + old + " -> " + new,
		EventTime:      metav1.NewMicroTime(t0.Add(started)),
	}
}

// issuanceEvent is the one Event of an install's first certificates, as
// controllers/status_rotations.go writes it.
func issuanceEvent(in v1alpha1.WebhookInstall, at time.Duration, issued ...eventnote.Issued) corev1.Event {
	return corev1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "WebhookInstall", Namespace: in.Namespace, Name: in.Name, UID: in.UID},
		Reason:         eventnote.ReasonCertificatesIssued,
		Message:        eventnote.Issuance(issued),
		EventTime:      metav1.NewMicroTime(t0.Add(at)),
	}
}

// succeededEvent is a new install's one Event as
// controllers/status.go writes it: its phase change, with its first
// certificates told at the end.
func succeededEvent(in v1alpha1.WebhookInstall, at time.Duration, issued ...eventnote.Issued) corev1.Event {
	note, _ := eventnote.WithIssuance("Succeeded: 1 conversion CRD(s) served by their webhooks", eventnote.Issuance(issued))
	return corev1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "WebhookInstall", Namespace: in.Namespace, Name: in.Name, UID: in.UID},
		Reason:         v1alpha1.ReasonSucceeded,
		Message:        note,
		EventTime:      metav1.NewMicroTime(t0.Add(at)),
	}
}

// legacyIssuanceEvent is the Event of one first certificate as releases
// before CertificatesIssued wrote it: a Completed Event whose note says it
// started and completed.
func legacyIssuanceEvent(in v1alpha1.WebhookInstall, kind string, at time.Duration, new string) corev1.Event {
	return corev1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "WebhookInstall", Namespace: in.Namespace, Name: in.Name, UID: in.UID},
		Reason:         kind + "RotationCompleted",
		Message:        kind + " certificate rotation of service a-service started (Initial: first certificates of the service): (none) -> " + new + " and completed",
		EventTime:      metav1.NewMicroTime(t0.Add(at)),
	}
}

func completedEvent(in v1alpha1.WebhookInstall, kind, new string) corev1.Event {
	return corev1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "WebhookInstall", Namespace: in.Namespace, Name: in.Name, UID: in.UID},
		Reason:         kind + "RotationCompleted",
		Message:        kind + " certificate rotation of service a-service completed: " + new + " now serves",
	}
}

func TestBuildListsEachRotationOnceOldestFirst(t *testing.T) {
	older := install("team-b", "widgets")
	in := install("team-a", "crontabs",
		record(v1alpha1.RotationServing, 2*time.Hour, "s1", "s2", v1alpha1.RotationSucceeded),
		record(v1alpha1.RotationCA, 3*time.Hour, "ca1", "ca2", v1alpha1.RotationInProgress))
	events := []corev1.Event{
		// The same serving rotation as in status: listed once, from status.
		startedEvent(in, "Serving", 2*time.Hour, "s1", "s2"),
		// Older rotations only the Events still know (trimmed from status):
		// the first certificates, told by one Event, and a CA rotation.
		issuanceEvent(in, 30*time.Minute, eventnote.Issued{Service: "a-service", Kind: "CA", Fingerprint: "ca0"},
			eventnote.Issued{Service: "a-service", Kind: "Serving", Fingerprint: "s0"}),
		startedEvent(in, "CA", time.Hour, "ca0", "ca1"),
		completedEvent(in, "CA", "ca1"),
		// Another install's, with no completion Event left, and its first
		// CA told the way an earlier release did.
		legacyIssuanceEvent(older, "CA", 20*time.Minute, "x0"),
		startedEvent(older, "Serving", 90*time.Minute, "x1", "x2"),
	}
	report := Build([]v1alpha1.WebhookInstall{in, older}, events, time.Time{}, t0.Add(4*time.Hour))

	var got []string
	for _, r := range report.Rotations {
		got = append(got, strings.Join([]string{r.Namespace, r.Kind, r.OldFingerprint, r.NewFingerprint, r.Outcome, r.Source}, " "))
	}
	want := []string{
		"team-b CA  x0 Succeeded event",
		"team-a CA  ca0 Succeeded event",
		"team-a Serving  s0 Succeeded event",
		"team-a CA ca0 ca1 Succeeded event",
		"team-b Serving x1 x2 Unknown event",
		"team-a Serving s1 s2 Succeeded status",
		"team-a CA ca1 ca2 InProgress status",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rotations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if report.Installs[0].Namespace != "team-a" || report.Installs[1].Namespace != "team-b" {
		t.Errorf("installs not sorted by namespace: %+v", report.Installs)
	}
	if last := report.Installs[0].LastRotation; last == nil || last.NewFingerprint != "ca2" {
		t.Errorf("last rotation = %+v, want the CA rotation to ca2", last)
	}
}

func TestBuildReadsFirstCertificatesFromThePhaseEvent(t *testing.T) {
	in := install("team-a", "crontabs")
	ca := eventnote.Issued{Service: "a-service", Kind: "CA", Fingerprint: "ca0"}
	serving := eventnote.Issued{Service: "a-service", Kind: "Serving", Fingerprint: "s0"}
	onCRD := succeededEvent(in, time.Hour, ca)
	onCRD.InvolvedObject.Kind = "CustomResourceDefinition" // only an install's Events tell its certificates
	report := Build([]v1alpha1.WebhookInstall{in}, []corev1.Event{succeededEvent(in, 30*time.Minute, ca, serving), onCRD}, time.Time{}, t0.Add(2*time.Hour))

	var got []string
	for _, r := range report.Rotations {
		got = append(got, strings.Join([]string{r.Install, r.Kind, r.Reason, r.NewFingerprint, r.Outcome, r.Started.UTC().Format(time.RFC3339)}, " "))
	}
	want := []string{
		"crontabs CA Initial ca0 Succeeded " + t0.Add(30*time.Minute).Format(time.RFC3339),
		"crontabs Serving Initial s0 Succeeded " + t0.Add(30*time.Minute).Format(time.RFC3339),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rotations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestBuildSinceKeepsThePeriodOnly(t *testing.T) {
	in := install("team-a", "crontabs",
		record(v1alpha1.RotationServing, time.Hour, "s1", "s2", v1alpha1.RotationSucceeded),
		record(v1alpha1.RotationServing, 3*time.Hour, "s2", "s3", v1alpha1.RotationSucceeded))
	report := Build([]v1alpha1.WebhookInstall{in}, nil, t0.Add(2*time.Hour), t0.Add(4*time.Hour))
	if len(report.Rotations) != 1 || report.Rotations[0].NewFingerprint != "s3" {
		t.Errorf("--since 2h ago kept %+v, want only the rotation to s3", report.Rotations)
	}
	if len(report.Installs) != 1 || report.Installs[0].LastRotation.NewFingerprint != "s3" {
		t.Errorf("installs must not be filtered by --since: %+v", report.Installs)
	}
}

func TestBuildCountsFailuresAndContestedCRDs(t *testing.T) {
	in := install("team-a", "crontabs",
		record(v1alpha1.RotationCA, time.Hour, "ca1", "ca2", v1alpha1.RotationFailed),
		record(v1alpha1.RotationCA, 2*time.Hour, "ca1", "ca3", v1alpha1.RotationSucceeded))
	in.Status.ConversionCRDs = []v1alpha1.ConversionCRDStatus{
		{Name: "crontabs.stable.example.com", State: v1alpha1.ConversionVerified, DriftRestores: 2, DriftWindowStart: ptrTime(time.Hour)},
		{Name: "quiet.stable.example.com", State: v1alpha1.ConversionVerified},
	}
	got := Build([]v1alpha1.WebhookInstall{in}, nil, time.Time{}, t0).Installs[0]
	if got.FailedRotations != 1 {
		t.Errorf("failedRotations = %d, want 1", got.FailedRotations)
	}
	if strings.Join(got.Contested, ",") != "crontabs.stable.example.com" {
		t.Errorf("contested = %v, want the CRD with drift restores in its window", got.Contested)
	}
}

func TestTableShowsEarliestExpiryAndEveryRotation(t *testing.T) {
	in := install("team-a", "crontabs", record(v1alpha1.RotationServing, time.Hour, "s1", "s2", v1alpha1.RotationSucceeded))
	var out bytes.Buffer
	if err := Print(&out, Build([]v1alpha1.WebhookInstall{in}, nil, time.Time{}, t0), "table"); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"team-a", "crontabs", "Succeeded",
		t0.Add(60*24*time.Hour).Format(time.RFC3339) + " (60d)", // b-service's CA expires first
		t0.Add(30*24*time.Hour).Format(time.RFC3339) + " (30d)", // a-service's serving certificate expires first
		"Serving  Manual  Succeeded", "s1", "s2",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
}

func TestPrintRefusesUnknownFormats(t *testing.T) {
	if err := Print(&bytes.Buffer{}, Report{}, "xml"); err == nil || !strings.Contains(err.Error(), "table, json or yaml") {
		t.Errorf("Print(xml) = %v, want an error naming the formats", err)
	}
}

// TestJSONFollowsTheDocumentedSchema: the json output round-trips into
// Report, validates against docs/audit-schema.yaml, and uses no field the
// schema does not document.
func TestJSONFollowsTheDocumentedSchema(t *testing.T) {
	in := install("team-a", "crontabs",
		record(v1alpha1.RotationServing, time.Hour, "s1", "s2", v1alpha1.RotationSucceeded),
		record(v1alpha1.RotationCA, 2*time.Hour, "ca1", "ca2", v1alpha1.RotationFailed))
	in.Status.CertsRotateAt = ptrTime(20 * 24 * time.Hour)
	in.Status.ConversionCRDs = []v1alpha1.ConversionCRDStatus{{Name: "crontabs.stable.example.com", State: v1alpha1.ConversionVerified, Message: "ok", DriftRestores: 1, DriftWindowStart: ptrTime(time.Hour)}}
	in.Status.Rotations[0].Completed = ptrTime(time.Hour + time.Minute)
	report := Build([]v1alpha1.WebhookInstall{in}, []corev1.Event{startedEvent(in, "CA", 30*time.Minute, "(none)", "ca1")}, t0, t0.Add(3*time.Hour))

	var out bytes.Buffer
	if err := Print(&out, report, "json"); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	first, _ := json.Marshal(report)
	if !bytes.Equal(first, again) {
		t.Errorf("json does not round-trip:\n%s\n%s", first, again)
	}

	schema := loadSchema(t)
	var doc any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	validator, _, err := validation.NewSchemaValidator(schema)
	if err != nil {
		t.Fatal(err)
	}
	if errs := validation.ValidateCustomResource(nil, doc, validator); len(errs) > 0 {
		t.Errorf("output does not validate against docs/audit-schema.yaml: %v", errs.ToAggregate())
	}
	if undocumented := undocumentedFields("", doc, schema); len(undocumented) > 0 {
		t.Errorf("output fields missing from docs/audit-schema.yaml: %v", undocumented)
	}
}

// loadSchema reads docs/audit-schema.yaml, resolving its local $refs.
func loadSchema(t *testing.T) *apiextensions.JSONSchemaProps {
	t.Helper()
	raw, err := os.ReadFile("../../docs/audit-schema.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	definitions, _ := doc["definitions"].(map[string]any)
	delete(doc, "definitions")
	var resolve func(v any) any
	resolve = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				return resolve(definitions[strings.TrimPrefix(ref, "#/definitions/")])
			}
			out := map[string]any{}
			for k, e := range v {
				out[k] = resolve(e)
			}
			return out
		case []any:
			out := make([]any, len(v))
			for i, e := range v {
				out[i] = resolve(e)
			}
			return out
		}
		return v
	}
	resolved, _ := json.Marshal(resolve(doc))
	var v1 apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal(resolved, &v1); err != nil {
		t.Fatal(err)
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, &internal, nil); err != nil {
		t.Fatal(err)
	}
	return &internal
}

func undocumentedFields(path string, v any, schema *apiextensions.JSONSchemaProps) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			prop, ok := schema.Properties[k]
			if !ok {
				out = append(out, path+"."+k)
				continue
			}
			out = append(out, undocumentedFields(path+"."+k, e, &prop)...)
		}
	case []any:
		for _, e := range v {
			if schema.Items != nil && schema.Items.Schema != nil {
				out = append(out, undocumentedFields(path+"[]", e, schema.Items.Schema)...)
			}
		}
	}
	return out
}
