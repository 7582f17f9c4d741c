package desired

import (
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
)

func TestWebhooks(t *testing.T) {
	defNames := func(w Webhook) []string {
		var out []string
		for _, d := range w.Definitions {
			out = append(out, d.GenerateName)
		}
		return out
	}
	type want struct {
		deployment, service string
		definitions         []string
	}
	tests := []struct {
		name        string
		deployments []string
		defs        []v1alpha1.WebhookDefinition
		want        []want
	}{
		{
			name:        "one deployment, one definition",
			deployments: []string{"crontab-webhook"},
			defs:        []v1alpha1.WebhookDefinition{newDefinition("a", "crontab-webhook")},
			want:        []want{{"crontab-webhook", "crontab-webhook-service", []string{"a"}}},
		},
		{
			name:        "dotted deployment uses ServiceName",
			deployments: []string{"crontab.webhook.v2"},
			defs:        []v1alpha1.WebhookDefinition{newDefinition("a", "crontab.webhook.v2")},
			want:        []want{{"crontab.webhook.v2", "crontab-webhook-v2-service", []string{"a"}}},
		},
		{
			name:        "deployment order, not definition order; deployment without webhooks skipped",
			deployments: []string{"zeta", "idle", "alpha"},
			defs: []v1alpha1.WebhookDefinition{
				newDefinition("a1", "alpha"),
				newDefinition("z1", "zeta"),
				newDefinition("a2", "alpha"),
			},
			want: []want{
				{"zeta", "zeta-service", []string{"z1"}},
				{"alpha", "alpha-service", []string{"a1", "a2"}},
			},
		},
		{
			// Many groups so that appending to the result reallocates it.
			name:        "several deployments with two definitions each",
			deployments: []string{"d1", "d2", "d3", "d4", "d5"},
			defs: []v1alpha1.WebhookDefinition{
				newDefinition("d5-a", "d5"), newDefinition("d1-a", "d1"), newDefinition("d2-a", "d2"),
				newDefinition("d3-a", "d3"), newDefinition("d4-a", "d4"), newDefinition("d1-b", "d1"),
				newDefinition("d2-b", "d2"), newDefinition("d3-b", "d3"), newDefinition("d4-b", "d4"),
				newDefinition("d5-b", "d5"),
			},
			want: []want{
				{"d1", "d1-service", []string{"d1-a", "d1-b"}},
				{"d2", "d2-service", []string{"d2-a", "d2-b"}},
				{"d3", "d3-service", []string{"d3-a", "d3-b"}},
				{"d4", "d4-service", []string{"d4-a", "d4-b"}},
				{"d5", "d5-service", []string{"d5-a", "d5-b"}},
			},
		},
		{
			name:        "no webhooks at all",
			deployments: []string{"idle"},
			want:        nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var deps []operatorsv1alpha1.StrategyDeploymentSpec
			for _, d := range tt.deployments {
				deps = append(deps, newDeploymentSpec(d))
			}
			got := Webhooks(newInstall(deps, tt.defs...))
			if len(got) != len(tt.want) {
				t.Fatalf("Webhooks: got %d webhooks %+v, want %d", len(got), got, len(tt.want))
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Deployment != w.deployment || g.Service != w.service || !reflect.DeepEqual(defNames(g), w.definitions) {
					t.Errorf("Webhooks[%d] = {%s %s %v}, want {%s %s %v}", i, g.Deployment, g.Service, defNames(g), w.deployment, w.service, w.definitions)
				}
				for _, d := range g.Definitions {
					if d.DeploymentName != g.Deployment {
						t.Errorf("Webhooks[%d] (%s) holds definition %s of deployment %s", i, g.Deployment, d.GenerateName, d.DeploymentName)
					}
				}
			}
		})
	}
}

