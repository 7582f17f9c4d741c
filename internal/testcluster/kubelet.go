package testcluster

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kubelet is the test ground's node: it binds the Pods the real ReplicaSet
// controller creates to itself (no scheduler runs), runs for each Pod of a
// Deployment it was asked to Serve the webhook host with that Pod's own
// mounted Secrets, and reports the Pod's IP, readiness and termination. It
// never writes Deployment or ReplicaSet status: kube-controller-manager
// does. Pods of Deployments nobody asked it to serve stay Pending.
type Kubelet struct {
	client  client.Client // live writes
	cache   cache.Cache   // reads, and the Pod and Secret watches
	network *network
	baseDir string
	log     logr.Logger
	delay   atomic.Int64 // propagation delay of Secret updates, in ns
	clock   clock.WithDelayedExecution

	queue      workqueue.TypedRateLimitingInterface[types.NamespacedName] // Pods
	workerDone chan struct{}                                              // closed when the sync loop has ended; nil until start
	stopping   sync.WaitGroup                                             // pods draining after being retired
	refreshing sync.WaitGroup                                             // Secret refreshes whose delay is over

	mu      sync.Mutex
	ctx     context.Context // ends with stopAll
	cancel  context.CancelFunc
	stopped bool
	hosts   map[types.NamespacedName]hostEntry // by Deployment
	lost    map[types.NamespacedName]struct{}  // Deployments whose node was lost (Forget)
	pods    map[types.NamespacedName]*pod      // by Pod
	// waiting are the Pods held in ContainerCreating by a missing Secret.
	waiting map[types.NamespacedName]struct{}
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

// ServeOption tunes how a Deployment's pods run their host.
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
		lost:      map[types.NamespacedName]struct{}{},
		pods:      map[types.NamespacedName]*pod{},
		waiting:   map[types.NamespacedName]struct{}{},
		refreshes: map[clock.Timer]struct{}{},
	}
}

// Serve makes every Pod of the Deployment namespace/name run host, now or
// whenever its Pods appear. Pods already running keep their host.
func (k *Kubelet) Serve(namespace, deployment string, host Host, opts ...ServeOption) {
	var o serveOptions
	for _, opt := range opts {
		opt(&o)
	}
	key := types.NamespacedName{Namespace: namespace, Name: deployment}
	k.mu.Lock()
	k.hosts[key] = hostEntry{host: host, opts: o}
	delete(k.lost, key)
	k.mu.Unlock()
	k.enqueueNamespace(namespace)
}

// Forget stops serving the Deployment as if its pods' node were lost:
// their hosts stop and nothing reports it, so the Pods stay Ready and
// their EndpointSlice entries ready (no node lifecycle controller runs
// here), but nothing answers at their IPs any more. Serve brings them back
// in the same Pods, at the same IPs.
func (k *Kubelet) Forget(namespace, deployment string) {
	key := types.NamespacedName{Namespace: namespace, Name: deployment}
	k.mu.Lock()
	delete(k.hosts, key)
	k.lost[key] = struct{}{}
	k.mu.Unlock()
	k.enqueueNamespace(namespace)
}

// SetPropagationDelay sets how long a Secret update takes to reach the
// mounted files of running pods (kubelet: 30-100 s in real clusters).
func (k *Kubelet) SetPropagationDelay(d time.Duration) { k.delay.Store(int64(d)) }

// PodEnv returns the environment of the Deployment's newest ready pod that
// is not terminating.
func (k *Kubelet) PodEnv(namespace, deployment string) (*PodEnv, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var newest *pod
	for _, p := range k.pods {
		if p.deployment.Namespace != namespace || p.deployment.Name != deployment ||
			!p.ready.Load() || p.exited.Load() || p.terminating.Load() {
			continue
		}
		if newest == nil || p.started.After(newest.started) {
			newest = p
		}
	}
	if newest == nil {
		return nil, false
	}
	return newest.env, true
}

