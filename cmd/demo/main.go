// Command demo runs Hookwright's main job on a local control plane built
// from Go modules (see `make demo`). It imports the test ground, so it is a
// command of its own: the operator binary never links it.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hookwright/hookwright/internal/testcluster"
)

func main() {
	exit := flag.Bool("exit", false, "stop the control plane at the end instead of waiting for Ctrl-C")
	flag.Parse()
	if err := run(*exit); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(exitAtEnd bool) error {
	step("Starting a local control plane (kube-apiserver " + testcluster.KubeVersion + ", etcd, stand-in network and kubelet)")
	cluster, err := testcluster.Start(testcluster.Options{})
	if err != nil {
		return err
	}
	defer func() {
		step("Stopping the control plane")
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "demo: stopping:", err)
		}
	}()
	step("Control plane ready: export KUBECONFIG=" + cluster.KubeconfigPath)
	if exitAtEnd {
		return nil
	}
	step("Press Ctrl-C to stop")
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	return nil
}

func step(msg string) { fmt.Println("==>", msg) }