func TestService(t *testing.T) {
	port := func(p int32, target intstr.IntOrString) corev1.ServicePort {
		return corev1.ServicePort{Port: p, TargetPort: target}
	}
	def := func(name string, containerPort int32, target *intstr.IntOrString) v1alpha1.WebhookDefinition {
		d := newDefinition(name, "crontab.webhook")
		d.ContainerPort = containerPort
		d.TargetPort = target
		return d
	}
	tests := []struct {
		name    string
		defs    []v1alpha1.WebhookDefinition
		want    []corev1.ServicePort
		wantErr []string // substrings of the error
	}{
		{
			name: "containerPort defaults to 443, targetPort to containerPort",
			defs: []v1alpha1.WebhookDefinition{def("a", 0, nil)},
			want: []corev1.ServicePort{port(443, intstr.FromInt32(443))},
		},
		{
			name: "targetPort defaults to an explicit containerPort",
			defs: []v1alpha1.WebhookDefinition{def("a", 9443, nil)},
			want: []corev1.ServicePort{port(9443, intstr.FromInt32(9443))},
		},
		{
			name: "explicit int targetPort kept",
			defs: []v1alpha1.WebhookDefinition{def("a", 443, ptr.To(intstr.FromInt32(8443)))},
			want: []corev1.ServicePort{port(443, intstr.FromInt32(8443))},
		},
		{
			name: "named targetPort kept",
			defs: []v1alpha1.WebhookDefinition{def("a", 0, ptr.To(intstr.FromString("webhook-server")))},
			want: []corev1.ServicePort{port(443, intstr.FromString("webhook-server"))},
		},
		{
			name: "same containerPort and target de-duplicated",
			defs: []v1alpha1.WebhookDefinition{
				def("a", 443, ptr.To(intstr.FromInt32(9443))),
				def("b", 443, ptr.To(intstr.FromInt32(9443))),
			},
			want: []corev1.ServicePort{port(443, intstr.FromInt32(9443))},
		},
		{
			name: "default and explicit 443 with default target de-duplicated",
			defs: []v1alpha1.WebhookDefinition{def("a", 0, nil), def("b", 443, nil), def("c", 443, ptr.To(intstr.FromInt32(443)))},
			want: []corev1.ServicePort{port(443, intstr.FromInt32(443))},
		},
		{
			name: "ports sorted by port",
			defs: []v1alpha1.WebhookDefinition{
				def("a", 9443, nil),
				def("b", 0, nil),
				def("c", 8443, ptr.To(intstr.FromString("conv"))),
				def("d", 1443, nil),
			},
			want: []corev1.ServicePort{
				port(443, intstr.FromInt32(443)),
				port(1443, intstr.FromInt32(1443)),
				port(8443, intstr.FromString("conv")),
				port(9443, intstr.FromInt32(9443)),
			},
		},
		{
			name: "same containerPort, different int targetPorts",
			defs: []v1alpha1.WebhookDefinition{
				def("a", 443, ptr.To(intstr.FromInt32(8443))),
				def("b", 443, ptr.To(intstr.FromInt32(9443))),
			},
			wantErr: []string{"crontab.webhook", "443"},
		},
		{
			name:    "same containerPort, defaulted and explicit targetPort differ",
			defs:    []v1alpha1.WebhookDefinition{def("a", 0, nil), def("b", 443, ptr.To(intstr.FromString("https")))},
			wantErr: []string{"crontab.webhook", "443"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dep := newDeploymentSpec("crontab.webhook")
			dep.Spec.Selector.MatchLabels = map[string]string{"app": "crontab", "tier": "webhook"}
			install := newInstall([]operatorsv1alpha1.StrategyDeploymentSpec{dep}, tt.defs...)
			webhooks := Webhooks(install)
			if len(webhooks) != 1 {
				t.Fatalf("Webhooks: got %d, want 1", len(webhooks))
			}
			svc, err := Service(install, &dep.Spec, webhooks[0])
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("Service: want an error, got ports %+v", svc.Spec.Ports)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("Service error %q does not mention %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Service: %v", err)
			}
			if svc.Name != "crontab-webhook-service" {
				t.Errorf("Service name = %q, want crontab-webhook-service", svc.Name)
			}
			if !reflect.DeepEqual(svc.Spec.Selector, map[string]string{"app": "crontab", "tier": "webhook", LabelDeployment: "crontab.webhook"}) {
				t.Errorf("Service selector = %v, want the deployment's matchLabels and its name", svc.Spec.Selector)
			}
			var got []corev1.ServicePort
			for _, p := range svc.Spec.Ports {
				got = append(got, port(p.Port, p.TargetPort))
				if p.Protocol != corev1.ProtocolTCP {
					t.Errorf("port %d protocol = %q, want TCP", p.Port, p.Protocol)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Service ports = %+v, want %+v", got, tt.want)
			}
			names := map[string]bool{}
			for _, p := range svc.Spec.Ports {
				if p.Name == "" || names[p.Name] {
					t.Errorf("port %d name %q is empty or duplicated: a multi-port Service needs unique names", p.Port, p.Name)
				}
				names[p.Name] = true
			}
			assertInstallLabels(t, svc)
			assertControllerRef(t, svc)
		})
	}
}