func (k *Kubelet) start(ctx context.Context) error {
	podInformer, err := k.cache.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return err
	}
	if _, err := podInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
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
	// Read through the cache: a Pod's owner, and the network's routes.
	for _, obj := range []client.Object{&appsv1.ReplicaSet{}, &corev1.Service{}, &discoveryv1.EndpointSlice{}} {
		if _, err := k.cache.GetInformer(ctx, obj); err != nil {
			return err
		}
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

// enqueueNamespace resyncs every Pod of the namespace.
func (k *Kubelet) enqueueNamespace(namespace string) {
	var pods corev1.PodList
	if err := k.cache.List(context.Background(), &pods, client.InNamespace(namespace)); err != nil {
		return // the cache is not started yet: its initial list enqueues them
	}
	for i := range pods.Items {
		k.queue.Add(client.ObjectKeyFromObject(&pods.Items[i]))
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
	for _, p := range k.pods {
		if p.key.Namespace == secret.Namespace && p.mounts(secret.Name) {
			k.refreshAfter(delay, p, secret.Name)
		}
	}
	for key := range k.waiting {
		if key.Namespace == secret.Namespace {
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
			k.log.Error(err, "Refreshing secret volume", "pod", p.key, "secret", secret)
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
		k.log.V(1).Info("Kubelet sync failed, retrying", "pod", key, "error", err.Error())
		k.queue.AddRateLimited(key)
		return true
	}
	k.queue.Forget(key)
	return true
}

// sync brings one Pod in line with kubelet's contract: bind it to the node
// if nobody did, run its host while it exists, drain it once it is being
// deleted and then remove it, and report its status.
func (k *Kubelet) sync(ctx context.Context, key types.NamespacedName) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return nil
	}
	var obj corev1.Pod
	err := k.cache.Get(ctx, key, &obj)
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	running := k.pods[key]
	if running != nil && (err != nil || running.uid != obj.UID) {
		// The Pod is gone (or was replaced under the same name) without a
		// graceful deletion: its container is killed.
		k.retire(running)
		delete(k.pods, key)
		running = nil
	}
	if err != nil {
		delete(k.waiting, key)
		return nil
	}
	switch {
	case obj.Spec.NodeName == "" && obj.DeletionTimestamp.IsZero():
		return k.bind(ctx, &obj)
	case obj.Spec.NodeName != NodeName:
		return nil
	case !obj.DeletionTimestamp.IsZero():
		delete(k.waiting, key)
		return k.terminate(ctx, &obj, running)
	}

	deployment, err := k.deploymentOf(ctx, &obj)
	if err != nil {
		return err
	}
	entry, served := k.hosts[deployment]
	if _, lost := k.lost[deployment]; lost {
		if running != nil && !running.lost.Load() {
			running.lost.Store(true)
			k.network.unregister(running) // nothing answers at its IP from now on
			k.retire(running)             // kept in k.pods: its IP comes back with Serve
		}
		return nil // a lost node reports nothing
	}
	if !served {
		if running != nil {
			k.retire(running)
			delete(k.pods, key)
		}
		return k.writePodStatus(ctx, &obj, nil, "no host is registered for deployment "+deployment.String()+" with the test ground's kubelet")
	}
	if running != nil && (running.exited.Load() || running.lost.Load()) {
		// The container exited, or its node is back: kubelet restarts it in
		// the same Pod, at the same IP.
		if !running.lost.Load() {
			k.network.unregister(running)
			running.stop()
		}
		restarted, err := k.startPod(ctx, &obj, deployment, entry, running.ip, running.restarts+1)
		if err != nil {
			delete(k.pods, key)
			return err
		}
		running = restarted
	}
	if running == nil {
		running, err = k.startPod(ctx, &obj, deployment, entry, k.network.allocateIP(), 0)
		if errors.Is(err, errSecretMissing) {
			k.waiting[key] = struct{}{}
			return k.writePodStatus(ctx, &obj, nil, err.Error())
		}
		delete(k.waiting, key)
		if err != nil {
			return err
		}
	}
	return k.writePodStatus(ctx, &obj, running, "")
}

// bind assigns the Pod to the node, as the scheduler would.
func (k *Kubelet) bind(ctx context.Context, obj *corev1.Pod) error {
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: NodeName},
	}
	err := k.client.SubResource("binding").Create(ctx, obj, binding)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // deleted or bound meanwhile: its next event says which
	}
	return err
}

// deploymentOf follows the Pod's controller, a ReplicaSet, to its
// Deployment. A Pod of no Deployment is served by no host.
func (k *Kubelet) deploymentOf(ctx context.Context, obj *corev1.Pod) (types.NamespacedName, error) {
	owner := metav1.GetControllerOf(obj)
	if owner == nil || owner.Kind != "ReplicaSet" {
		return types.NamespacedName{}, nil
	}
	var rs appsv1.ReplicaSet
	if err := k.cache.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: owner.Name}, &rs); err != nil {
		return types.NamespacedName{}, err // not in the cache yet: retried
	}
	if dep := metav1.GetControllerOf(&rs); dep != nil && dep.Kind == "Deployment" {
		return types.NamespacedName{Namespace: obj.Namespace, Name: dep.Name}, nil
	}
	return types.NamespacedName{}, nil
}

func (k *Kubelet) startPod(ctx context.Context, obj *corev1.Pod, deployment types.NamespacedName, entry hostEntry, ip string, restarts int32) (*pod, error) {
	p, err := newPod(obj, deployment, ip, k.baseDir, entry.opts)
	if err != nil {
		return nil, err
	}
	p.restarts = restarts
	if err := p.materialize(ctx, k.cache); err != nil {
		p.stop()
		return nil, err
	}
	key := p.key
	if err := p.run(entry.host, func() { k.queue.Add(key) }); err != nil {
		p.stop()
		return nil, err
	}
	k.network.register(p)
	k.pods[key] = p
	return p, nil
}

// terminate handles a Pod being deleted: its container's preStop sleep
// runs first (the host serves on), then its host drains (SIGTERM; it
// keeps answering while clients move away), and once it has exited the
// Pod is removed for good, as kubelet does with a zero grace period.
func (k *Kubelet) terminate(ctx context.Context, obj *corev1.Pod, running *pod) error {
	if running != nil && !running.terminating.Load() {
		running.terminating.Store(true)
		k.stopping.Add(1)
		nodeCtx, preStop := k.ctx, running.preStopSleep(obj)
		go func() {
			defer k.stopping.Done()
			runPreStop(nodeCtx, preStop)
			running.stop()
			k.network.unregister(running)
			running.drained.Store(true)
			k.queue.Add(running.key)
		}()
		return nil
	}
	if running != nil && !running.drained.Load() {
		return nil // still draining: the goroutine above enqueues the Pod again
	}
	delete(k.pods, client.ObjectKeyFromObject(obj))
	err := k.client.Delete(ctx, obj, client.GracePeriodSeconds(0), client.Preconditions{UID: &obj.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// retire stops a pod in the background (its container is killed or its
// host forgotten), so the kubelet loop never waits on a draining host.
func (k *Kubelet) retire(p *pod) {
	p.terminating.Store(true)
	k.stopping.Add(1)
	go func() {
		defer k.stopping.Done()
		p.stop()
		k.network.unregister(p)
	}()
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
	for key, p := range k.pods {
		k.retire(p)
		delete(k.pods, key)
	}
	k.mu.Unlock()
	if k.workerDone != nil {
		<-k.workerDone
	}
	k.refreshing.Wait()
	k.stopping.Wait()
}
