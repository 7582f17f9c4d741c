package desired

import (
	"fmt"
	"path"
	"reflect"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

const (
	servingCertPath   = "/tmp/k8s-webhook-server/serving-certs"
	apiserverCertPath = "/apiserver.local.config/certificates"
	specHashKey       = "operators.hookwright.dev/spec-hash"
	fingerprintKey    = "operators.hookwright.dev/serving-cert-fingerprint"
)

// authorDeploymentSpec is a webhook deployment as an author writes it: two
// containers, its own volumes, and a mount of its own at the serving path.
func authorDeploymentSpec() operatorsv1alpha1.StrategyDeploymentSpec {
	spec := newDeploymentSpec("crontab.webhook",
		corev1.Container{Name: "manager", Image: "example.com/manager:v1", VolumeMounts: []corev1.VolumeMount{
			{Name: "old-cert", MountPath: servingCertPath + "/"}, // the author's, at our path
			{Name: "data", MountPath: "/data"},
		}},
		corev1.Container{Name: "sidecar", Image: "example.com/sidecar:v1", VolumeMounts: []corev1.VolumeMount{
			{Name: "config", MountPath: "/etc/config", ReadOnly: true},
			{Name: "old-apiserver", MountPath: apiserverCertPath},
		}},
	)
	spec.Label = map[string]string{"control-plane": "webhook", "team": "crontab"}
	spec.Spec.Template.Annotations = map[string]string{"kubectl.kubernetes.io/default-container": "manager"}
	spec.Spec.Template.Spec.Volumes = []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "old-cert", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "old-apiserver", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	return spec
}

func volumeByName(pod *corev1.PodSpec, name string) *corev1.Volume {
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == name {
			return &pod.Volumes[i]
		}
	}
	return nil
}

func mountsAt(c corev1.Container, dir string) []corev1.VolumeMount {
	var out []corev1.VolumeMount
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) == dir {
			out = append(out, m)
		}
	}
	return out
}

func TestDeploymentMountsServingCert(t *testing.T) {
	install := newInstall(nil)
	dep := Deployment(install, authorDeploymentSpec(), &Serving{SecretName: "crontab-webhook-service-cert", Fingerprint: "sha256:abc"})
	pod := &dep.Spec.Template.Spec

	if len(pod.Containers) != 2 {
		t.Fatalf("containers = %d, want 2", len(pod.Containers))
	}
	files := map[string][2]string{servingCertPath: {"tls.crt", "tls.key"}, apiserverCertPath: {"apiserver.crt", "apiserver.key"}}
	for _, c := range pod.Containers {
		for dir, want := range files {
			mounts := mountsAt(c, dir)
			if len(mounts) != 1 {
				t.Errorf("container %s: %d mounts at %s, want exactly 1: %+v", c.Name, len(mounts), dir, c.VolumeMounts)
				continue
			}
			m := mounts[0]
			if !m.ReadOnly {
				t.Errorf("container %s: mount at %s is writable", c.Name, dir)
			}
			if m.Name == "old-cert" || m.Name == "old-apiserver" {
				t.Errorf("container %s: the author's mount %s at %s was kept, want it replaced", c.Name, m.Name, dir)
			}
			v := volumeByName(pod, m.Name)
			if v == nil {
				t.Errorf("container %s: mount at %s names volume %q, which the pod does not have", c.Name, dir, m.Name)
				continue
			}
			if v.Secret == nil || v.Secret.SecretName != "crontab-webhook-service-cert" {
				t.Errorf("volume %s for %s = %+v, want Secret crontab-webhook-service-cert", v.Name, dir, v.VolumeSource)
				continue
			}
			wantItems := []corev1.KeyToPath{{Key: "tls.crt", Path: want[0]}, {Key: "tls.key", Path: want[1]}}
			if !reflect.DeepEqual(v.Secret.Items, wantItems) {
				t.Errorf("volume %s for %s items = %+v, want %+v", v.Name, dir, v.Secret.Items, wantItems)
			}
		}
	}

	// The author's other mounts are kept.
	for container, want := range map[int]corev1.VolumeMount{
		0: {Name: "data", MountPath: "/data"},
		1: {Name: "config", MountPath: "/etc/config", ReadOnly: true},
	} {
		found := false
		for _, m := range pod.Containers[container].VolumeMounts {
			found = found || reflect.DeepEqual(m, want)
		}
		if !found {
			t.Errorf("container %s lost the author's mount %+v: %+v", pod.Containers[container].Name, want, pod.Containers[container].VolumeMounts)
		}
	}
	if n := len(pod.Containers[0].VolumeMounts); n != 3 {
		t.Errorf("container manager has %d mounts, want 3 (data + 2 cert mounts): %+v", n, pod.Containers[0].VolumeMounts)
	}
	if n := len(pod.Containers[1].VolumeMounts); n != 3 {
		t.Errorf("container sidecar has %d mounts, want 3 (config + 2 cert mounts): %+v", n, pod.Containers[1].VolumeMounts)
	}

	// The author's other volumes are kept; volume names stay unique.
	for _, name := range []string{"data", "config"} {
		if volumeByName(pod, name) == nil {
			t.Errorf("the author's volume %q was dropped", name)
		}
	}
	seen := map[string]bool{}
	for _, v := range pod.Volumes {
		if seen[v.Name] {
			t.Errorf("volume %q appears twice", v.Name)
		}
		seen[v.Name] = true
	}

	if got := dep.Spec.Template.Annotations[fingerprintKey]; got != "sha256:abc" {
		t.Errorf("pod template annotation %s = %q, want sha256:abc", fingerprintKey, got)
	}
	if got := dep.Spec.Template.Annotations["kubectl.kubernetes.io/default-container"]; got != "manager" {
		t.Errorf("the author's pod annotation was lost: %v", dep.Spec.Template.Annotations)
	}
}