// TestServiceSelectsItsOwnDeploymentsPods: two webhook Deployments whose
// matchLabels are the same (an upgrade's old and new version) each get a
// Service that selects only its own pods, which present its certificate.
func TestServiceSelectsItsOwnDeploymentsPods(t *testing.T) {
	shared := map[string]string{"app": "widgets"}
	deployments := []operatorsv1alpha1.StrategyDeploymentSpec{newDeploymentSpec("webhook-v1"), newDeploymentSpec("webhook-v2")}
	for i := range deployments {
		deployments[i].Spec.Selector.MatchLabels = maps.Clone(shared)
		deployments[i].Spec.Template.Labels = maps.Clone(shared)
	}
	install := newInstall(deployments, newDefinition("v1.widgets.example.com", "webhook-v1"), newDefinition("v2.widgets.example.com", "webhook-v2"))
	serving := &Serving{SecretName: "s", Fingerprint: "f"}
	pods := map[string]labels.Set{}
	for _, d := range deployments {
		pods[d.Name] = labels.Set(Deployment(install, d, serving).Spec.Template.Labels)
	}
	webhooks := Webhooks(install)
	if len(webhooks) != 2 {
		t.Fatalf("Webhooks: got %d, want 2", len(webhooks))
	}
	for _, w := range webhooks {
		svc, err := Service(install, deploymentSpec(deployments, w.Deployment), w)
		if err != nil {
			t.Fatalf("Service: %v", err)
		}
		selector := labels.SelectorFromSet(svc.Spec.Selector)
		for name, podLabels := range pods {
			if got, want := selector.Matches(podLabels), name == w.Deployment; got != want {
				t.Errorf("Service %s (selector %v) selects the pods of %s (labels %v): %v, want %v", svc.Name, svc.Spec.Selector, name, podLabels, got, want)
			}
		}
		if !SelectsOwnPods(svc) {
			t.Errorf("SelectsOwnPods(%s) = false, want true", svc.Name)
		}
		// Until its pods carry the label, a Service made before keeps the
		// selector it had: the matchLabels alone, under their own hash.
		old := WithSharedSelector(WithSpecHash(svc))
		if !reflect.DeepEqual(old.Spec.Selector, shared) || SelectsOwnPods(old) {
			t.Errorf("WithSharedSelector: selector %v, want %v", old.Spec.Selector, shared)
		}
		if old.Annotations[AnnotationSpecHash] == WithSpecHash(svc).Annotations[AnnotationSpecHash] {
			t.Errorf("WithSharedSelector kept the narrowed Service's hash: the narrowing would never be applied")
		}
	}
}

func deploymentSpec(deployments []operatorsv1alpha1.StrategyDeploymentSpec, name string) *appsv1.DeploymentSpec {
	for i := range deployments {
		if deployments[i].Name == name {
			return &deployments[i].Spec
		}
	}
	return nil
}

func TestServiceNeedsMatchLabels(t *testing.T) {
	for name, mutate := range map[string]func(*appsv1.DeploymentSpec){
		"nil selector":      func(s *appsv1.DeploymentSpec) { s.Selector = nil },
		"no matchLabels":    func(s *appsv1.DeploymentSpec) { s.Selector.MatchLabels = nil },
		"empty matchLabels": func(s *appsv1.DeploymentSpec) { s.Selector.MatchLabels = map[string]string{} },
		"matchExpressions only": func(s *appsv1.DeploymentSpec) {
			s.Selector.MatchLabels = nil
			s.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: "In", Values: []string{"x"}}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dep := newDeploymentSpec("crontab-webhook")
			mutate(&dep.Spec)
			install := newInstall([]operatorsv1alpha1.StrategyDeploymentSpec{dep}, newDefinition("a", "crontab-webhook"))
			svc, err := Service(install, &dep.Spec, Webhooks(install)[0])
			if err == nil {
				t.Fatalf("Service: want an error for a deployment without matchLabels, got selector %v", svc.Spec.Selector)
			}
			if !strings.Contains(err.Error(), "crontab-webhook") {
				t.Errorf("Service error %q does not name the deployment", err)
			}
		})
	}
}

