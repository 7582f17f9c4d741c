package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

// Keeping a CRD's webhook alive ("left in place").
//
// An install that stops serving a CRD it owns (it is deleted, a newer
// install replaces it without listing the CRD, or a new version of it no
// longer lists the CRD) switches the CRD's conversion to None only when
// that is harmless (noneIsUnsafe). Otherwise the CRD keeps converting
// through the install's webhook, and the install keeps it: the claim stays,
// and the webhook's Deployment, Service, Secrets, their rotation and the
// CRD's caBundle are maintained as for any CRD it serves, until the CRD's
// storage is migrated (the next pass then sets None and releases it) or
// another install takes the CRD over. A deleted install keeps its finalizer
// until then; its status says what it keeps alive, why, and how to finish.

// keepAliveNote is what the status says about kept CRDs.
type keepAliveNote struct {
	// phase, when set, is the phase whatever the kept webhooks' health
	// (Replacing); otherwise the phase says how the kept webhooks do.
	phase   v1alpha1.InstallPhase
	reason  string
	message func() string // computed once the pass knows every CRD
}

// keptStatus puts the note into the phase, reason and message computed
// from the pass: a failure of a kept webhook is reported before the note.
func (k *keepAliveNote) keptStatus(phase v1alpha1.InstallPhase, reason, message string) (v1alpha1.InstallPhase, string, string) {
	switch {
	case k == nil:
		return phase, reason, message
	case k.phase != "":
		return k.phase, k.reason, k.message()
	case phase == v1alpha1.PhaseSucceeded:
		return phase, k.reason, k.message()
	}
	return phase, reason, message
}

// keepState returns the crdState that keeps serving crd through the
// install's webhook, or nil when the install does not declare the
// Deployment of the Service the CRD points at (then nothing can be kept).
// The CRD keeps the conversion it has (path, port, review versions); the
// webhook is the install's own, or, when a new version dropped the webhook
// but kept its Deployment, one rebuilt from the CRD and the live Service,
// so the Deployment keeps its certificate mount and the Service its port.
func (r *WebhookInstallReconciler) keepState(ctx context.Context, s *installState, crd *apiextensionsv1.CustomResourceDefinition, why string) (*crdState, error) {
	ref := crd.Spec.Conversion.Webhook.ClientConfig.Service
	port := ptr.Deref(ref.Port, 443)
	live := &corev1.Service{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.install.Namespace, Name: ref.Name}, live); err == nil {
		if live.Labels[desired.LabelInstall] != s.install.Name {
			return nil, nil // adopted by another install: not this one's to keep
		}
	} else if !apierrors.IsNotFound(err) {
		return nil, err
	}
	i := slices.IndexFunc(s.webhooks, func(w desired.Webhook) bool { return w.Service == ref.Name })
	if i < 0 {
		d := slices.IndexFunc(s.install.Spec.Install.Spec.Deployments, func(d operatorsv1alpha1.StrategyDeploymentSpec) bool {
			return desired.IsServiceOf(d.Name, ref.Name)
		})
		if d < 0 {
			return nil, nil
		}
		s.webhooks = append(s.webhooks, desired.Webhook{Deployment: s.install.Spec.Install.Spec.Deployments[d].Name, Service: ref.Name})
		i = len(s.webhooks) - 1
	}
	w := &s.webhooks[i]
	def := v1alpha1.WebhookDefinition{
		GenerateName: "kept-" + crd.Name, Type: operatorsv1alpha1.ConversionWebhook, DeploymentName: w.Deployment,
		ContainerPort: port, WebhookPath: ref.Path,
		AdmissionReviewVersions: append([]string(nil), crd.Spec.Conversion.Webhook.ConversionReviewVersions...),
	}
	if !slices.ContainsFunc(w.Definitions, func(d v1alpha1.WebhookDefinition) bool {
		return d.ContainerPort == port || (d.ContainerPort == 0 && port == 443)
	}) {
		target, err := r.liveTargetPort(ctx, s.install.Namespace, ref.Name, port)
		if err != nil {
			return nil, err
		}
		def.TargetPort = target
		w.Definitions = append(w.Definitions, def)
	}
	return &crdState{name: crd.Name, webhook: *w, definition: def, crd: crd, state: v1alpha1.ConversionPending, kept: true, message: "kept serving: " + why}, nil
}

// liveTargetPort is the target port the Service maps port to, or nil.
func (r *WebhookInstallReconciler) liveTargetPort(ctx context.Context, namespace, service string, port int32) (*intstr.IntOrString, error) {
	svc := &corev1.Service{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: service}, svc); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			return ptr.To(p.TargetPort), nil
		}
	}
	return nil, nil
}

// ownService: the CRD converts through a Service of this install's
// namespace that is still this install's (by label; a replacing install
// relabels what it adopts).
func (r *WebhookInstallReconciler) ownService(ctx context.Context, s *installState, crd *apiextensionsv1.CustomResourceDefinition) (bool, error) {
	if !pointsAtInstall(crd, s.install) {
		return false, nil
	}
	svc := &corev1.Service{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.install.Namespace, Name: crd.Spec.Conversion.Webhook.ClientConfig.Service.Name}, svc)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil && svc.Labels[desired.LabelInstall] == s.install.Name, err
}

