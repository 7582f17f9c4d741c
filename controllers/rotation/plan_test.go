package rotation

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/hookwright/hookwright/certs"
)

var now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func mustCA(t *testing.T, issued time.Time, lifetime time.Duration) *certs.CA {
	t.Helper()
	ca, err := certs.NewCA("ca", certs.ECDSAP256, lifetime, issued)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func mustServing(t *testing.T, ca *certs.CA, issued time.Time, lifetime time.Duration) *certs.KeyPair {
	t.Helper()
	pair, err := ca.IssueServing(certs.ServiceDNSNames("svc", "ns"), certs.ECDSAP256, lifetime, issued)
	if err != nil {
		t.Fatal(err)
	}
	return &pair
}

func TestPlan(t *testing.T) {
	policy := certs.Policy{KeyAlgorithm: certs.ECDSAP256, CALifetime: 300 * time.Hour, ServingLifetime: 30 * time.Hour}
	fresh := mustCA(t, now, policy.CALifetime)
	oldCA := mustCA(t, now.Add(-250*time.Hour), policy.CALifetime) // past 2/3 of its life
	next := mustCA(t, now, policy.CALifetime)
	serving := mustServing(t, fresh, now, policy.ServingLifetime)
	staleServing := mustServing(t, fresh, now.Add(-25*time.Hour), policy.ServingLifetime)
	fromOld := mustServing(t, oldCA, now, policy.ServingLifetime)
	base := func() Observed {
		return Observed{Now: now, Policy: policy, Overlap: time.Minute, DNSNames: certs.ServiceDNSNames("svc", "ns"), Active: fresh, Serving: serving, RolledOut: true}
	}

	tests := []struct {
		name   string
		mutate func(*Observed)
		kind   ActionKind
		reason string
		due    time.Time
	}{
		{"first install", func(o *Observed) {
			o.Active, o.Serving, o.ActiveOK = nil, nil, certs.Verdict{Reason: certs.ReasonMissing}
		}, IssueInitial, ReasonInitial, time.Time{}},
		{"CA Secret tampered", func(o *Observed) {
			o.Active, o.ActiveOK = nil, certs.Verdict{Reason: certs.ReasonInvalid, Message: "unusable"}
		}, IssueInitial, string(certs.ReasonInvalid), time.Time{}},
		{"steady: wake at the serving renewal", func(o *Observed) {}, Nothing, "", policy.RenewAt(parse(t, serving.CertPEM))},
		{"serving due", func(o *Observed) { o.Serving = staleServing }, IssueServing, string(certs.ReasonExpiring), time.Time{}},
		{"serving missing", func(o *Observed) { o.Serving = nil }, IssueServing, string(certs.ReasonMissing), time.Time{}},
		{"serving from another CA", func(o *Observed) { o.Serving = fromOld }, IssueServing, string(certs.ReasonCAChanged), time.Time{}},
		{"manual serving", func(o *Observed) { o.ManualServing = "leak" }, IssueServing, ReasonManual, time.Time{}},
		{"CA due starts an ordered rotation", func(o *Observed) {
			o.Active, o.Serving = oldCA, fromOld
		}, StartCARotation, string(certs.ReasonExpiring), time.Time{}},
		{"manual CA", func(o *Observed) { o.ManualCA = "leak" }, StartCARotation, ReasonManual, time.Time{}},
		{"policy changed algorithm", func(o *Observed) { o.Policy.KeyAlgorithm = certs.ECDSAP384 }, IssueServing, string(certs.ReasonPolicyChanged), time.Time{}},
		{"next not yet in every CRD", func(o *Observed) { o.Next = next }, Wait, "", time.Time{}},
		{"next published but not settled", func(o *Observed) {
			o.Next, o.NextTrustedFor = next, 500*time.Millisecond
		}, Wait, "", now.Add(SettleTime - 500*time.Millisecond)},
		{"next settled: promote", func(o *Observed) {
			o.Next, o.NextTrustedFor = next, SettleTime
		}, Promote, "", time.Time{}},
		{"manual CA waits while a rotation is under way", func(o *Observed) {
			o.Next, o.ManualCA = next, "again"
		}, Wait, "", time.Time{}},
		{"previous kept until rollout", func(o *Observed) {
			o.Previous, o.PruneAt, o.RolledOut = oldCA.Cert, now.Add(-time.Second), false
		}, Wait, "", time.Time{}},
		{"previous kept for the overlap", func(o *Observed) {
			o.Previous, o.PruneAt = oldCA.Cert, now.Add(30*time.Second)
		}, Wait, "", now.Add(30 * time.Second)},
		{"overlap passed and rolled out: prune", func(o *Observed) {
			o.Previous, o.PruneAt = oldCA.Cert, now
		}, Prune, "", time.Time{}},
		{"restart after promote before the serving write: reissue first", func(o *Observed) {
			o.Previous, o.PruneAt, o.Serving = oldCA.Cert, now, fromOld
		}, IssueServing, string(certs.ReasonCAChanged), time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base()
			tt.mutate(&o)
			got := Plan(o)
			if got.Kind != tt.kind || got.Reason != tt.reason {
				t.Fatalf("Plan = %s/%q (%s), want %s/%q", got.Kind, got.Reason, got.Message, tt.kind, tt.reason)
			}
			if !got.DueAt.Equal(tt.due) {
				t.Errorf("DueAt = %s, want %s", got.DueAt, tt.due)
			}
		})
	}
}

