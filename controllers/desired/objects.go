package desired

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
)

// Paths where every container of a webhook Deployment finds its serving
// certificate: controller-runtime's default, and the OLM-era location.
const (
	ServingCertDir   = "/tmp/k8s-webhook-server/serving-certs"
	APIServerCertDir = "/apiserver.local.config/certificates"

	servingVolume   = "hookwright-serving-cert"
	apiserverVolume = "hookwright-apiserver-cert"
)

// Webhook groups the webhookdefinitions served by one Deployment: they
// share one Service, one CA and one serving certificate.
type Webhook struct {
	Deployment  string
	Service     string
	Definitions []v1alpha1.WebhookDefinition
}

// Webhooks groups install's webhookdefinitions by deployment, in
// deployment order, so results are stable.
func Webhooks(install *v1alpha1.WebhookInstall) []Webhook {
	byDeployment := map[string]*Webhook{}
	var out []Webhook
	for _, d := range install.Spec.Install.Spec.Deployments {
		for _, def := range install.Spec.WebhookDefinitions {
			if def.DeploymentName != d.Name {
				continue
			}
			w, ok := byDeployment[d.Name]
			if !ok {
				out = append(out, Webhook{Deployment: d.Name, Service: InstallServiceName(install, d.Name)})
				w = &out[len(out)-1]
				byDeployment[d.Name] = w
			}
			w.Definitions = append(w.Definitions, def)
		}
	}
	return out
}

// ownedMeta: the author's labels first, Hookwright's ownership labels last,
// so an author label (kubebuilder adds app.kubernetes.io/managed-by:
// kustomize) can never hide an object from Hookwright's label-selected caches.
func ownedMeta(install *v1alpha1.WebhookInstall, name string, extraLabels map[string]string) metav1.ObjectMeta {
	labels := map[string]string{}
	for k, v := range extraLabels {
		labels[k] = v
	}
	for k, v := range InstallLabels(install) {
		labels[k] = v
	}
	return metav1.ObjectMeta{
		Name: name, Namespace: install.Namespace, Labels: labels,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(install, v1alpha1.GroupVersion.WithKind("WebhookInstall"))},
	}
}

// Keys of the CA Secret besides tls.crt and tls.key (the active CA).
const (
	NextCertKey     = "next.crt"     // CA being introduced
	NextKeyKey      = "next.key"     // its key
	PreviousCertKey = "previous.crt" // CA being retired (no key: it signs nothing more)
	// AnnotationPruneAt on the CA Secret: when previous.crt may be dropped.
	AnnotationPruneAt = "operators.hookwright.dev/prune-previous-at"
)

// CAState is the content of a Service's CA Secret.
type CAState struct {
	Active   certs.KeyPair
	Next     *certs.KeyPair
	Previous []byte
	PruneAt  time.Time
	// Rotation is the AnnotationRotation value: the CA rotation this
	// state belongs to (EncodeRotation).
	Rotation string
}

// CASecret holds a Service's CAs and their keys. No pod mounts it.
func CASecret(install *v1alpha1.WebhookInstall, service string, st CAState) *corev1.Secret {
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: ownedMeta(install, CASecretName(service), map[string]string{LabelService: service}),
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: st.Active.CertPEM, corev1.TLSPrivateKeyKey: st.Active.KeyPEM},
	}
	if st.Next != nil {
		secret.Data[NextCertKey], secret.Data[NextKeyKey] = st.Next.CertPEM, st.Next.KeyPEM
	}
	if st.Rotation != "" {
		secret.Annotations = map[string]string{AnnotationRotation: st.Rotation}
	}
	if len(st.Previous) > 0 {
		secret.Data[PreviousCertKey] = st.Previous
		if secret.Annotations == nil {
			secret.Annotations = map[string]string{}
		}
		secret.Annotations[AnnotationPruneAt] = st.PruneAt.UTC().Format(time.RFC3339)
	}
	return secret
}

// ServingSecret is what webhook pods mount: the serving pair and the CA
// certificate (never the CA key).
// rotation is the AnnotationRotation value of the rotation that issued it.
func ServingSecret(install *v1alpha1.WebhookInstall, service string, caCert []byte, serving certs.KeyPair, rotation string) *corev1.Secret {
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: ownedMeta(install, ServingSecretName(service), map[string]string{LabelService: service}),
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: serving.CertPEM, corev1.TLSPrivateKeyKey: serving.KeyPEM, "ca.crt": caCert},
	}
	if rotation != "" {
		secret.Annotations = map[string]string{AnnotationRotation: rotation}
	}
	return secret
}

// Service fronts a webhook Deployment: its selector is the Deployment's
// matchLabels and LabelDeployment, so that it selects that Deployment's
// pods only; one port per distinct containerPort (default 443), whose
// targetPort is the definition's targetPort or the containerPort.
func Service(install *v1alpha1.WebhookInstall, deployment *appsv1.DeploymentSpec, w Webhook) (*corev1.Service, error) {
	if deployment.Selector == nil || len(deployment.Selector.MatchLabels) == 0 {
		return nil, fmt.Errorf("deployment %s needs spec.selector.matchLabels: its webhook Service selects pods by them", w.Deployment)
	}
	ports := map[int32]corev1.ServicePort{}
	for _, def := range w.Definitions {
		port := def.ContainerPort
		if port == 0 {
			port = 443
		}
		target := intstr.FromInt32(port)
		if def.TargetPort != nil {
			target = *def.TargetPort
		}
		if seen, ok := ports[port]; ok && seen.TargetPort != target {
			return nil, fmt.Errorf("webhooks of deployment %s use containerPort %d with two targetPorts (%s, %s): use one", w.Deployment, port, seen.TargetPort.String(), target.String())
		}
		ports[port] = corev1.ServicePort{Name: fmt.Sprintf("webhook-%d", port), Port: port, TargetPort: target, Protocol: corev1.ProtocolTCP}
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: ownedMeta(install, w.Service, nil),
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: maps.Clone(deployment.Selector.MatchLabels)},
	}
	svc.Spec.Selector[LabelDeployment] = w.Deployment
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, p)
	}
	sort.Slice(svc.Spec.Ports, func(i, j int) bool { return svc.Spec.Ports[i].Port < svc.Spec.Ports[j].Port })
	return svc, nil
}

// WithSharedSelector is svc selecting by the Deployment's matchLabels
// only, as Services made before LabelDeployment did, stamped with its
// hash. Such a Service keeps that selector until every pod of its
// Deployment carries the label: narrowing it earlier would leave it
// without endpoints while the pods roll.
func WithSharedSelector(svc *corev1.Service) *corev1.Service {
	shared := svc.DeepCopy()
	delete(shared.Spec.Selector, LabelDeployment)
	return WithSpecHash(shared)
}

// SelectsOwnPods: the Service selects on LabelDeployment.
func SelectsOwnPods(svc *corev1.Service) bool {
	_, ok := svc.Spec.Selector[LabelDeployment]
	return ok
}

// SpecHash is a stable hash of an object's desired content, recorded in
// AnnotationSpecHash so an unchanged object is not written again.
func SpecHash(obj client.Object) string {
	copied := obj.DeepCopyObject().(client.Object)
	annotations := copied.GetAnnotations()
	delete(annotations, AnnotationSpecHash)
	copied.SetAnnotations(annotations)
	raw, _ := json.Marshal(copied)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:12])
}

// WithSpecHash stamps obj with its SpecHash and returns it.
func WithSpecHash[T client.Object](obj T) T {
	hash := SpecHash(obj)
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationSpecHash] = hash
	obj.SetAnnotations(annotations)
	return obj
}
