package runner

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/controllers/rotation"
	"github.com/hookwright/hookwright/internal/harness"
)

// observer records, through watches, when the benchmark's objects reach the
// states it times: a Deployment available, an install's conversion
// verified, each serving certificate Hookwright published. Times are this
// process's clock at the watch event, for the operators and the anchor alike.
type observer struct {
	mu        sync.Mutex
	available map[types.NamespacedName]time.Time // Deployment first Available=True
	verified  map[types.NamespacedName]time.Time // install first ConversionVerified=True
	// unfinished: installs first seen verified with their first
	// certificates still recorded in progress: their completion is left
	// to a later pass (one more status write and two Events).
	unfinished map[types.NamespacedName]bool
	created    map[types.NamespacedName]time.Time // install first seen
	serving    map[types.NamespacedName][]servingCert
	phases     map[types.NamespacedName]v1alpha1.InstallPhase
	events     int // install add/update events seen: progress short of verification
	// rotated: install first seen with a Succeeded CA rotation whose
	// message has rotationMark (the rotation storm's request).
	rotated map[types.NamespacedName]time.Time
	// promoted: install first seen with its serving certificate moved to
	// the new CA of that rotation (the rotation's midpoint: the old CA
	// still has to leave every caBundle).
	promoted     map[types.NamespacedName]time.Time
	rotationMark string
	stop         context.CancelFunc
	reader       client.Reader // the watches' cache
}

// servingCert is one serving certificate seen in a Hookwright Secret.
type servingCert struct {
	fingerprint string
	notAfter    time.Time
	seen        time.Time
}

func startObserver(cfg *rest.Config) (*observer, error) {
	managed := labels.SelectorFromSet(labels.Set{desired.LabelManagedBy: desired.ManagedByValue})
	c, err := cache.New(cfg, cache.Options{Scheme: harness.Scheme(), ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Label: managed},
	}})
	if err != nil {
		return nil, err
	}
	o := &observer{
		available: map[types.NamespacedName]time.Time{}, verified: map[types.NamespacedName]time.Time{},
		created: map[types.NamespacedName]time.Time{}, serving: map[types.NamespacedName][]servingCert{},
		phases: map[types.NamespacedName]v1alpha1.InstallPhase{}, rotated: map[types.NamespacedName]time.Time{},
		promoted: map[types.NamespacedName]time.Time{}, unfinished: map[types.NamespacedName]bool{},
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.stop, o.reader = cancel, c
	handlers := map[client.Object]func(obj any){
		&appsv1.Deployment{}:       o.deployment,
		&v1alpha1.WebhookInstall{}: o.install,
		&corev1.Secret{}:           o.secret,
	}
	for obj, handle := range handlers {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			cancel()
			return nil, err
		}
		handle := handle
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    handle,
			UpdateFunc: func(_, obj any) { handle(obj) },
		}); err != nil {
			cancel()
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		cancel()
		return nil, errors.New("the observer's caches did not sync")
	}
	return o, nil
}

func (o *observer) deployment(obj any) {
	dep, ok := obj.(*appsv1.Deployment)
	if !ok || dep.Status.AvailableReplicas < 1 {
		return
	}
	for _, c := range dep.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			o.first(o.available, client.ObjectKeyFromObject(dep))
		}
	}
}

// rolledOut: every replica of the Deployment runs its pod template, and
// that template's annotation has value (as the operator's
// runsCertificate, from the watch's cache).
func (o *observer) rolledOut(key types.NamespacedName, annotation, value string) bool {
	dep := &appsv1.Deployment{}
	if err := o.reader.Get(context.Background(), key, dep); err != nil {
		return false
	}
	want, st := ptr.Deref(dep.Spec.Replicas, 1), dep.Status
	return dep.Spec.Template.Annotations[annotation] == value && st.ObservedGeneration >= dep.Generation &&
		st.UpdatedReplicas >= want && st.Replicas <= st.UpdatedReplicas && st.AvailableReplicas >= st.UpdatedReplicas
}

func (o *observer) install(obj any) {
	whi, ok := obj.(*v1alpha1.WebhookInstall)
	if !ok {
		return
	}
	key := client.ObjectKeyFromObject(whi)
	o.first(o.created, key)
	o.mu.Lock()
	o.phases[key] = whi.Status.Phase
	o.events++
	mark := o.rotationMark
	o.mu.Unlock()
	if mark != "" && caRotatedFor(whi, mark) {
		o.first(o.rotated, key)
	}
	if mark != "" && caPromotedFor(whi, mark) {
		o.first(o.promoted, key)
	}
	c := meta.FindStatusCondition(whi.Status.Conditions, v1alpha1.TypeConversionVerified)
	if c != nil && c.Status == "True" && c.ObservedGeneration == whi.Generation {
		if o.first(o.verified, key) && firstIssuanceInProgress(whi) {
			o.mu.Lock()
			o.unfinished[key] = true
			o.mu.Unlock()
		}
	}
}

