package testcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// errSecretMissing keeps a pod from starting, as kubelet keeps a pod in
// ContainerCreating until every non-optional Secret volume exists.
var errSecretMissing = errors.New("secret volume not found")

// secretVolume is one Secret volume of the pod, published under dir.
type secretVolume struct {
	secret   string
	items    []corev1.KeyToPath
	optional bool
	dir      string
}

// pod is the running stand-in for one Pod bound to the node: its
// container's host, its folders and its address on the cluster network.
type pod struct {
	key        types.NamespacedName // the Pod
	uid        types.UID
	deployment types.NamespacedName // whose host it runs
	ip         string               // its pod IP on the stand-in network
	port       int32                // the containerPort the host serves
	restarts   int32                // of its container, as kubelet counts them
	started    time.Time
	dir        string
	env        *PodEnv
	volumes    []secretVolume
	addr       string // the host's loopback listener, where the pod IP leads
	container  string // the container whose host it runs

	writeMu     sync.Mutex // serializes volume refreshes
	removed     bool       // under writeMu: stop removed the folders, nothing is written any more
	cancel      context.CancelFunc
	done        chan struct{}
	ready       atomic.Bool
	exited      atomic.Bool
	terminating atomic.Bool // the Pod is being deleted: the host drains
	drained     atomic.Bool // the draining host has exited
	lost        atomic.Bool // its node was lost (Kubelet.Forget): stopped, unreported
}

// newPod lays out the pod's folders from the Pod's spec: only the Secret
// and emptyDir volumes the chosen container mounts become folders, so a
// host can reach nothing else.
func newPod(obj *corev1.Pod, deployment types.NamespacedName, ip, baseDir string, opts serveOptions) (*pod, error) {
	container, err := pickContainer(obj.Spec.Containers, opts.container)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", obj.Namespace, obj.Name, err)
	}
	dir, err := os.MkdirTemp(baseDir, "pod-")
	if err != nil {
		return nil, err
	}
	p := &pod{
		key:        client.ObjectKeyFromObject(obj),
		uid:        obj.UID,
		deployment: deployment,
		ip:         ip,
		port:       servedPort(container, opts.port),
		container:  container.Name,
		dir:        dir,
		env:        &PodEnv{Namespace: obj.Namespace, Deployment: deployment.Name, Pod: obj.Name, mounts: map[string]string{}, ready: make(chan struct{})},
		done:       make(chan struct{}),
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range obj.Spec.Volumes {
		volumes[v.Name] = v
	}
	seen := map[string]string{}
	for _, m := range container.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok || m.SubPath != "" {
			continue // kubelet would reject the first; subPath mounts are not modelled
		}
		volDir, done := seen[v.Name]
		if !done {
			volDir = filepath.Join(dir, "volumes", v.Name)
			switch {
			case v.Secret != nil:
				p.volumes = append(p.volumes, secretVolume{
					secret: v.Secret.SecretName, items: v.Secret.Items,
					optional: v.Secret.Optional != nil && *v.Secret.Optional, dir: volDir,
				})
			case v.EmptyDir != nil:
				if err := os.MkdirAll(volDir, 0o755); err != nil {
					return nil, err
				}
			default:
				continue
			}
			seen[v.Name] = volDir
		}
		p.env.mounts[filepath.Clean(m.MountPath)] = volDir
	}
	return p, nil
}

func pickContainer(containers []corev1.Container, name string) (*corev1.Container, error) {
	for i := range containers {
		if name == "" || containers[i].Name == name {
			return &containers[i], nil
		}
	}
	return nil, fmt.Errorf("no container %q in the pod template", name)
}

