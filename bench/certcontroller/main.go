// Command certcontroller is the benchmark's anchor: a minimal manager of our
// own around open-policy-agent/cert-controller v0.16.0's rotator, injecting
// a caBundle into CRD conversion webhooks the way an operator embedding
// cert-controller does. It runs one rotator per webhook (each operator runs
// its own), each with the Secret it fills and the CRDs it injects.
//
// It is started by the bench driver (bench/cmd/bench) as a separate process
// against the same control plane as the Hookwright operator; the operator
// never links it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
)

// Webhook is one rotator: the Secret it fills (which must exist, as
// cert-controller requires), the Service DNS name it certifies, the folder
// where the webhook's certificate is mounted, and the CRDs it injects.
type Webhook struct {
	Namespace string   `json:"namespace"`
	Secret    string   `json:"secret"`
	Service   string   `json:"service"`
	CertDir   string   `json:"certDir"`
	CRDs      []string `json:"crds"`
}

func main() {
	config := flag.String("config", "", "JSON file listing the webhooks ([]Webhook)")
	metricsAddr := flag.String("metrics-bind-address", "0", "metrics endpoint address (0 disables it)")
	flag.Parse()
	ctrl.SetLogger(zap.New())
	if err := run(*config, *metricsAddr); err != nil {
		fmt.Fprintln(os.Stderr, "certcontroller:", err)
		os.Exit(1)
	}
}

func run(config, metricsAddr string) error {
	raw, err := os.ReadFile(config)
	if err != nil {
		return err
	}
	var webhooks []Webhook
	if err := json.Unmarshal(raw, &webhooks); err != nil {
		return fmt.Errorf("%s: %w", config, err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	for i, w := range webhooks {
		var infos []rotator.WebhookInfo
		for _, crd := range w.CRDs {
			infos = append(infos, rotator.WebhookInfo{Name: crd, Type: rotator.CRDConversion})
		}
		if err := rotator.AddRotator(mgr, &rotator.CertRotator{
			SecretKey:      types.NamespacedName{Namespace: w.Namespace, Name: w.Secret},
			CertDir:        filepath.Clean(w.CertDir),
			CAName:         w.Service + "-ca",
			CAOrganization: "bench",
			DNSName:        w.Service + "." + w.Namespace + ".svc",
			IsReady:        make(chan struct{}),
			Webhooks:       infos,
			FieldOwner:     "cert-controller",
			ControllerName: fmt.Sprintf("cert-rotator-%d", i),
		}); err != nil {
			return fmt.Errorf("adding the rotator for %s/%s: %w", w.Namespace, w.Secret, err)
		}
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