// keptNames lists the names of the kept CRDs.
func keptNames(crds []*crdState) []string {
	var names []string
	for _, c := range crds {
		if c.kept {
			names = append(names, c.name)
		}
	}
	return names
}

// keptWhy says, per kept CRD, why None is unsafe and which Service serves it.
func keptWhy(s *installState) string {
	var parts []string
	for _, c := range s.crds {
		if c.kept {
			parts = append(parts, fmt.Sprintf("%s through service %s/%s (%s)", c.name, s.install.Namespace, c.webhook.Service, noneIsUnsafe(c.crd)))
		}
	}
	return strings.Join(parts, "; ")
}

// howToFinish is the admin's way out, common to every kind of keeping.
const howToFinish = "switching them to conversion None could make stored objects unreadable or mangled. To finish, either migrate storage " +
	"(rewrite every object in the storage version, remove the other versions from the CRD's status.storedVersions, and serve only versions " +
	"with the same schema: Hookwright then sets None and lets go), or hand them over"

// keepAliveMessages are the status messages of an install keeping CRDs.
func deletedKeepMessage(s *installState) string {
	return fmt.Sprintf("deleted, but keeps serving CRD(s) %s: %s: create or edit a WebhookInstall (any namespace) that lists them; "+
		"it takes them over once its own webhook serves, and then this install's deletion completes", keptWhy(s), howToFinish)
}

func replacedKeepMessage(s *installState, newer *v1alpha1.WebhookInstall) string {
	return fmt.Sprintf("replaced by WebhookInstall %s, which does not list CRD(s) %s, so this install keeps serving them: %s: "+
		"list them in %s's conversionCRDs, which then takes them over", installRef(newer), keptWhy(s), howToFinish, newer.Name)
}

func droppedKeepMessage(s *installState) string {
	return fmt.Sprintf("%d conversion CRD(s) served by their webhooks; this version no longer lists CRD(s) %s, but keeps serving them: %s: "+
		"list them again, or in another WebhookInstall after deleting this one", len(s.crds)-len(keptNames(s.crds)), keptWhy(s), howToFinish)
}

// recordKeptAlive emits a Warning on each kept CRD when the install's
// reason turns KeptAlive.
func (r *WebhookInstallReconciler) recordKeptAlive(s *installState, old, next v1alpha1.WebhookInstallStatus) {
	if next.Reason != v1alpha1.ReasonKeptAlive || old.Reason == v1alpha1.ReasonKeptAlive {
		return
	}
	for _, c := range s.crds {
		if c.kept && c.crd != nil {
			r.Recorder.Eventf(c.crd, s.install, corev1.EventTypeWarning, "ConversionKeptAlive", "KeepAlive",
				"WebhookInstall %s keeps serving CRD %s through service %s/%s: %s. See the install's status for how to finish",
				installRef(s.install), c.name, s.install.Namespace, c.webhook.Service, noneIsUnsafe(c.crd))
		}
	}
}

// refuseAdoptingKept stops an install that replaces another one when it
// would adopt (by name) the Deployment or Service through which the
// replaced install keeps serving a CRD this install does not list: the
// adopted Deployment would run this install's pods, and the kept CRD's
// caBundle would no longer follow its certificates.
func (r *WebhookInstallReconciler) refuseAdoptingKept(ctx context.Context, s *installState) error {
	old := replacedRef(s.install)
	if old == "" {
		return nil
	}
	claimed := &metav1.PartialObjectMetadataList{}
	claimed.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	if err := r.Client.List(ctx, claimed, client.MatchingFields{indexCRDOwner: old}); err != nil {
		return fmt.Errorf("listing CRDs: %w", err)
	}
	listed := conversionCRDNames(s.install)
	for _, m := range claimed.Items {
		if slices.Contains(listed, m.Name) {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: m.Name}, crd); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("reading CRD %s: %w", m.Name, err)
		}
		unsafe := noneIsUnsafe(crd)
		if crd.Annotations[v1alpha1.AnnotationOwner] != old || !pointsAtInstall(crd, s.install) || unsafe == "" {
			continue
		}
		service := crd.Spec.Conversion.Webhook.ClientConfig.Service.Name
		for _, d := range s.install.Spec.Install.Spec.Deployments {
			if desired.IsServiceOf(d.Name, service) {
				s.stop(v1alpha1.PhaseFailed, v1alpha1.ReasonKeptServiceTaken, fmt.Sprintf(
					"WebhookInstall %s keeps serving CRD %s, which this install does not list, through service %s of deployment %s (%s; conversion None is unsafe). "+
						"This install would take deployment %s over: list CRD %s in this install's conversionCRDs (it then takes the CRD over too), give the deployment another name, "+
						"or migrate the CRD's storage first", old, crd.Name, service, d.Name, unsafe, d.Name, crd.Name))
				return nil
			}
		}
	}
	return nil
}