// preStopSleep is how long kubelet runs the served container's preStop
// sleep action before SIGTERM, for the Pod as it is being deleted: bounded
// by the deletion's grace period (the Pod's terminationGracePeriodSeconds
// unless the delete asked for less), as kubelet bounds every hook. Other
// handler kinds (exec, httpGet) are not modelled: they take no time here.
func (p *pod) preStopSleep(obj *corev1.Pod) time.Duration {
	c, err := pickContainer(obj.Spec.Containers, p.container)
	if err != nil || c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
		return 0
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	switch {
	case obj.DeletionGracePeriodSeconds != nil:
		grace = *obj.DeletionGracePeriodSeconds
	case obj.Spec.TerminationGracePeriodSeconds != nil:
		grace = *obj.Spec.TerminationGracePeriodSeconds
	}
	return time.Duration(min(c.Lifecycle.PreStop.Sleep.Seconds, grace)) * time.Second
}

// runPreStop runs the preStop sleep; the host serves on meanwhile, as a
// container does until its SIGTERM. It ends early when ctx does (the
// node stops).
func runPreStop(ctx context.Context, sleep time.Duration) {
	if sleep <= 0 {
		return
	}
	t := time.NewTimer(sleep)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// servedPort is the containerPort the host stands for: the one asked for,
// else the container's first declared port, else controller-runtime's 9443.
func servedPort(c *corev1.Container, asked int32) int32 {
	switch {
	case asked != 0:
		return asked
	case len(c.Ports) > 0:
		return c.Ports[0].ContainerPort
	default:
		return 9443
	}
}

// materialize publishes every Secret volume; a missing non-optional Secret
// returns errSecretMissing.
func (p *pod) materialize(ctx context.Context, reader client.Reader) error {
	for _, v := range p.volumes {
		if _, err := p.writeVolume(ctx, reader, v); err != nil {
			return err
		}
	}
	return nil
}

// refreshSecret re-publishes the volumes of one Secret, as kubelet's
// periodic sync does; it reports whether any file changed.
func (p *pod) refreshSecret(ctx context.Context, reader client.Reader, name string) (bool, error) {
	changed := false
	for _, v := range p.volumes {
		if v.secret != name {
			continue
		}
		c, err := p.writeVolume(ctx, reader, v)
		if err != nil {
			return changed, err
		}
		changed = changed || c
	}
	return changed, nil
}

func (p *pod) writeVolume(ctx context.Context, reader client.Reader, v secretVolume) (bool, error) {
	var secret corev1.Secret
	err := reader.Get(ctx, types.NamespacedName{Namespace: p.key.Namespace, Name: v.secret}, &secret)
	if client.IgnoreNotFound(err) != nil {
		return false, err
	}
	if err != nil {
		if v.optional {
			return false, nil
		}
		return false, fmt.Errorf("%w: %s/%s", errSecretMissing, p.key.Namespace, v.secret)
	}
	files, err := projectSecret(secret.Data, v.items)
	if err != nil {
		return false, fmt.Errorf("secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if p.removed {
		return false, nil
	}
	return writeAtomically(v.dir, files)
}

// projectSecret picks the files a Secret volume shows: every key, or only
// the listed items at their paths.
func projectSecret(data map[string][]byte, items []corev1.KeyToPath) (map[string][]byte, error) {
	files := map[string][]byte{}
	if len(items) == 0 {
		for k, v := range data {
			files[k] = v
		}
		return files, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return nil, fmt.Errorf("volume item key %q not found", it.Key)
		}
		files[filepath.Clean(it.Path)] = v
	}
	return files, nil
}

// run starts the host on a fresh loopback listener. onChange is called when
// the pod becomes ready or its host exits.
func (p *pod) run(host Host, onChange func()) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("pod listener: %w", err)
	}
	p.env.Listener = ln
	p.addr = ln.Addr().String()
	p.started = time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() {
		defer close(p.done)
		defer func() { _ = ln.Close() }()
		_ = host.Run(ctx, p.env)
		p.exited.Store(true)
		if ctx.Err() == nil {
			onChange()
		}
	}()
	go func() {
		select {
		case <-p.env.ready:
			p.ready.Store(true)
			onChange()
		case <-p.done:
		}
	}()
	return nil
}

// stop ends the host, waits for it, and removes the pod's folders; a
// refresh still under way cannot bring them back.
func (p *pod) stop() {
	if p.cancel != nil {
		p.cancel()
		<-p.done
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.removed = true
	_ = os.RemoveAll(p.dir)
}
