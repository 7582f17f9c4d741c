package desired

import (
	"path"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// Serving is what a webhook Deployment mounts: the serving Secret and the
// fingerprint of the certificate in it.
type Serving struct {
	SecretName  string
	Fingerprint string
}

// Deployment builds an install deployment. With serving set it mounts the
// serving Secret into every container at ServingCertDir (tls.crt, tls.key)
// and APIServerCertDir (apiserver.crt, apiserver.key), replacing any mount
// the author put there, labels the pods with the Deployment's name (the
// Service selects on it, LabelDeployment), and stamps the certificate
// fingerprint on the pod template so that a new certificate rolls the pods, whose containers
// keep serving DrainSeconds after they are told to stop. An unset rollout
// strategy becomes a surge rollout that never drops below the wanted
// replicas: a conversion webhook must always answer.
func Deployment(install *v1alpha1.WebhookInstall, spec operatorsv1alpha1.StrategyDeploymentSpec, serving *Serving) *appsv1.Deployment {
	dep := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: ownedMeta(install, spec.Name, spec.Label),
		Spec:       *spec.Spec.DeepCopy(),
	}
	if dep.Spec.Strategy.Type == "" {
		dep.Spec.Strategy = appsv1.DeploymentStrategy{
			Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromInt32(0)),
				MaxSurge:       ptr.To(intstr.FromInt32(1)),
			},
		}
	}
	if serving == nil {
		return WithSpecHash(dep)
	}
	pod := &dep.Spec.Template
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationServingCert] = serving.Fingerprint
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[LabelDeployment] = spec.Name
	withDrain(&pod.Spec)
	keyMode := KeyFileMode(pod.Spec)
	pod.Spec.Volumes = append(withoutVolumes(pod.Spec.Volumes, servingVolume, apiserverVolume),
		secretVolume(servingVolume, serving.SecretName, corev1.TLSCertKey, corev1.TLSPrivateKeyKey, keyMode),
		secretVolume(apiserverVolume, serving.SecretName, "apiserver.crt", "apiserver.key", keyMode),
	)
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		c.VolumeMounts = append(withoutMounts(c.VolumeMounts, ServingCertDir, APIServerCertDir),
			corev1.VolumeMount{Name: servingVolume, MountPath: ServingCertDir, ReadOnly: true},
			corev1.VolumeMount{Name: apiserverVolume, MountPath: APIServerCertDir, ReadOnly: true},
		)
	}
	return WithSpecHash(dep)
}

// secretVolume projects tls.crt and tls.key under the given file names,
// the key with keyMode (nil: kubelet's default, 0644).
func secretVolume(name, secret, certFile, keyFile string, keyMode *int32) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret,
		Items: []corev1.KeyToPath{
			{Key: corev1.TLSCertKey, Path: certFile},
			{Key: corev1.TLSPrivateKeyKey, Path: keyFile, Mode: keyMode},
		},
	}}}
}

// KeyFileMode is the mode of the mounted serving key: readable by the
// pod's own user only. Kubelet writes Secret files as root, group fsGroup
// when the pod sets one: then 0440 (the container's processes are in that
// group). Without fsGroup, 0400 only when every container runs as root
// (uid 0); a non-root container without fsGroup could not read a 0400
// root-owned key, so its key keeps kubelet's default 0644: set fsGroup in
// the pod spec to get 0440 (docs/author-guide.md).
func KeyFileMode(pod corev1.PodSpec) *int32 {
	if pod.SecurityContext != nil && pod.SecurityContext.FSGroup != nil {
		return ptr.To(int32(0o440))
	}
	podUser := (*int64)(nil)
	if pod.SecurityContext != nil {
		podUser = pod.SecurityContext.RunAsUser
	}
	for _, c := range pod.Containers {
		user := podUser
		if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
			user = c.SecurityContext.RunAsUser
		}
		if user == nil || *user != 0 {
			return nil
		}
	}
	return ptr.To(int32(0o400))
}

func withoutVolumes(volumes []corev1.Volume, names ...string) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range volumes {
		if !contains(names, v.Name) {
			out = append(out, v)
		}
	}
	return out
}

func withoutMounts(mounts []corev1.VolumeMount, paths ...string) []corev1.VolumeMount {
	var out []corev1.VolumeMount
	for _, m := range mounts {
		if !contains(paths, path.Clean(m.MountPath)) && !contains([]string{servingVolume, apiserverVolume}, m.Name) {
			out = append(out, m)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
