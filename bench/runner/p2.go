package runner

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

// p2 measures how late a serving renewal starts after it is due. Installs
// get a short serving lifetime; each certificate is due at NotAfter minus
// renewBefore (exact: NotAfter has whole seconds, and Hookwright derives
// the due time from the certificate the same way). The rotation starts
// with Hookwright's write of the new serving Secret, timed by the API
// server (audit requestReceivedTimestamp, microseconds).
func (b *bench) p2(ctx context.Context) error {
	k := b.sz.p2Installs
	nss := names("p2-%02d", k)
	if err := parallel(k, 8, func(i int) error {
		if err := b.namespace(ctx, nss[i]); err != nil {
			return err
		}
		b.cluster.Kubelet.Serve(nss[i], webhookDeployment, converterHost{})
		return b.createCRD(ctx, convertedCRD(nss[i], crdKinds[0], nil))
	}); err != nil {
		return err
	}
	mark, err := b.audit.mark()
	if err != nil {
		return err
	}
	policy := v1alpha1.CertificatePolicy{
		ServingLifetime: &metav1.Duration{Duration: b.sz.p2Lifetime},
		RenewBefore:     &metav1.Duration{Duration: b.sz.p2RenewBefore},
	}
	var keys []types.NamespacedName
	for _, ns := range nss {
		if err := b.c.Create(ctx, webhookInstall(ns, crdNames(ns, 1), policy)); err != nil {
			return err
		}
		keys = append(keys, types.NamespacedName{Namespace: ns, Name: installName})
	}
	if _, err := b.observer.waitAll(ctx, b.observer.verified, keys, time.Now().Add(b.sz.installTimeout)); err != nil {
		return err
	}
	period := b.sz.p2Lifetime - b.sz.p2RenewBefore
	b.logf("P2: %d installs renewing their serving certificate every %s; waiting for %d renewals each", k, period, b.sz.p2Rotations)
	secretName := desired.ServingSecretName(webhookService)
	deadline := time.Now().Add(time.Duration(b.sz.p2Rotations+1)*period + 30*time.Second)
	for _, ns := range nss {
		key := types.NamespacedName{Namespace: ns, Name: secretName}
		for len(b.observer.servingCerts(key)) < b.sz.p2Rotations+1 {
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: %d serving certificates seen, want %d", key, len(b.observer.servingCerts(key)), b.sz.p2Rotations+1)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	seen := map[string][]servingCert{}
	for _, ns := range nss {
		seen[ns] = b.observer.servingCerts(types.NamespacedName{Namespace: ns, Name: secretName})
	}
	delays, err := b.renewalDelays(mark, seen, secretName, renewalAuditWait)
	if err != nil {
		return err
	}
	if len(delays) == 0 {
		return fmt.Errorf("no renewal write found in the audit log")
	}
	worst := math.Inf(-1)
	for _, d := range delays {
		worst = math.Max(worst, d.Seconds())
	}
	p50 := percentile(durations(delays), 50)
	b.report.P2 = &p2Result{Delays: delays, Installs: k, Period: period}
	b.report.setRow(Row{
		ID: "P2", Measure: fmt.Sprintf("Rotation due → start, p50 / max over %d serving renewals", len(delays)),
		Goal: "≤ 1 s", Hookwright: ms(p50) + " / " + ms(worst), Anchor: "not measured: checks every 12 h by default (RotationCheckFrequency)",
		Met: metText(worst <= 1),
	})
	b.logf("P2: p50 %s, max %s", ms(p50), ms(worst))

	// The short-lived installs would keep renewing: remove them before the
	// idle measures. Their CRDs go first: deleting an install whose CRD
	// serves two versions with different schemas keeps its webhook alive
	// (switching the CRD to conversion None could make objects unreadable).
	for _, ns := range nss {
		for _, name := range crdNames(ns, 1) {
			crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if err := b.c.Delete(ctx, crd); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
		if err := b.c.Delete(ctx, &v1alpha1.WebhookInstall{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: installName}}); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	gone := time.Now().Add(time.Minute)
	for _, ns := range nss {
		for {
			err := b.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: installName}, &v1alpha1.WebhookInstall{})
			if client.IgnoreNotFound(err) == nil && err != nil {
				break
			}
			if time.Now().After(gone) {
				return fmt.Errorf("install %s/%s not deleted within a minute", ns, installName)
			}
			time.Sleep(100 * time.Millisecond)
		}
		b.cluster.Kubelet.Forget(ns, webhookDeployment)
	}
	return nil
}

// renewalAuditWait bounds how long P2 waits for a renewal's write to reach
// the audit log after the watch saw the new certificate.
const renewalAuditWait = 30 * time.Second

// renewalDelays finds, per namespace, the write of secretName that started
// each renewal seen (the first write after the replaced certificate was
// published, and not long before it was due) and returns how late each
// started. The API server writes a request's ResponseComplete audit event
// after it answered, so a watch can see the new certificate before the
// audit log holds the write: the log is read again until every renewal's
// write is in it, for up to wait.
func (b *bench) renewalDelays(mark int, seen map[string][]servingCert, secretName string, wait time.Duration) ([]time.Duration, error) {
	deadline := time.Now().Add(wait)
	for {
		events, err := b.audit.since(mark, operatorUser)
		if err != nil {
			return nil, err
		}
		delays, missing := b.matchRenewals(writesOf(events), seen, secretName)
		if missing == 0 || time.Now().After(deadline) {
			return delays, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// matchRenewals returns the delay of every renewal seen whose write is in
// writes, and how many renewals have none yet.
func (b *bench) matchRenewals(writes []auditEvent, seen map[string][]servingCert, secretName string) (delays []time.Duration, missing int) {
	for ns, certs := range seen {
		var received []time.Time
		for _, e := range writes {
			if e.ObjectRef.Resource == "secrets" && e.ObjectRef.Namespace == ns && e.ObjectRef.Name == secretName {
				received = append(received, e.Received)
			}
		}
		sort.Slice(received, func(i, j int) bool { return received[i].Before(received[j]) })
		for i := 1; i <= b.sz.p2Rotations && i < len(certs); i++ {
			due := certs[i-1].notAfter.Add(-b.sz.p2RenewBefore)
			// The renewal is the first write of the Secret after the
			// replaced certificate was published (and not long before due).
			after := certs[i-1].seen
			if early := due.Add(-2 * time.Second); early.After(after) {
				after = early
			}
			found := false
			for _, w := range received {
				if w.After(after) {
					delays = append(delays, w.Sub(due))
					found = true
					break
				}
			}
			if !found {
				missing++
			}
		}
	}
	return delays, missing
}
