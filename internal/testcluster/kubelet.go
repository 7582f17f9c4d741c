package testcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kubelet runs pod stand-ins for the Deployments it was asked to Serve and
// writes their status, as kubelet and the deployment controller would.
// Deployments nobody asked it to serve are left alone (never available).
type Kubelet struct {
	client  client.Client // live writes
	cache   cache.Cache   // reads, and the Secret and Deployment watches
	network *network
	baseDir string
	log     logr.Logger
	delay   atomic.Int64 // propagation delay of Secret updates, in ns
	clock   clock.WithDelayedExecution

	queue      workqueue.TypedRateLimitingInterface[types.NamespacedName]
	workerDone chan struct{}  // closed when the sync loop has ended; nil until start
	stopping   sync.WaitGroup // pods draining after being retired
	refreshing sync.WaitGroup // Secret refreshes whose delay is over

	mu      sync.Mutex
	ctx     context.Context // ends with stopAll
	cancel  context.CancelFunc
	stopped bool
	hosts   map[types.NamespacedName]hostEntry
	pods    map[types.NamespacedName][]*pod // oldest first
	// refreshes are the Secret refreshes waiting out the propagation delay.
	refreshes map[clock.Timer]struct{}
}

type hostEntry struct {
	host Host
	opts serveOptions
}

type serveOptions struct {
	container string
	port      int32
}

// ServeOption tunes how a Deployment's pod stand-in runs its host.
type ServeOption func(*serveOptions)

// InContainer names the container whose mounts and ports the host gets
// (default: the first container).
func InContainer(name string) ServeOption { return func(o *serveOptions) { o.container = name } }

// OnPort sets the containerPort the host serves (default: the container's
// first declared port, else 9443).
func OnPort(port int32) ServeOption { return func(o *serveOptions) { o.port = port } }

func newKubelet(c client.Client, ca cache.Cache, net *network, baseDir string, log logr.Logger) *Kubelet {
	ctx, cancel := context.WithCancel(context.Background())
	return &Kubelet{
		client: c, cache: ca, network: net, baseDir: baseDir, log: log, clock: clock.RealClock{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](
			50*time.Millisecond, 2*time.Second)),
		ctx: ctx, cancel: cancel,
		hosts:     map[types.NamespacedName]hostEntry{},
		pods:      map[types.NamespacedName][]*pod{},
		refreshes: map[clock.Timer]struct{}{},
	}
}

// Serve makes the Deployment namespace/name run host in its pod stand-in,
// now or whenever the Deployment appears.
func (k *Kubelet) Serve(namespace, deployment string, host Host, opts ...ServeOption) {
	var o serveOptions
	for _, opt := range opts {
		opt(&o)
	}
	key := types.NamespacedName{Namespace: namespace, Name: deployment}
	k.mu.Lock()
	k.hosts[key] = hostEntry{host: host, opts: o}
	k.mu.Unlock()
	k.queue.Add(key)
}

// Forget stops serving the Deployment: its pods stop, as if their node died.
func (k *Kubelet) Forget(namespace, deployment string) {
	key := types.NamespacedName{Namespace: namespace, Name: deployment}
	k.mu.Lock()
	delete(k.hosts, key)
	k.mu.Unlock()
	k.queue.Add(key)
}

// SetPropagationDelay sets how long a Secret update takes to reach the
// mounted files of running pods (kubelet: 30-100 s in real clusters).
func (k *Kubelet) SetPropagationDelay(d time.Duration) { k.delay.Store(int64(d)) }

// PodEnv returns the environment of the Deployment's newest ready pod.
func (k *Kubelet) PodEnv(namespace, deployment string) (*PodEnv, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	pods := k.pods[types.NamespacedName{Namespace: namespace, Name: deployment}]
	for i := len(pods) - 1; i >= 0; i-- {
		if pods[i].ready.Load() && !pods[i].exited.Load() {
			return pods[i].env, true
		}
	}
	return nil, false
}

func (k *Kubelet) start(ctx context.Context) error {
	depInformer, err := k.cache.GetInformer(ctx, &appsv1.Deployment{})
	if err != nil {
		return err
	}
	if _, err := depInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.enqueueObject(obj) },
		UpdateFunc: func(_, obj any) { k.enqueueObject(obj) },
		DeleteFunc: func(obj any) { k.enqueueObject(obj) },
	}); err != nil {
		return err
	}
	secretInformer, err := k.cache.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return err
	}
	if _, err := secretInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.secretChanged(obj) },
		UpdateFunc: func(_, obj any) { k.secretChanged(obj) },
	}); err != nil {
		return err
	}
	if _, err := k.cache.GetInformer(ctx, &corev1.Service{}); err != nil {
		return err
	}
	k.workerDone = make(chan struct{})
	go func() {
		defer close(k.workerDone)
		for k.processNext(ctx) {
		}
	}()
	return nil
}

func (k *Kubelet) enqueueObject(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if o, ok := obj.(client.Object); ok {
		k.queue.Add(client.ObjectKeyFromObject(o))
	}
}

// secretChanged schedules, after the propagation delay, a refresh of every
// running pod that mounts the Secret, and retries pods waiting for it.
func (k *Kubelet) secretChanged(obj any) {
	secret, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	delay := time.Duration(k.delay.Load())
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	for key, pods := range k.pods {
		if key.Namespace != secret.Namespace {
			continue
		}
		for _, p := range pods {
			if p.mounts(secret.Name) {
				k.refreshAfter(delay, p, secret.Name)
			}
		}
	}
	for key := range k.hosts {
		if key.Namespace == secret.Namespace && len(k.pods[key]) == 0 {
			k.queue.Add(key)
		}
	}
}