func TestDeploymentReappliedIsIdempotent(t *testing.T) {
	// Applying the builder's own output again (a spec that already carries
	// Hookwright's volumes and mounts) must not duplicate them.
	install := newInstall(nil)
	serving := &Serving{SecretName: "s", Fingerprint: "f"}
	first := Deployment(install, authorDeploymentSpec(), serving)
	again := Deployment(install, operatorsv1alpha1.StrategyDeploymentSpec{Name: first.Name, Spec: first.Spec, Label: authorDeploymentSpec().Label}, serving)
	if !reflect.DeepEqual(first.Spec.Template.Spec.Volumes, again.Spec.Template.Spec.Volumes) {
		t.Errorf("volumes changed on re-application:\n%+v\n%+v", first.Spec.Template.Spec.Volumes, again.Spec.Template.Spec.Volumes)
	}
	for i := range first.Spec.Template.Spec.Containers {
		if a, b := first.Spec.Template.Spec.Containers[i].VolumeMounts, again.Spec.Template.Spec.Containers[i].VolumeMounts; !reflect.DeepEqual(a, b) {
			t.Errorf("container %d mounts changed on re-application:\n%+v\n%+v", i, a, b)
		}
	}
}

func TestDeploymentWithoutServing(t *testing.T) {
	spec := authorDeploymentSpec()
	dep := Deployment(newInstall(nil), spec, nil)
	if !reflect.DeepEqual(dep.Spec.Template.Spec.Volumes, spec.Spec.Template.Spec.Volumes) {
		t.Errorf("volumes = %+v, want the author's unchanged %+v", dep.Spec.Template.Spec.Volumes, spec.Spec.Template.Spec.Volumes)
	}
	for i, c := range dep.Spec.Template.Spec.Containers {
		if !reflect.DeepEqual(c.VolumeMounts, spec.Spec.Template.Spec.Containers[i].VolumeMounts) {
			t.Errorf("container %s mounts = %+v, want the author's unchanged", c.Name, c.VolumeMounts)
		}
	}
	if _, ok := dep.Spec.Template.Annotations[fingerprintKey]; ok {
		t.Errorf("pod template has %s without a serving certificate", fingerprintKey)
	}
	if dep.Annotations[specHashKey] == "" {
		t.Errorf("Deployment has no %s annotation", specHashKey)
	}
}