func parse(t *testing.T, pemBytes []byte) *x509.Certificate {
	t.Helper()
	c, err := certs.ParseCert(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestBundleStableAcrossPromotion: [active, next] and, after promotion,
// [previous, active] are the same bytes, so promotion rewrites no CRD.
func TestBundleStableAcrossPromotion(t *testing.T) {
	oldCA := mustCA(t, now.Add(-time.Hour), 300*time.Hour)
	newCA := mustCA(t, now, 300*time.Hour)
	during := Bundle(oldCA, newCA, nil)
	after := Bundle(newCA, nil, oldCA.Cert)
	if string(during) != string(after) {
		t.Fatal("the bundle changed bytes at promotion")
	}
	if string(Bundle(newCA, nil, nil)) == string(after) {
		t.Fatal("pruning must change the bundle")
	}
}

// TestTrustMatrix: which serving certificate verifies under which bundle,
// at every stage of a CA rotation. A rotation is safe when, at every
// stage, every certificate a pod may still present verifies.
func TestTrustMatrix(t *testing.T) {
	oldCA := mustCA(t, now.Add(-time.Hour), 300*time.Hour)
	newCA := mustCA(t, now, 300*time.Hour)
	oldServing := mustServing(t, oldCA, now, 30*time.Hour)
	newServing := mustServing(t, newCA, now, 30*time.Hour)
	bundles := map[string][]byte{
		"old":             Bundle(oldCA, nil, nil),
		"during-rotation": Bundle(oldCA, newCA, nil),
		"overlap":         Bundle(newCA, nil, oldCA.Cert),
		"new":             Bundle(newCA, nil, nil),
	}
	servings := map[string]*certs.KeyPair{"old": oldServing, "new": newServing}
	want := map[[2]string]bool{
		{"old", "old"}: true, {"old", "during-rotation"}: true, {"old", "overlap"}: true, {"old", "new"}: false,
		{"new", "old"}: false, {"new", "during-rotation"}: true, {"new", "overlap"}: true, {"new", "new"}: true,
	}
	for key, ok := range want {
		err := certs.VerifyServing(servings[key[0]].CertPEM, bundles[key[1]], "svc.ns.svc", now)
		if (err == nil) != ok {
			t.Errorf("serving %s under bundle %s: verified=%v, want %v (%v)", key[0], key[1], err == nil, ok, err)
		}
	}
}