// firstIssuanceInProgress: the install's first certificates are still
// recorded as in progress.
func firstIssuanceInProgress(whi *v1alpha1.WebhookInstall) bool {
	return slices.ContainsFunc(whi.Status.Rotations, func(r v1alpha1.RotationRecord) bool {
		return r.Reason == rotation.ReasonInitial && r.Outcome == v1alpha1.RotationInProgress
	})
}

// countUnfinished is how many of keys were first seen verified with their
// first certificates in progress.
func (o *observer) countUnfinished(keys []types.NamespacedName) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, k := range keys {
		if o.unfinished[k] {
			n++
		}
	}
	return n
}

// caRotatedFor says whether the install completed a CA rotation whose
// message carries mark.
func caRotatedFor(whi *v1alpha1.WebhookInstall, mark string) bool {
	for _, rec := range whi.Status.Rotations {
		if rec.Kind == v1alpha1.RotationCA && rec.Outcome == v1alpha1.RotationSucceeded && strings.Contains(rec.Message, mark) {
			return true
		}
	}
	return false
}

// caPromotedFor says whether the serving certificate moved to the new CA
// of the CA rotation whose message carries mark (the serving record's
// message names that CA: controllers/step_rotation.go).
func caPromotedFor(whi *v1alpha1.WebhookInstall, mark string) bool {
	newCA := ""
	for _, rec := range whi.Status.Rotations {
		if rec.Kind == v1alpha1.RotationCA && strings.Contains(rec.Message, mark) {
			newCA = rec.NewFingerprint
		}
	}
	return newCA != "" && slices.ContainsFunc(whi.Status.Rotations, func(rec v1alpha1.RotationRecord) bool {
		return rec.Kind == v1alpha1.RotationServing && strings.HasSuffix(rec.Message, "moved to the new CA "+newCA)
	})
}

// watchRotations makes the observer record CA rotations marked with mark.
func (o *observer) watchRotations(mark string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rotationMark = mark
}

func (o *observer) secret(obj any) {
	s, ok := obj.(*corev1.Secret)
	if !ok || s.Type != corev1.SecretTypeTLS {
		return
	}
	cert, err := certs.ParseCert(s.Data["tls.crt"])
	if err != nil || cert.IsCA {
		return
	}
	o.addServing(client.ObjectKeyFromObject(s), cert)
}

func (o *observer) addServing(key types.NamespacedName, cert *x509.Certificate) {
	fp := certs.Fingerprint(cert)
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, seen := range o.serving[key] {
		if seen.fingerprint == fp {
			return
		}
	}
	o.serving[key] = append(o.serving[key], servingCert{fingerprint: fp, notAfter: cert.NotAfter, seen: time.Now()})
}

// first records now for key unless a time is recorded already, and says
// whether it recorded.
func (o *observer) first(m map[types.NamespacedName]time.Time, key types.NamespacedName) bool {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, seen := m[key]; seen {
		return false
	}
	m[key] = now
	return true
}

func (o *observer) get(m map[types.NamespacedName]time.Time, key types.NamespacedName) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := m[key]
	return t, ok
}

func (o *observer) servingCerts(key types.NamespacedName) []servingCert {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]servingCert(nil), o.serving[key]...)
}

func (o *observer) phase(key types.NamespacedName) v1alpha1.InstallPhase {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.phases[key]
}

// waitAll waits until every key is in m, up to deadline; it returns how
// many were.
func (o *observer) waitAll(ctx context.Context, m map[types.NamespacedName]time.Time, keys []types.NamespacedName, deadline time.Time) (int, error) {
	return o.waitAllStall(ctx, m, keys, deadline, 0)
}

// waitAllStall is waitAll that also gives up when for stall (0: never)
// no key arrived and no install changed at all: with one reconcile worker,
// a large batch gets every first pass before any verification, so only
// the absence of any install update means the operator is stuck.
func (o *observer) waitAllStall(ctx context.Context, m map[types.NamespacedName]time.Time, keys []types.NamespacedName, deadline time.Time, stall time.Duration) (int, error) {
	lastDone, lastEvents, lastChange := -1, -1, time.Now()
	for {
		o.mu.Lock()
		events := o.events
		done := 0
		for _, k := range keys {
			if _, ok := m[k]; ok {
				done++
			}
		}
		o.mu.Unlock()
		if done == len(keys) {
			return done, nil
		}
		if done != lastDone || events != lastEvents {
			lastDone, lastEvents, lastChange = done, events, time.Now()
		}
		if stall > 0 && time.Since(lastChange) > stall {
			return done, fmt.Errorf("%d of %d reached the state; no install changed for %s", done, len(keys), stall)
		}
		if time.Now().After(deadline) {
			return done, fmt.Errorf("%d of %d reached the state in time", done, len(keys))
		}
		select {
		case <-ctx.Done():
			return done, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
