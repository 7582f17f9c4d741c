package faults_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hookwright/hookwright/internal/audit"
)

// runAudit runs `hookwright audit` against the suite's cluster.
func runAudit(args ...string) string {
	GinkgoHelper()
	var stdout, stderr bytes.Buffer
	Expect(audit.Main(args, &stdout, &stderr, cluster.Config)).To(Equal(0), stderr.String())
	return stdout.String()
}

var _ = Describe("hookwright audit", func() {
	It("lists every rotation once, oldest first, as the install's status records them", func(ctx context.Context) {
		f := newFixture(ctx)
		Expect(k8s.Create(ctx, f.install())).To(Succeed())
		op := startOperator(newCrashAfter(f.ns, nil))
		Eventually(func(g Gomega) { f.settled(ctx, g) }).Should(Succeed())
		// Rotation times have one-second precision: start the manual ones in
		// a later second than the install's first certificates.
		beforeManual := time.Now().Truncate(time.Second).Add(time.Second)
		time.Sleep(time.Until(beforeManual))
		for _, request := range []string{"serving: audit 1", "ca: audit 2", "serving: audit 3"} {
			f.requestRotation(ctx, request)
			Eventually(func(g Gomega) {
				whi := f.settled(ctx, g)
				g.Expect(whi.Status.HandledRotationRequest).To(Equal(request))
			}, 2*time.Minute).Should(Succeed())
		}
		Expect(op.Stop()).To(Succeed())
		whi := f.get(ctx)
		Expect(len(whi.Status.Rotations)).To(BeNumerically(">=", 5), "initial CA and serving, then three manual: %+v", whi.Status.Rotations)

		var report audit.Report
		Expect(json.Unmarshal([]byte(runAudit("-n", f.ns, "-o", "json")), &report)).To(Succeed())
		var got, want []string
		for _, r := range report.Rotations {
			got = append(got, r.Kind+" "+r.NewFingerprint+" "+r.Outcome)
		}
		for _, rec := range whi.Status.Rotations {
			want = append(want, string(rec.Kind)+" "+rec.NewFingerprint+" "+string(rec.Outcome))
		}
		Expect(got).To(Equal(want), "each rotation once, in the order it started")
		Expect(report.Installs).To(HaveLen(1))
		Expect(report.Installs[0].LastRotation.Message).To(Equal("audit 3"))
		Expect(report.Installs[0].Services).To(HaveLen(1))
		Expect(report.Installs[0].Services[0].CAFingerprint).To(Equal(whi.Status.Services[0].CAFingerprint))

		table := runAudit("-n", f.ns)
		_, rotations, found := strings.Cut(table, "\nROTATIONS")
		Expect(found).To(BeTrue(), table)
		var newColumn []string // STARTED NAMESPACE INSTALL SERVICE KIND REASON OUTCOME COMPLETED OLD NEW SOURCE
		for _, line := range strings.Split(strings.TrimSpace(rotations), "\n")[2:] {
			newColumn = append(newColumn, strings.Fields(line)[9])
		}
		var wantNew []string
		for _, rec := range whi.Status.Rotations {
			wantNew = append(wantNew, rec.NewFingerprint)
		}
		Expect(newColumn).To(Equal(wantNew), "the table's rotations, in order:\n%s", table)

		var since audit.Report
		Expect(json.Unmarshal([]byte(runAudit("-n", f.ns, "-o", "json", "--since", beforeManual.Format(time.RFC3339))), &since)).To(Succeed())
		reasons := map[string]int{}
		for _, r := range since.Rotations {
			Expect(r.Started.Time).NotTo(BeTemporally("<", beforeManual), "%+v", r)
			reasons[r.Reason]++
		}
		Expect(reasons).NotTo(HaveKey("Initial"), "--since leaves the install's first certificates out")
		Expect(since.Rotations).NotTo(BeEmpty())
	})
})
