package testcluster

// Plain tests of the stand-ins' own lifecycle, without an API server: the
// clock is fake and reads come from a stub, so nothing here waits on time.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// secretStub serves one Secret to Get. While block is set, Get reports
// that it runs (entered), waits for its context to end, reports that
// (cancelled) and returns only once released: a refresh stuck on the API
// server when the kubelet stops.
type secretStub struct {
	cache.Cache // only Get is used
	secret      *corev1.Secret
	block       atomic.Bool
	entered     chan struct{}
	cancelled   chan struct{}
	release     chan struct{}
	podDir      string
	gets        atomic.Int64
}

func (s *secretStub) Get(ctx context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s.gets.Add(1)
	if s.block.Load() {
		s.entered <- struct{}{}
		<-ctx.Done()
		// Let a stopAll that does not wait finish first: it removes the
		// pod's folder, then returns.
		for _, err := os.Stat(s.podDir); err == nil; _, err = os.Stat(s.podDir) {
			runtime.Gosched()
		}
		for range 10 {
			runtime.Gosched()
		}
		s.cancelled <- struct{}{}
		<-s.release
		return ctx.Err()
	}
	s.secret.DeepCopyInto(obj.(*corev1.Secret))
	return nil
}

// kubeletWithPod is a kubelet (never started) running one pod stand-in
// whose Pod mounts Secret "cert", on a fake clock.
func kubeletWithPod(t *testing.T) (*Kubelet, *pod, *secretStub, *clocktesting.FakeClock) {
	g := NewWithT(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cert"}, Data: map[string][]byte{"tls.crt": []byte("one")}}
	stub := &secretStub{secret: secret, entered: make(chan struct{}, 1), cancelled: make(chan struct{}, 1), release: make(chan struct{})}
	fake := clocktesting.NewFakeClock(time.Now())
	k := newKubelet(nil, stub, newNetwork(nil), t.TempDir(), logr.Discard())
	k.clock = fake
	k.SetPropagationDelay(time.Minute)

	obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "hook-abc12"}}
	obj.Spec.Volumes = []corev1.Volume{{Name: "cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "cert"}}}}
	obj.Spec.Containers = []corev1.Container{{Name: "webhook", VolumeMounts: []corev1.VolumeMount{{Name: "cert", MountPath: DefaultCertMount}}}}
	p, err := newPod(obj, types.NamespacedName{Namespace: "ns", Name: "hook"}, "10.88.0.1", k.baseDir, serveOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.materialize(context.Background(), stub)).To(Succeed())
	k.pods[client.ObjectKeyFromObject(obj)] = p
	stub.podDir = p.dir
	return k, p, stub, fake
}

func TestStopCancelsSecretRefreshesStillWaitingOutTheDelay(t *testing.T) {
	g := NewWithT(t)
	k, p, stub, fake := kubeletWithPod(t)
	stub.secret.Data["tls.crt"] = []byte("two")
	k.secretChanged(stub.secret)
	g.Expect(fake.HasWaiters()).To(BeTrue(), "the refresh waits out the propagation delay")
	gets := stub.gets.Load()

	k.stopAll()
	g.Expect(fake.HasWaiters()).To(BeFalse(), "a Secret refresh timer outlived stopAll")
	fake.Step(time.Minute)
	g.Expect(stub.gets.Load()).To(Equal(gets), "a Secret refresh ran after stopAll")
	g.Expect(p.dir).NotTo(BeAnExistingFile(), "the stopped pod's folder came back")

	k.secretChanged(stub.secret)
	g.Expect(fake.HasWaiters()).To(BeFalse(), "a stopped kubelet schedules nothing")
}

func TestStopWaitsForARefreshUnderWay(t *testing.T) {
	// A stopAll that does not wait returns right after cancelling the
	// refresh's context and removing the pod, racing the check below: the
	// stub lets it win, and a few rounds make sure.
	for round := range 20 {
		g := NewWithT(t)
		k, p, stub, fake := kubeletWithPod(t)
		stub.block.Store(true)
		k.secretChanged(stub.secret)
		stepped := make(chan struct{})
		go func() { defer close(stepped); fake.Step(time.Minute) }() // the fake clock runs the refresh in Step
		<-stub.entered

		stopped := make(chan struct{})
		go func() { defer close(stopped); k.stopAll() }()
		<-stub.cancelled // stopAll ended the refresh's context; the refresh still runs
		select {
		case <-stopped:
			t.Fatalf("round %d: stopAll returned while a Secret refresh was still running", round)
		default:
		}
		close(stub.release)
		<-stopped
		<-stepped
		g.Expect(p.dir).NotTo(BeAnExistingFile(), "the stopped pod's folder came back")
	}
}

// TestProxyRefusesUntilRoutedThenTunnels runs CONNECTs while the network
// is handed to the proxy: under -race a resolver read without
// synchronization is reported.
func TestProxyRefusesUntilRoutedThenTunnels(t *testing.T) {
	g := NewWithT(t)
	backend, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer backend.Close()
	go func() {
		for {
			conn, err := backend.Accept()
			if err != nil {
				return
			}
			go func() { defer conn.Close(); _, _ = io.Copy(conn, conn) }()
		}
	}()
	socket := filepath.Join(t.TempDir(), "egress.sock")
	proxy, err := startConnectProxy(socket, logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	defer proxy.Close()

	connect := func() (int, error) {
		conn, err := net.Dial("unix", socket)
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		if _, err := fmt.Fprintf(conn, "CONNECT 10.0.0.1:443 HTTP/1.1\r\nHost: 10.0.0.1:443\r\n\r\n"); err != nil {
			return 0, err
		}
		reader := bufio.NewReader(conn)
		resp, err := http.ReadResponse(reader, &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != http.StatusOK {
			if resp != nil {
				return resp.StatusCode, err
			}
			return 0, err
		}
		if _, err := io.WriteString(conn, "ping"); err != nil {
			return 0, err
		}
		echo := make([]byte, 4)
		if _, err := io.ReadFull(reader, echo); err != nil || string(echo) != "ping" {
			return 0, fmt.Errorf("tunnel echoed %q: %v", echo, err)
		}
		return http.StatusOK, nil
	}

	g.Expect(connect()).To(Equal(http.StatusServiceUnavailable), "no network yet")
	statuses := make(chan int, 20)
	go func() {
		defer close(statuses)
		for range 20 {
			status, _ := connect()
			statuses <- status
		}
	}()
	proxy.route(func(context.Context, string, int32) (route, error) { return route{addr: backend.Addr().String()}, nil })
	for status := range statuses {
		g.Expect(status).To(BeElementOf(http.StatusServiceUnavailable, http.StatusOK))
	}
	g.Expect(connect()).To(Equal(http.StatusOK), "routed")
}