func TestCASecret(t *testing.T) {
	install := newInstall(nil)
	active := certs.KeyPair{CertPEM: []byte("active-cert"), KeyPEM: []byte("active-key")}
	next := certs.KeyPair{CertPEM: []byte("next-cert"), KeyPEM: []byte("next-key")}
	pruneAt := time.Date(2030, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name     string
		state    CAState
		wantData map[string]string
		wantAnn  map[string]string
	}{
		{
			name:     "active CA only",
			state:    CAState{Active: active},
			wantData: map[string]string{"tls.crt": "active-cert", "tls.key": "active-key"},
		},
		{
			name:     "next CA being introduced",
			state:    CAState{Active: active, Next: &next},
			wantData: map[string]string{"tls.crt": "active-cert", "tls.key": "active-key", "next.crt": "next-cert", "next.key": "next-key"},
		},
		{
			name:     "previous CA being retired",
			state:    CAState{Active: active, Previous: []byte("old-cert"), PruneAt: pruneAt},
			wantData: map[string]string{"tls.crt": "active-cert", "tls.key": "active-key", "previous.crt": "old-cert"},
			wantAnn:  map[string]string{"operators.hookwright.dev/prune-previous-at": "2030-01-02T02:04:05Z"},
		},
		{
			name:     "rotation record kept while the previous CA is retired",
			state:    CAState{Active: active, Previous: []byte("old-cert"), PruneAt: pruneAt, Rotation: `{"record":{}}`},
			wantData: map[string]string{"tls.crt": "active-cert", "tls.key": "active-key", "previous.crt": "old-cert"},
			wantAnn: map[string]string{
				"operators.hookwright.dev/prune-previous-at": "2030-01-02T02:04:05Z",
				"operators.hookwright.dev/rotation":          `{"record":{}}`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := CASecret(install, "crontab-webhook-service", tt.state)
			if s.Type != "kubernetes.io/tls" {
				t.Errorf("type = %q, want kubernetes.io/tls", s.Type)
			}
			if s.Name != CASecretName("crontab-webhook-service") {
				t.Errorf("name = %q, want %q", s.Name, CASecretName("crontab-webhook-service"))
			}
			if got := stringData(s.Data); !reflect.DeepEqual(got, tt.wantData) {
				t.Errorf("data = %v, want %v", got, tt.wantData)
			}
			if len(s.Annotations) != len(tt.wantAnn) || (tt.wantAnn != nil && !reflect.DeepEqual(s.Annotations, tt.wantAnn)) {
				t.Errorf("annotations = %v, want %v", s.Annotations, tt.wantAnn)
			}
			if got := s.Labels["operators.hookwright.dev/service"]; got != "crontab-webhook-service" {
				t.Errorf("label operators.hookwright.dev/service = %q, want crontab-webhook-service", got)
			}
			assertInstallLabels(t, s)
			assertControllerRef(t, s)
		})
	}
}

func TestServingSecret(t *testing.T) {
	install := newInstall(nil)
	serving := certs.KeyPair{CertPEM: []byte("serving-cert"), KeyPEM: []byte("serving-key")}
	s := ServingSecret(install, "crontab-webhook-service", []byte("ca-cert"), serving, `{"record":{}}`)
	if got := s.Annotations[AnnotationRotation]; got != `{"record":{}}` {
		t.Errorf("rotation annotation = %q, want the rotation record", got)
	}
	if s.Type != "kubernetes.io/tls" {
		t.Errorf("type = %q, want kubernetes.io/tls", s.Type)
	}
	if s.Name != ServingSecretName("crontab-webhook-service") {
		t.Errorf("name = %q, want %q", s.Name, ServingSecretName("crontab-webhook-service"))
	}
	want := map[string]string{"tls.crt": "serving-cert", "tls.key": "serving-key", "ca.crt": "ca-cert"}
	if got := stringData(s.Data); !reflect.DeepEqual(got, want) {
		t.Errorf("data = %v, want exactly %v (pods mount it: never the CA key)", got, want)
	}
	for k, v := range s.Data {
		if strings.Contains(string(v), "ca-key") || k == NextKeyKey {
			t.Errorf("serving Secret holds CA key material under %q", k)
		}
	}
	if got := s.Labels["operators.hookwright.dev/service"]; got != "crontab-webhook-service" {
		t.Errorf("label operators.hookwright.dev/service = %q, want crontab-webhook-service", got)
	}
	assertInstallLabels(t, s)
	assertControllerRef(t, s)

	ca := CASecret(install, "crontab-webhook-service", CAState{Active: certs.KeyPair{CertPEM: []byte("ca-cert"), KeyPEM: []byte("ca-key")}})
	if s.Name == ca.Name {
		t.Errorf("serving and CA Secrets share the name %q", s.Name)
	}
}

