package e2e_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The README's run command, `make demo`, runs cmd/demo; with --exit it
// stops at the end, so this test runs the whole demo and keeps it true.
var _ = Describe("make demo", func() {
	It("runs end to end and reports zero failed reads during the CA rotation", func(ctx context.Context) {
		bin := filepath.Join(GinkgoT().TempDir(), "demo")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/demo")
		build.Dir = filepath.Join("..", "..")
		build.Stdout, build.Stderr = GinkgoWriter, GinkgoWriter
		Expect(build.Run()).To(Succeed())

		var out bytes.Buffer
		demo := exec.CommandContext(ctx, bin, "--exit")
		demo.Dir = filepath.Join("..", "..")
		demo.Stdout, demo.Stderr = &out, &out
		Expect(demo.Run()).To(Succeed(), out.String())
		for _, line := range []string{
			"WebhookInstall Succeeded",
			"read in v2: map[dayOfMonth:* dayOfWeek:* hour:2 image:backup:1 minute:30 month:*]",
			"read in v1: map[cronSpec:*/5 * * * 1-5 image:poll:2]",
			"reads, 0 failed",
			"CARotationCompleted",
			"Demo complete",
		} {
			Expect(out.String()).To(ContainSubstring(line))
		}
		AddReportEntry("demo output", out.String())
	}, SpecTimeout(20*time.Minute)) // a go build, then a control plane: minutes on a loaded machine, not a property of the demo
})