func TestDeploymentMeta(t *testing.T) {
	dep := Deployment(newInstall(nil), authorDeploymentSpec(), nil)
	if dep.Name != "crontab.webhook" {
		t.Errorf("name = %q, want crontab.webhook", dep.Name)
	}
	if dep.APIVersion != "apps/v1" || dep.Kind != "Deployment" {
		t.Errorf("TypeMeta = %s/%s, want apps/v1 Deployment", dep.APIVersion, dep.Kind)
	}
	assertInstallLabels(t, dep)
	assertControllerRef(t, dep)
	for k, v := range map[string]string{"control-plane": "webhook", "team": "crontab"} {
		if dep.Labels[k] != v {
			t.Errorf("label %s = %q, want %q from spec.label", k, dep.Labels[k], v)
		}
	}
	if !reflect.DeepEqual(dep.Spec.Selector.MatchLabels, map[string]string{"app": "crontab.webhook"}) {
		t.Errorf("selector = %v, want the author's", dep.Spec.Selector.MatchLabels)
	}
}

func TestDeploymentAuthorLabelsCannotOverrideOwnershipLabels(t *testing.T) {
	// Kubebuilder v4 scaffolds label the manager Deployment
	// app.kubernetes.io/managed-by=kustomize, and operator-sdk copies those
	// labels into the CSV's deployment label. The manager's caches select
	// on managed-by=hookwright, so the author's value must not win.
	spec := authorDeploymentSpec()
	spec.Label["app.kubernetes.io/managed-by"] = "kustomize"
	spec.Label["operators.hookwright.dev/install"] = "someone-else"
	assertInstallLabels(t, Deployment(newInstall(nil), spec, nil))
}

func TestDeploymentStrategy(t *testing.T) {
	tests := []struct {
		name string
		in   appsv1.DeploymentStrategy
		want appsv1.DeploymentStrategy
	}{
		{
			name: "unset becomes a surge rollout",
			in:   appsv1.DeploymentStrategy{},
			want: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptrIntStr(intstr.FromInt32(0)), MaxSurge: ptrIntStr(intstr.FromInt32(1)),
			}},
		},
		{
			name: "explicit Recreate kept",
			in:   appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			want: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
		},
		{
			name: "explicit RollingUpdate kept",
			in: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptrIntStr(intstr.FromString("25%")), MaxSurge: ptrIntStr(intstr.FromInt32(3)),
			}},
			want: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptrIntStr(intstr.FromString("25%")), MaxSurge: ptrIntStr(intstr.FromInt32(3)),
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := authorDeploymentSpec()
			spec.Spec.Strategy = tt.in
			for _, serving := range []*Serving{nil, {SecretName: "s", Fingerprint: "f"}} {
				dep := Deployment(newInstall(nil), spec, serving)
				if !reflect.DeepEqual(dep.Spec.Strategy, tt.want) {
					t.Errorf("serving=%v: strategy = %+v, want %+v", serving != nil, dep.Spec.Strategy, tt.want)
				}
			}
		})
	}
}

func ptrIntStr(v intstr.IntOrString) *intstr.IntOrString { return &v }

func TestDeploymentDoesNotMutateInput(t *testing.T) {
	for _, serving := range []*Serving{nil, {SecretName: "s", Fingerprint: "f"}} {
		spec := authorDeploymentSpec()
		before := *spec.DeepCopy()
		dep := Deployment(newInstall(nil), spec, serving)
		if !reflect.DeepEqual(spec, before) {
			t.Fatalf("serving=%v: Deployment mutated its input spec:\n got %+v\nwant %+v", serving != nil, spec, before)
		}
		// The result shares no maps or slices with the input.
		dep.Labels["team"] = "changed"
		dep.Spec.Template.Annotations["kubectl.kubernetes.io/default-container"] = "changed"
		dep.Spec.Template.Labels["app"] = "changed"
		dep.Spec.Selector.MatchLabels["app"] = "changed"
		dep.Spec.Template.Spec.Containers[0].Image = "changed"
		dep.Spec.Template.Spec.Containers[1].VolumeMounts[0].MountPath = "/changed"
		dep.Spec.Template.Spec.Volumes[0].Name = "changed"
		if !reflect.DeepEqual(spec, before) {
			t.Errorf("serving=%v: the result aliases the input spec: changing it changed the input:\n got %+v\nwant %+v", serving != nil, spec, before)
		}
	}
}