func stringData(data map[string][]byte) map[string]string {
	out := map[string]string{}
	for k, v := range data {
		out[k] = string(v)
	}
	return out
}

func TestSpecHash(t *testing.T) {
	base := func() *corev1.Service {
		return &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "ns", Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"note": "x"}},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": "x"},
				Ports:    []corev1.ServicePort{{Name: "webhook-443", Port: 443, TargetPort: intstr.FromInt32(9443)}},
			},
		}
	}
	h0 := SpecHash(base())
	if h0 == "" {
		t.Fatal("SpecHash is empty")
	}
	if h := SpecHash(base()); h != h0 {
		t.Errorf("SpecHash not stable: %s then %s", h0, h)
	}

	changes := map[string]func(*corev1.Service){
		"label value":       func(s *corev1.Service) { s.Labels["a"] = "2" },
		"label added":       func(s *corev1.Service) { s.Labels["b"] = "1" },
		"other annotation":  func(s *corev1.Service) { s.Annotations["note"] = "y" },
		"spec port":         func(s *corev1.Service) { s.Spec.Ports[0].Port = 8443 },
		"spec target port":  func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("https") },
		"spec selector":     func(s *corev1.Service) { s.Spec.Selector["app"] = "y" },
		"owner reference":   func(s *corev1.Service) { s.OwnerReferences = ownedMeta(newInstall(nil), "svc", nil).OwnerReferences },
		"namespace changed": func(s *corev1.Service) { s.Namespace = "other" },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			s := base()
			change(s)
			if h := SpecHash(s); h == h0 {
				t.Errorf("SpecHash unchanged (%s) after changing the %s", h, name)
			}
		})
	}

	t.Run("ignores an existing spec-hash annotation", func(t *testing.T) {
		stamped := base()
		stamped.Annotations["operators.hookwright.dev/spec-hash"] = "stale"
		if h := SpecHash(stamped); h != h0 {
			t.Errorf("SpecHash of a stamped object = %s, want the unstamped %s", h, h0)
		}
		if stamped.Annotations["operators.hookwright.dev/spec-hash"] != "stale" {
			t.Errorf("SpecHash mutated its argument's annotations: %v", stamped.Annotations)
		}

		// An object with no other annotations: stamped (one annotation) and
		// unstamped (nil annotations) hash the same.
		bare := base()
		bare.Annotations = nil
		hBare := SpecHash(bare)
		bare.Annotations = map[string]string{"operators.hookwright.dev/spec-hash": "anything"}
		if h := SpecHash(bare); h != hBare {
			t.Errorf("SpecHash with only a spec-hash annotation = %s, want %s (as with none)", h, hBare)
		}
	})

	t.Run("WithSpecHash stamps SpecHash", func(t *testing.T) {
		s := WithSpecHash(base())
		if got := s.Annotations["operators.hookwright.dev/spec-hash"]; got != h0 {
			t.Errorf("spec-hash annotation = %q, want %q", got, h0)
		}
		if s.Annotations["note"] != "x" {
			t.Errorf("WithSpecHash dropped other annotations: %v", s.Annotations)
		}
		if h := SpecHash(s); h != h0 {
			t.Errorf("SpecHash of a WithSpecHash result = %s, want %s", h, h0)
		}
		// Re-stamping an object with a stale hash corrects it.
		s.Annotations["operators.hookwright.dev/spec-hash"] = "stale"
		if got := WithSpecHash(s).Annotations["operators.hookwright.dev/spec-hash"]; got != h0 {
			t.Errorf("re-stamped spec-hash = %q, want %q", got, h0)
		}
		bare := base()
		bare.Annotations = nil
		if got := WithSpecHash(bare).Annotations["operators.hookwright.dev/spec-hash"]; got == "" {
			t.Error("WithSpecHash on an object without annotations set no spec-hash")
		}
	})
}
