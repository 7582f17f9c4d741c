// Package controllers holds the WebhookInstall reconciler: a short pipeline
// of steps, one file each.
package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

// Finalizer makes deletion wait until CRD claims are released safely.
const Finalizer = "operators.hookwright.dev/cleanup"

// WebhookInstallReconciler installs conversion webhooks and their
// certificates, and points the conversion CRDs at them.
type WebhookInstallReconciler struct {
	// Client reads from the manager's label-selected caches and writes.
	Client client.Client
	// APIReader reads live: CRDs (never cached in full), and objects the
	// label-selected caches cannot see.
	APIReader client.Reader
	// Resources reads and dry-run creates the objects of the CRDs the
	// verification converts, by the resource each CRD names, with no
	// discovery (crd_objects.go). SetupWithManager sets it when nil.
	Resources dynamic.Interface
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	// Concurrency is how many installs are reconciled at once (default
	// DefaultConcurrency). A pass mostly waits on the API server, so a few
	// workers keep a burst of installs from queueing behind each other;
	// one install is never reconciled twice at once.
	Concurrency int
	// Authority bounds what an install may make Hookwright do.
	Authority Authority
	// Migration bounds storage migrations (step_migration.go).
	Migration MigrationOptions

	migratorOnce  sync.Once
	migratorState *migrator
	// installVersions: the newest copy of each install this manager has
	// seen, so that no pass starts from an older one (install_versions.go).
	installVersions installVersions
	// unconfirmed: CRDs and admission webhooks whose first verification
	// succeeded, verified once more by a later pass (verify_confirm.go).
	unconfirmed unconfirmedVerifications
	// dueWakes: each install's next rotation, queued when due at the
	// in-flight priority (due_wake.go).
	dueWakes dueWakes
	// echoes: writes whose watch events wake no pass (own_echo.go).
	echoes ownEchoes
	// unanswered: installs whose webhooks let verifications wait for the
	// API server's timeout, and the worker lanes their passes take
	// (unanswered.go).
	unanswered unansweredInstalls
}

// DefaultConcurrency: measured by `make bench` (P4), one worker let 1,000
// installs created at once wait minutes in the queue. On the 2-core test
// ground 1,000 installs converged in 248 s with 4 workers, 200 s with 8
// and 205 s with 16 (P4 alone for 8 and 16): past 8 the API server is the
// bottleneck, and 16 only crowded out its other clients
// (kube-controller-manager took 27.7 s at p50 to make a written Deployment
// available, against 0.4 s with 8). The rotation storm (1,000 CA
// rotations at once) did no better with 16: 272 rotations in 120 s
// against 269 with 8 (P4 and the storm alone, at 017aa49), its reconciles
// slower (1.3 s against 0.7 s on average) and 115 of its trust probes
// Inconclusive (tried again later) against 6.
const DefaultConcurrency = 8

// step is one stage of the pipeline. It returns an error for failures
// worth a retry with backoff, and calls s.stop when later steps must wait.
type step func(ctx context.Context, s *installState) error

// Reconcile reads as the table of contents of an install.
func (r *WebhookInstallReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	install, live, err := r.currentInstall(ctx, req.NamespacedName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			r.installVersions.forget(req.NamespacedName)
			r.dueWakes.forget(req.NamespacedName)
			r.unanswered.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &installState{install: install, installLive: live, generation: install.Generation, now: r.Clock.Now(), webhooks: desired.Webhooks(install), services: map[string]*serviceCerts{}}
	r.unconfirmed.begin(s.now)
	if !install.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, s)
	}
	added, err := r.ensureFinalizer(ctx, install)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.installLive = s.installLive || added // the patch returned the install as stored
	newer, err := r.replacement(ctx, install)
	if err != nil {
		return ctrl.Result{}, err
	}
	if newer != nil {
		// A newer install replaces this one: this one writes nothing the
		// newer one may adopt, and keeps serving until it has taken over
		// (retire.go).
		return r.retire(ctx, s, newer)
	}

	release, admitted := r.unanswered.admit(req.NamespacedName)
	if !admitted {
		// Its webhook did not answer last time, and every lane is taken by
		// installs like it: the other workers stay free (unanswered.go).
		ctrl.LoggerFrom(ctx).V(1).Info("Pass deferred: the install's webhook did not answer its last verification and every lane for such installs is taken", "retryAfter", verifyFailedRetry)
		return ctrl.Result{RequeueAfter: verifyFailedRetry}, nil
	}
	defer release()

	var stepErr error
	for _, run := range []step{r.releaseDropped, r.preflight, r.observeAdmission, r.claimOwnership, r.ensureCertificates, r.ensureWorkloads,
		r.awaitReadyEndpoints, r.configureConversion, r.configureAdmission, r.verifyConversion, r.migrateStorage} {
		if stepErr = run(ctx, s); stepErr != nil || s.halt != nil {
			break
		}
	}
	r.wakeWhenDue(s)
	r.unanswered.observe(req.NamespacedName, foundUnanswered(s))
	if err := r.writeStatus(ctx, s, stepErr); err != nil {
		return ctrl.Result{}, errors.Join(stepErr, err)
	}
	if stepErr != nil {
		return ctrl.Result{}, stepErr
	}
	return ctrl.Result{RequeueAfter: r.nextPass(s), Priority: passPriority(s)}, nil
}

// nextPass is when to look again without an event: soon when a step asked
// for it or a write is left unverified, else at the next certificate
// renewal, or when a drift window closes (so ConversionContested and
// AdmissionContested clear once a fight has stopped).
func (r *WebhookInstallReconciler) nextPass(s *installState) time.Duration {
	next := s.retryAfter
	consider := func(until time.Duration) {
		if next == 0 || until < next {
			next = max(until, time.Millisecond)
		}
	}
	if writtenThisPass(s) {
		// A write left unverified (verify_watched.go): its watch event
		// wakes the next pass; this is the fallback.
		consider(verifyDelay)
	}
	now := r.Clock.Now()
	for _, svc := range s.services {
		consider(svc.rotateAt.Sub(now))
	}
	for _, c := range s.install.Status.ConversionCRDs {
		if c.DriftWindowStart != nil {
			consider(c.DriftWindowStart.Add(fightWindow + time.Second).Sub(now))
		}
	}
	for _, closes := range admissionWindows(s) {
		consider(closes.Sub(now))
	}
	return next
}

// ensureFinalizer adds Hookwright's finalizer; added: it patched install,
// which now holds the API server's answer.
func (r *WebhookInstallReconciler) ensureFinalizer(ctx context.Context, install *v1alpha1.WebhookInstall) (added bool, err error) {
	if controllerutil.ContainsFinalizer(install, Finalizer) {
		return false, nil
	}
	patch := client.MergeFromWithOptions(install.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(install, Finalizer)
	if err := r.Client.Patch(ctx, install, patch, client.FieldOwner(desired.FieldManager)); err != nil {
		return false, fmt.Errorf("adding finalizer to %s: %w", klog.KObj(install), err)
	}
	r.wroteInstall(install)
	return true, nil
}