func TestDeploymentSpecHash(t *testing.T) {
	install := newInstall(nil)
	hash := func(spec operatorsv1alpha1.StrategyDeploymentSpec, serving *Serving) string {
		t.Helper()
		dep := Deployment(install, spec, serving)
		h := dep.Annotations[specHashKey]
		if h == "" {
			t.Fatalf("Deployment has no %s annotation", specHashKey)
		}
		if want := SpecHash(dep); h != want {
			t.Errorf("%s = %s, want SpecHash of the result %s", specHashKey, h, want)
		}
		return h
	}
	base := hash(authorDeploymentSpec(), &Serving{SecretName: "s", Fingerprint: "f1"})
	if h := hash(authorDeploymentSpec(), &Serving{SecretName: "s", Fingerprint: "f1"}); h != base {
		t.Errorf("same inputs, different hashes: %s then %s", base, h)
	}
	changed := map[string]string{
		"fingerprint": hash(authorDeploymentSpec(), &Serving{SecretName: "s", Fingerprint: "f2"}),
		"secret name": hash(authorDeploymentSpec(), &Serving{SecretName: "s2", Fingerprint: "f1"}),
		"no serving":  hash(authorDeploymentSpec(), nil),
	}
	image := authorDeploymentSpec()
	image.Spec.Template.Spec.Containers[0].Image = "example.com/manager:v2"
	changed["image"] = hash(image, &Serving{SecretName: "s", Fingerprint: "f1"})
	label := authorDeploymentSpec()
	label.Label["team"] = "other"
	changed["label"] = hash(label, &Serving{SecretName: "s", Fingerprint: "f1"})
	for what, h := range changed {
		if h == base {
			t.Errorf("changing the %s left the spec hash at %s", what, h)
		}
	}
}

func TestKeyFileMode(t *testing.T) {
	root, user := ptr.To(int64(0)), ptr.To(int64(65532))
	tests := []struct {
		name string
		pod  corev1.PodSpec
		want *int32
	}{
		{"fsGroup: group-readable", corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To(int64(2000)), RunAsUser: user}, Containers: []corev1.Container{{Name: "a"}}}, ptr.To(int32(0o440))},
		{"every container root: owner-readable", corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsUser: root}, Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}, ptr.To(int32(0o400))},
		{"root by container security context", corev1.PodSpec{Containers: []corev1.Container{{Name: "a", SecurityContext: &corev1.SecurityContext{RunAsUser: root}}}}, ptr.To(int32(0o400))},
		{"one container non-root, no fsGroup: kubelet's default", corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsUser: root}, Containers: []corev1.Container{{Name: "a"}, {Name: "b", SecurityContext: &corev1.SecurityContext{RunAsUser: user}}}}, nil},
		{"user unknown (image's), no fsGroup: kubelet's default", corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := KeyFileMode(tt.pod)
			if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
				t.Fatalf("KeyFileMode = %v, want %v", ptrString(got), ptrString(tt.want))
			}
		})
	}
}

func TestDeploymentMountsTheKeyWithItsMode(t *testing.T) {
	spec := newDeploymentSpec("webhook")
	install := newInstall([]operatorsv1alpha1.StrategyDeploymentSpec{spec})
	spec.Spec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To(int64(2000))}
	dep := Deployment(install, spec, &Serving{SecretName: "s", Fingerprint: "f"})
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.Secret == nil || v.Secret.SecretName != "s" {
			continue
		}
		for _, item := range v.Secret.Items {
			switch item.Key {
			case corev1.TLSPrivateKeyKey:
				if item.Mode == nil || *item.Mode != 0o440 {
					t.Errorf("volume %s: key mode %s, want 0440", v.Name, ptrString(item.Mode))
				}
			default:
				if item.Mode != nil {
					t.Errorf("volume %s: %s has mode %o, want the default", v.Name, item.Key, *item.Mode)
				}
			}
		}
	}
}

func ptrString(p *int32) string {
	if p == nil {
		return "default"
	}
	return fmt.Sprintf("%#o", *p)
}
