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
	renewServing := policy.RenewAt(parse(t, serving.CertPEM))
	dueServing := mustServing(t, oldCA, now.Add(-25*time.Hour), policy.ServingLifetime) // due, from the due CA
	cappedServing := mustServing(t, oldCA, now.Add(-40*time.Hour), 300*time.Hour)       // cut to the due CA's expiry
	expiredServing := mustServing(t, oldCA, now.Add(-31*time.Hour), policy.ServingLifetime)
	expiredCA := mustCA(t, now.Add(-301*time.Hour), policy.CALifetime)
	fromExpired := mustServing(t, expiredCA, now.Add(-10*time.Hour), policy.ServingLifetime)
	staleNext := mustCA(t, now.Add(-250*time.Hour), policy.CALifetime)
	lost := mustCA(t, now.Add(-10*time.Hour), policy.CALifetime) // a healthy CA the CA Secret no longer holds
	fromLost := mustServing(t, lost, now.Add(-time.Hour), policy.ServingLifetime)
	known := func(cas ...*certs.CA) []*x509.Certificate {
		var out []*x509.Certificate
		for _, ca := range cas {
			out = append(out, ca.Cert)
		}
		return out
	}
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
		{"policy changed algorithm: the CA first, promotion reissues serving", func(o *Observed) { o.Policy.KeyAlgorithm = certs.ECDSAP384 }, StartCARotation, string(certs.ReasonPolicyChanged), time.Time{}},
		{"policy changed serving lifetime", func(o *Observed) { o.Policy.ServingLifetime = 20 * time.Hour }, IssueServing, string(certs.ReasonPolicyChanged), time.Time{}},
		{"next not yet in every CRD", func(o *Observed) { o.Next = next }, Wait, "", renewServing},
		{"next published but not settled", func(o *Observed) {
			o.Next, o.NextTrustedFor = next, 500*time.Millisecond
		}, Wait, "", now.Add(SettleTime - 500*time.Millisecond)},
		{"next settled: promote", func(o *Observed) {
			o.Next, o.NextTrustedFor = next, SettleTime
		}, Promote, "", time.Time{}},
		{"manual CA waits while a rotation is under way", func(o *Observed) {
			o.Next, o.ManualCA = next, "again"
		}, Wait, "", renewServing},
		{"previous kept until rollout", func(o *Observed) {
			o.Previous, o.PruneAt, o.RolledOut = []*x509.Certificate{oldCA.Cert}, now.Add(-time.Second), false
		}, Wait, "", renewServing},
		{"previous kept for the overlap", func(o *Observed) {
			o.Previous, o.PruneAt = []*x509.Certificate{oldCA.Cert}, now.Add(30*time.Second)
		}, Wait, "", now.Add(30 * time.Second)},
		{"overlap passed and rolled out: prune", func(o *Observed) {
			o.Previous, o.PruneAt = []*x509.Certificate{oldCA.Cert}, now
		}, Prune, "", time.Time{}},
		{"restart after promote before the serving write: move the serving certificate first", func(o *Observed) {
			o.Previous, o.PruneAt, o.Serving, o.ActiveTrustedFor = []*x509.Certificate{oldCA.Cert}, now, fromOld, SettleTime
		}, MoveServing, "", time.Time{}},

		// The CA's health comes before serving renewal; nothing is issued
		// from a due or expired CA.
		{"CA and serving due: rotate the CA, never reissue from it", func(o *Observed) {
			o.Active, o.Serving = oldCA, dueServing
		}, StartCARotation, string(certs.ReasonExpiring), time.Time{}},
		{"serving cut to the due CA's expiry: rotate the CA", func(o *Observed) {
			o.Active, o.Serving = oldCA, cappedServing
		}, StartCARotation, string(certs.ReasonExpiring), time.Time{}},
		{"CA and serving due, manual serving: rotate the CA first", func(o *Observed) {
			o.Active, o.Serving, o.ManualServing = oldCA, dueServing, "leak"
		}, StartCARotation, string(certs.ReasonExpiring), time.Time{}},
		{"CA due and manual CA: one rotation carries the request", func(o *Observed) {
			o.Active, o.Serving, o.ManualCA = oldCA, dueServing, "leak"
		}, StartCARotation, ReasonManual, time.Time{}},
		{"rotation under way from a due CA, serving due: wait, no reissue", func(o *Observed) {
			o.Active, o.Serving, o.Next = oldCA, dueServing, next
		}, Wait, "", parse(t, dueServing.CertPEM).NotAfter},
		{"rotation under way from a healthy CA, serving due: renew from it", func(o *Observed) {
			o.Serving, o.Next = staleServing, next
		}, IssueServing, string(certs.ReasonExpiring), time.Time{}},
		{"rotation under way, settled, serving due: promote", func(o *Observed) {
			o.Active, o.Serving, o.Next, o.NextTrustedFor = oldCA, dueServing, next, SettleTime
		}, Promote, "", time.Time{}},
		{"next due before its promotion: replaced", func(o *Observed) {
			o.Active, o.Serving, o.Next, o.NextTrustedFor = oldCA, dueServing, staleNext, SettleTime
		}, StartCARotation, string(certs.ReasonExpiring), time.Time{}},
		{"next expired before its promotion: replaced", func(o *Observed) {
			o.Next, o.NextTrustedFor = expiredCA, SettleTime
		}, StartCARotation, string(certs.ReasonExpiring), time.Time{}},
		{"serving missing, CA due: repaired from it (nothing else to serve)", func(o *Observed) {
			o.Active, o.Serving = oldCA, nil
		}, IssueServing, string(certs.ReasonMissing), time.Time{}},
		{"serving expired, CA due: repaired from it", func(o *Observed) {
			o.Active, o.Serving = oldCA, expiredServing
		}, IssueServing, string(certs.ReasonExpiring), time.Time{}},
		{"serving missing during a rotation: repaired before promotion", func(o *Observed) {
			o.Serving, o.Next, o.NextTrustedFor = nil, next, SettleTime
		}, IssueServing, string(certs.ReasonMissing), time.Time{}},
		{"previous kept, serving due, CA healthy: renewed", func(o *Observed) {
			o.Previous, o.PruneAt, o.Serving = []*x509.Certificate{oldCA.Cert}, now.Add(time.Hour), staleServing
		}, IssueServing, string(certs.ReasonExpiring), time.Time{}},
		{"previous kept, CA due: the overlap is cut short", func(o *Observed) {
			o.Active, o.Serving, o.Previous, o.PruneAt = oldCA, dueServing, []*x509.Certificate{staleNext.Cert}, now.Add(time.Hour)
		}, Prune, "", time.Time{}},
		{"overlap longer than the serving renewal: wake for the renewal", func(o *Observed) {
			o.Previous, o.PruneAt = []*x509.Certificate{oldCA.Cert}, now.Add(100*time.Hour)
		}, Wait, "", renewServing},

		// The CA Secret lost the CA the pods serve a chain to: the trust
		// of the CRDs' caBundle is kept, and left in order.
		{"CA Secret deleted while the CRDs trust its CA: new CA, old trust kept", func(o *Observed) {
			o.Active, o.ActiveOK, o.Serving, o.Known = nil, certs.Verdict{Reason: certs.ReasonMissing, Message: "no CA"}, fromLost, known(lost)
		}, KeepTrust, string(certs.ReasonMissing), time.Time{}},
		{"CA Secret garbled while the CRDs trust its CA: new CA, old trust kept", func(o *Observed) {
			o.Active, o.ActiveOK, o.Serving, o.Known = nil, certs.Verdict{Reason: certs.ReasonInvalid, Message: "unusable"}, fromLost, known(lost)
		}, KeepTrust, string(certs.ReasonInvalid), time.Time{}},
		{"CA Secret and serving Secret deleted: the CRDs' trust is kept all the same", func(o *Observed) {
			o.Active, o.ActiveOK, o.Serving, o.Known = nil, certs.Verdict{Reason: certs.ReasonMissing, Message: "no CA"}, nil, known(lost)
		}, KeepTrust, string(certs.ReasonMissing), time.Time{}},
		{"CA Secret overwritten with a foreign CA: the old trust kept", func(o *Observed) {
			o.Serving, o.Known = fromLost, known(lost)
		}, KeepTrust, string(certs.ReasonCAChanged), time.Time{}},
		{"the CRDs trust only an expired CA: nothing to keep, from scratch", func(o *Observed) {
			o.Active, o.ActiveOK, o.Serving, o.Known = nil, certs.Verdict{Reason: certs.ReasonInvalid, Message: "unusable"}, fromExpired, known(expiredCA)
		}, IssueInitial, string(certs.ReasonInvalid), time.Time{}},
		{"serving Secret replaced by a foreign one: reissued, its CA never trusted", func(o *Observed) {
			o.Serving, o.Known = fromLost, known(fresh)
		}, IssueServing, string(certs.ReasonCAChanged), time.Time{}},
		{"the CRDs trust exactly the stored CAs: nothing kept", func(o *Observed) {
			o.Known = known(fresh)
		}, Nothing, "", policy.RenewAt(parse(t, serving.CertPEM))},
		{"a leftover CA in the caBundle while the Secret vouches for the serving certificate: nothing kept", func(o *Observed) {
			o.Known = known(fresh, lost)
		}, Nothing, "", policy.RenewAt(parse(t, serving.CertPEM))},
		{"kept trust, serving chains to it, new CA not settled: wait", func(o *Observed) {
			o.Previous, o.PruneAt, o.Serving, o.Known, o.ActiveTrustedFor = known(lost), now.Add(time.Minute), fromLost, known(lost, fresh), 500*time.Millisecond
		}, Wait, "", now.Add(SettleTime - 500*time.Millisecond)},
		{"kept trust, new CA settled: move the serving certificate to it", func(o *Observed) {
			o.Previous, o.PruneAt, o.Serving, o.Known, o.ActiveTrustedFor = known(lost), now.Add(time.Minute), fromLost, known(lost, fresh), SettleTime
		}, MoveServing, "", time.Time{}},

		// An expired CA is replaced from scratch.
		{"CA expired", func(o *Observed) {
			o.Active, o.Serving = expiredCA, fromExpired
		}, IssueInitial, ReasonCAExpired, time.Time{}},
		{"CA expired, manual CA request: carried out from scratch", func(o *Observed) {
			o.Active, o.Serving, o.ManualCA = expiredCA, fromExpired, "it expired"
		}, IssueInitial, ReasonManual, time.Time{}},
		{"CA expired, manual serving request: carried out from scratch", func(o *Observed) {
			o.Active, o.Serving, o.ManualServing = expiredCA, fromExpired, "it expired"
		}, IssueInitial, ReasonManual, time.Time{}},
		{"CA expired mid-rotation: from scratch, next dropped", func(o *Observed) {
			o.Active, o.Serving, o.Next, o.NextTrustedFor = expiredCA, fromExpired, next, SettleTime
		}, IssueInitial, ReasonCAExpired, time.Time{}},
		{"CA expired during the overlap: from scratch", func(o *Observed) {
			o.Active, o.Serving, o.Previous, o.PruneAt = expiredCA, fromExpired, []*x509.Certificate{staleNext.Cert}, now.Add(time.Hour)
		}, IssueInitial, ReasonCAExpired, time.Time{}},
		{"CA expired, serving missing: from scratch", func(o *Observed) {
			o.Active, o.Serving = expiredCA, nil
		}, IssueInitial, ReasonCAExpired, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base()
			tt.mutate(&o)
			got := Plan(o)
			if got.Kind != tt.kind || got.Reason != tt.reason {
				t.Fatalf("Plan = %s/%q (%s), want %s/%q", got.Kind, got.Reason, got.Message, tt.kind, tt.reason)
			}
			if got.Kind == KeepTrust && (len(got.Keep) != 1 || got.Keep[0] != lost.Cert) {
				t.Errorf("Keep = %d CAs, want the lost CA alone", len(got.Keep))
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
