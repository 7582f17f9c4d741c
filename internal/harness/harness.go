// Package harness runs the Hookwright operator in process against a test
// cluster, wired exactly as main.go wires it (label-selected caches,
// metadata-only CRD watch). It serves the end-to-end tests, the demo and
// the benchmarks; the operator binary never imports it.
package harness

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers"
)

// Scheme knows every type the operator and its tests use.
func Scheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = apiextensionsv1.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	return scheme
}

// Operator is a running in-process operator; Stop ends it.
type Operator struct {
	cancel  context.CancelFunc
	done    chan error
	elected <-chan struct{}

	stopOnce sync.Once
	stopErr  error
}

// Elected is closed once this operator leads (at once without leader election).
func (o *Operator) Elected() <-chan struct{} { return o.elected }

// Option tunes an in-process operator.
type Option func(*settings)

type settings struct {
	leaderElection *LeaderElection
	wrapClient     func(client.Client) client.Client
	wrapEventSink  func(events.EventSink) events.EventSink
	wrapRecorder   func(events.EventRecorder) events.EventRecorder
	migration      *controllers.MigrationOptions
}

// LeaderElection runs the operator as one of several replicas electing a
// leader through a Lease, with short timings so a failover takes seconds.
type LeaderElection struct {
	Namespace, Identity string
	LeaseDuration       time.Duration
}

// WithLeaderElection makes the operator a replica that must lead to reconcile.
func WithLeaderElection(le LeaderElection) Option {
	return func(s *settings) { s.leaderElection = &le }
}

// WithClient wraps the reconciler's client, e.g. with controller-runtime's
// interceptor to inject faults at writes.
func WithClient(wrap func(client.Client) client.Client) Option {
	return func(s *settings) { s.wrapClient = wrap }
}

// WithEventSink wraps the sink the reconciler's Events are written to
// (creates, and patches of a series), e.g. to inject faults at Event writes
// as WithClient does at the other writes. The recorder then comes from a
// broadcaster of the harness's own, built as the manager builds its own
// (events.k8s.io/v1, reporting controller "hookwright"), since the
// manager's sink cannot be reached.
func WithEventSink(wrap func(events.EventSink) events.EventSink) Option {
	return func(s *settings) { s.wrapEventSink = wrap }
}

// WithRecorder wraps the reconciler's event recorder, e.g. to see which
// Events it emits before they are written (asynchronously, by the
// broadcaster).
func WithRecorder(wrap func(events.EventRecorder) events.EventRecorder) Option {
	return func(s *settings) { s.wrapRecorder = wrap }
}

// WithMigration bounds the operator's storage migrations (page size,
// rate, whether it may use the in-tree StorageVersionMigration API), as
// main.go's --migration-* flags do.
func WithMigration(m controllers.MigrationOptions) Option {
	return func(s *settings) { s.migration = &m }
}

// StartOperator starts the manager with the WebhookInstall reconciler.
func StartOperator(cfg *rest.Config, log logr.Logger, opts ...Option) (*Operator, error) {
	var set settings
	for _, opt := range opts {
		opt(&set)
	}
	options := ctrl.Options{
		Scheme:                 Scheme(),
		Cache:                  controllers.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 log,
		Controller:             config.Controller{SkipNameValidation: ptrTo(true)},
	}
	if le := set.leaderElection; le != nil {
		options.LeaderElection = true
		options.LeaderElectionID = "hookwright.operators.hookwright.dev"
		options.LeaderElectionNamespace = le.Namespace
		options.LeaseDuration = ptrTo(le.LeaseDuration)
		options.RenewDeadline = ptrTo(le.LeaseDuration * 3 / 4)
		options.RetryPeriod = ptrTo(le.LeaseDuration / 8)
		// A killed leader does not hand over: the follower waits out the lease.
		options.LeaderElectionReleaseOnCancel = false
		cfg = rest.CopyConfig(cfg)
		cfg.UserAgent = le.Identity
	}
	if cfg.QPS == 0 {
		// As ctrl.GetConfig in main.go: no client-side throttling (the
		// API server's priority and fairness governs).
		cfg = rest.CopyConfig(cfg)
		cfg.QPS = -1
	}
	mgr, err := ctrl.NewManager(cfg, options)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	var c client.Client = mgr.GetClient()
	if set.wrapClient != nil {
		c = set.wrapClient(c)
	}
	var recorder events.EventRecorder = mgr.GetEventRecorder("hookwright")
	stopEvents := func() {}
	if set.wrapEventSink != nil {
		if recorder, stopEvents, err = ownRecorder(cfg, mgr.GetScheme(), set.wrapEventSink); err != nil {
			return nil, err
		}
	}
	if set.wrapRecorder != nil {
		recorder = set.wrapRecorder(recorder)
	}
	r := &controllers.WebhookInstallReconciler{
		Client: c, APIReader: mgr.GetAPIReader(),
		Recorder: recorder, Clock: clock.RealClock{},
		// As config/default deploys it.
		Authority: controllers.Authority{Namespace: "hookwright-system", ServiceAccount: "hookwright-manager"},
	}
	if set.migration != nil {
		r.Migration = *set.migration
	}
	if err := r.SetupWithManager(mgr); err != nil {
		stopEvents()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	op := &Operator{cancel: cancel, done: make(chan error, 1), elected: mgr.Elected()}
	go func() {
		err := mgr.Start(ctx)
		stopEvents() // after the manager, as controller-runtime stops its own
		op.done <- err
	}()
	return op, nil
}

// ownRecorder is controller-runtime's default Event pipeline (an
// events.k8s.io/v1 broadcaster writing through the API server) with a
// wrapped sink. stop ends it: Events not yet written are dropped, as in a
// process that exits.
func ownRecorder(cfg *rest.Config, scheme *runtime.Scheme, wrap func(events.EventSink) events.EventSink) (events.EventRecorder, func(), error) {
	eventsClient, err := eventsv1client.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the events client: %w", err)
	}
	broadcaster := events.NewBroadcaster(wrap(&events.EventSinkImpl{Interface: eventsClient}))
	ctx, cancel := context.WithCancel(context.Background())
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("starting the event broadcaster: %w", err)
	}
	return broadcaster.NewRecorder(scheme, "hookwright"), func() {
		broadcaster.Shutdown()
		cancel()
	}, nil
}

// Stop stops the manager and waits for it; calling it again returns the
// same result (so a test may both stop an operator and defer its Stop).
func (o *Operator) Stop() error {
	o.stopOnce.Do(func() {
		o.cancel()
		o.stopErr = <-o.done
	})
	return o.stopErr
}

func ptrTo[T any](v T) *T { return &v }
