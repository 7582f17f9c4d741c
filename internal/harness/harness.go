// Package harness runs the Hookwright operator in process against a test
// cluster, wired exactly as main.go wires it (label-selected caches,
// metadata-only CRD watch). It serves the end-to-end tests, the demo and
// the benchmarks; the operator binary never imports it.
package harness

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
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
	cancel context.CancelFunc
	done   chan error
}

// StartOperator starts the manager with the WebhookInstall reconciler.
func StartOperator(cfg *rest.Config, log logr.Logger) (*Operator, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 Scheme(),
		Cache:                  controllers.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 log,
		Controller:             config.Controller{SkipNameValidation: ptrTo(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	r := &controllers.WebhookInstallReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("hookwright"), Clock: clock.RealClock{},
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	op := &Operator{cancel: cancel, done: make(chan error, 1)}
	go func() { op.done <- mgr.Start(ctx) }()
	return op, nil
}

// Stop stops the manager and waits for it.
func (o *Operator) Stop() error {
	o.cancel()
	return <-o.done
}

func ptrTo[T any](v T) *T { return &v }