// refreshAfter re-publishes the pod's volumes of the Secret once delay is
// over, unless the kubelet stops first. Called with k.mu held.
func (k *Kubelet) refreshAfter(delay time.Duration, p *pod, secret string) {
	var timer clock.Timer
	timer = k.clock.AfterFunc(delay, func() {
		k.mu.Lock()
		_, pending := k.refreshes[timer] // set before k.mu was released
		delete(k.refreshes, timer)
		if !pending || k.stopped {
			k.mu.Unlock()
			return
		}
		k.refreshing.Add(1)
		ctx := k.ctx
		k.mu.Unlock()
		defer k.refreshing.Done()
		if _, err := p.refreshSecret(ctx, k.cache, secret); err != nil && ctx.Err() == nil {
			k.log.Error(err, "Refreshing secret volume", "deployment", p.deployment, "secret", secret)
		}
	})
	k.refreshes[timer] = struct{}{}
}

func (p *pod) mounts(secret string) bool {
	for _, v := range p.volumes {
		if v.secret == secret {
			return true
		}
	}
	return false
}

func (k *Kubelet) processNext(ctx context.Context) bool {
	key, quit := k.queue.Get()
	if quit {
		return false
	}
	defer k.queue.Done(key)
	if err := k.sync(ctx, key); err != nil {
		k.log.V(1).Info("Kubelet sync failed, retrying", "deployment", key, "error", err.Error())
		k.queue.AddRateLimited(key)
		return true
	}
	k.queue.Forget(key)
	return true
}

// sync brings the Deployment's pods in line with its spec: start a pod for
// the current template, retire older pods once it is ready (a surge
// rollout), stop everything at zero replicas or deletion, then write status.
func (k *Kubelet) sync(ctx context.Context, key types.NamespacedName) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return nil
	}

	var dep appsv1.Deployment
	err := k.cache.Get(ctx, key, &dep)
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	entry, served := k.hosts[key]
	if err != nil || !served || !dep.DeletionTimestamp.IsZero() {
		k.stopPods(key, nil)
		return nil
	}
	k.dropExited(key)
	if replicasOf(&dep) == 0 {
		k.stopPods(key, nil)
		return k.writeStatus(ctx, &dep)
	}
	hash := templateHash(&dep.Spec.Template)
	current := k.podFor(key, hash)
	if current == nil {
		current, err = k.startPod(ctx, &dep, hash, entry)
		if errors.Is(err, errSecretMissing) {
			k.log.V(1).Info("Pod waits for its secret volume", "deployment", key, "reason", err.Error())
			return k.writeStatus(ctx, &dep)
		}
		if err != nil {
			return err
		}
	}
	if current.ready.Load() {
		k.stopPods(key, current)
	}
	return k.writeStatus(ctx, &dep)
}

func (k *Kubelet) startPod(ctx context.Context, dep *appsv1.Deployment, hash string, entry hostEntry) (*pod, error) {
	key := client.ObjectKeyFromObject(dep)
	p, err := newPod(dep, hash, k.baseDir, entry.opts)
	if err != nil {
		return nil, err
	}
	if err := p.materialize(ctx, k.cache); err != nil {
		p.stop()
		return nil, err
	}
	err = p.run(entry.host, func() {
		if p.ready.Load() && !p.exited.Load() {
			k.network.add(p, p.endpoint)
		} else {
			k.network.remove(p)
		}
		k.queue.Add(key)
	})
	if err != nil {
		p.stop()
		return nil, err
	}
	k.pods[key] = append(k.pods[key], p)
	return p, nil
}

func (k *Kubelet) podFor(key types.NamespacedName, hash string) *pod {
	for _, p := range k.pods[key] {
		if p.hash == hash {
			return p
		}
	}
	return nil
}

// stopPods stops every pod of the Deployment except keep.
func (k *Kubelet) stopPods(key types.NamespacedName, keep *pod) {
	var kept []*pod
	for _, p := range k.pods[key] {
		if p == keep {
			kept = append(kept, p)
			continue
		}
		k.retire(p)
	}
	if len(kept) == 0 {
		delete(k.pods, key)
		return
	}
	k.pods[key] = kept
}

// retire takes a pod out of the network at once (as endpoints do) and lets
// its host drain in the background (as SIGTERM does), so the kubelet loop
// never waits on a draining pod.
func (k *Kubelet) retire(p *pod) {
	k.network.remove(p)
	k.stopping.Add(1)
	go func() {
		defer k.stopping.Done()
		p.stop()
	}()
}

// dropExited removes pods whose host exited, so sync starts a fresh one
// (kubelet restarting a crashed container).
func (k *Kubelet) dropExited(key types.NamespacedName) {
	var alive []*pod
	for _, p := range k.pods[key] {
		if p.exited.Load() {
			k.network.remove(p)
			p.stop()
			continue
		}
		alive = append(alive, p)
	}
	k.pods[key] = alive
}

// stopAll stops the sync loop, every pending Secret refresh and every pod,
// and returns once none of them runs any more.
func (k *Kubelet) stopAll() {
	k.queue.ShutDown()
	k.mu.Lock()
	k.stopped = true
	k.cancel()
	for timer := range k.refreshes {
		timer.Stop()
	}
	clear(k.refreshes)
	for key := range k.pods {
		k.stopPods(key, nil)
	}
	k.mu.Unlock()
	if k.workerDone != nil {
		<-k.workerDone
	}
	k.refreshing.Wait()
	k.stopping.Wait()
}

func replicasOf(dep *appsv1.Deployment) int32 {
	if dep.Spec.Replicas == nil {
		return 1
	}
	return *dep.Spec.Replicas
}

func templateHash(t *corev1.PodTemplateSpec) string {
	raw, _ := json.Marshal(t)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}
