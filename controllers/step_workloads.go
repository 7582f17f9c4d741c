package controllers

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
)

// ensureWorkloads applies every install Deployment (mounting the serving
// Secret into webhook Deployments), the webhook Services, and bare
// ServiceAccounts that are missing. It then stops the pipeline until every
// webhook Deployment is available: the CRD is never pointed at a webhook
// that does not serve.
func (r *WebhookInstallReconciler) ensureWorkloads(ctx context.Context, s *installState) error {
	servingByDeployment := map[string]*desired.Serving{}
	podsLabelled := map[string]bool{} // every pod carries LabelDeployment
	var unavailableCreated []time.Time
	for _, w := range s.webhooks {
		svc := s.services[w.Service]
		cert, _ := certs.ParseCert(svc.servingPEM)
		servingByDeployment[w.Deployment] = &desired.Serving{SecretName: svc.secretName, Fingerprint: certs.Fingerprint(cert)}
	}
	for _, spec := range s.install.Spec.Install.Spec.Deployments {
		if _, isWebhook := servingByDeployment[spec.Name]; s.keepOnly && !isWebhook {
			continue // a deleted or replaced install maintains only what its kept CRDs need
		}
		want := desired.Deployment(s.install, spec, servingByDeployment[spec.Name])
		if settled, deploymentCached := r.serviceAccountSettled(ctx, want); !settled {
			if err := r.ensureServiceAccount(ctx, s, spec.Spec.Template.Spec.ServiceAccountName, !deploymentCached); err != nil {
				return r.componentFailed(s, err)
			}
		}
		dep, err := r.ensureDeployment(ctx, s, want)
		if err != nil {
			return r.componentFailed(s, err)
		}
		serving, isWebhook := servingByDeployment[spec.Name]
		if isWebhook && fullyRolledOut(dep) && dep.Spec.Template.Labels[desired.LabelDeployment] == spec.Name {
			podsLabelled[spec.Name] = true
		}
		if isWebhook && !available(dep) {
			s.unavailable = append(s.unavailable, fmt.Sprintf("%s (%d/%d available)", dep.Name, dep.Status.AvailableReplicas, replicas(dep)))
			unavailableCreated = append(unavailableCreated, dep.CreationTimestamp.Time)
		} else if isWebhook {
			s.recordAvailableSince(dep)
		}
		if isWebhook && !runsCertificate(dep, serving.Fingerprint) {
			s.rollingOut = append(s.rollingOut, dep.Name)
		} else if isWebhook {
			s.markRolledOut(spec.Name)
		}
	}
	for _, w := range s.webhooks {
		svc, err := desired.Service(s.install, deploymentSpecOf(s.install, w.Deployment), w)
		if err != nil {
			s.stop(v1alpha1.PhaseFailed, v1alpha1.ReasonInstallComponentFailed, err.Error())
			return nil
		}
		if err := r.ensureService(ctx, s, desired.WithSpecHash(svc), podsLabelled[w.Deployment]); err != nil {
			return r.componentFailed(s, err)
		}
	}
	s.workloadsChecked = true
	if len(s.unavailable) > 0 {
		// A Deployment that has just been created gets a pass once it
		// is firstStatusGrace old even if it never turns available (no
		// status write of its own wakes one): a first status that
		// waited for it is then written.
		if s.startingFor = startingFor(unavailableCreated, s.now); s.startingFor > 0 {
			s.retryWithin(s.startingFor)
		}
		s.stop(v1alpha1.PhaseInstalling, v1alpha1.ReasonDeploymentUnavailable,
			fmt.Sprintf("waiting for webhook deployments to be available: %v", s.unavailable))
	}
	return nil
}

// markRolledOut records that every Service of deployment is served by
// the current serving certificate everywhere. The certificates step read
// the Deployment earlier in the pass; this read is the fresher one. Were
// the rollout to finish between the two, the pass would point the CRD at
// the webhook and verify it, yet leave the first issuance in progress
// until some later event: one more status write and two Events, with
// nothing changed in between.
func (s *installState) markRolledOut(deployment string) {
	for _, w := range s.webhooks {
		if svc := s.services[w.Service]; w.Deployment == deployment && svc != nil {
			svc.rolledOut = true
		}
	}
}

func (r *WebhookInstallReconciler) ensureDeployment(ctx context.Context, s *installState, want *appsv1.Deployment) (*appsv1.Deployment, error) {
	have := &appsv1.Deployment{}
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), have); {
	case apierrors.IsNotFound(err):
		if err := r.refuseForeign(ctx, &appsv1.Deployment{}, want.Namespace, want.Name); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		if err := checkBelongs(s, "deployment", have); err != nil {
			return nil, err
		}
		if have.Annotations[desired.AnnotationSpecHash] == want.Annotations[desired.AnnotationSpecHash] {
			return have, nil
		}
	}
	// No Event: the Deployment's own Events tell its rollout, and the
	// install's status tells when it is available.
	if err := r.apply(ctx, want); err != nil {
		return nil, err
	}
	return want, nil
}

// ensureService applies want. A Service made before it selected on
// LabelDeployment keeps its shared selector until podsLabelled (every pod
// of its Deployment carries the label).
func (r *WebhookInstallReconciler) ensureService(ctx context.Context, s *installState, want *corev1.Service, podsLabelled bool) error {
	have := &corev1.Service{}
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), have); {
	case apierrors.IsNotFound(err):
		if err := r.refuseForeign(ctx, &corev1.Service{}, want.Namespace, want.Name); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		if err := checkBelongs(s, "service", have); err != nil {
			return err
		}
		if !podsLabelled && !desired.SelectsOwnPods(have) {
			want = desired.WithSharedSelector(want)
		}
		if have.Annotations[desired.AnnotationSpecHash] == want.Annotations[desired.AnnotationSpecHash] {
			return nil
		}
	}
	return r.apply(ctx, want)
}

// serviceAccountSettled: the cached Deployment is the one this pass
// applies, and every pod of its template exists, so no pod waits to be
// created under its ServiceAccount and the live read of that account (it
// is not cached) is skipped. A pod exists only if the API server admitted
// it, which it does not while its ServiceAccount is missing; the pods
// need not be ready, so the passes between a pod's creation and its
// readiness (minutes of image pulls on a real node) skip the read too, as
// does an idle resync, one object less per Deployment. A ServiceAccount deleted later is
// missed only until a pod has to be made again: the ReplicaSet cannot
// make it, the Deployment's status says so, its update wakes the install,
// and that pass creates the account again. deploymentCached: the cache
// holds the Deployment at all.
func (r *WebhookInstallReconciler) serviceAccountSettled(ctx context.Context, want *appsv1.Deployment) (settled, deploymentCached bool) {
	have := &appsv1.Deployment{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
		return false, false
	}
	return have.Annotations[desired.AnnotationSpecHash] == want.Annotations[desired.AnnotationSpecHash] && podsMade(have), true
}

// podsMade: the current spec observed, a pod of its template exists for
// every replica, and the deployment controller reports no pod it failed
// to create.
func podsMade(dep *appsv1.Deployment) bool {
	st := dep.Status
	for _, c := range st.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return false
		}
	}
	return st.ObservedGeneration >= dep.Generation && st.UpdatedReplicas >= replicas(dep)
}

// ensureServiceAccount creates a missing ServiceAccount bare: Hookwright
// never grants permissions on anyone's behalf. It records no Event: the
// account is a step of the install, and its labels (managed-by, install)
// are the lasting record of every identity Hookwright made, which an
// Event's hour would not be.
//
// createFirst (the pass makes the Deployment, so its account is usually
// missing too): it creates without reading first, one request where a
// read and a create were two. An account that exists (AlreadyExists) is
// someone else's, or an earlier pass's, and is left as it is; a create
// refused for another reason (an admission policy on accounts, say)
// fails the step only when the account does not exist. Otherwise (a
// Deployment whose pods are not all made yet, which a stuck one stays
// through every resync) it reads first, so that such passes read the
// account rather than send a create that fails on each of them.
func (r *WebhookInstallReconciler) ensureServiceAccount(ctx context.Context, s *installState, name string, createFirst bool) error {
	if name == "" || name == "default" {
		return nil
	}
	key := client.ObjectKey{Namespace: s.install.Namespace, Name: name}
	if !createFirst {
		if err := r.APIReader.Get(ctx, key, &corev1.ServiceAccount{}); !apierrors.IsNotFound(err) {
			return err
		}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: desired.InstallLabels(s.install)}}
	err := r.Client.Create(ctx, sa, client.FieldOwner(desired.FieldManager))
	if err == nil || apierrors.IsAlreadyExists(err) {
		return nil // AlreadyExists: made by someone else (since the read, if any): not Hookwright's to make
	}
	if createFirst && r.APIReader.Get(ctx, key, &corev1.ServiceAccount{}) == nil {
		return nil
	}
	return fmt.Errorf("creating service account %s: %w", name, err)
}

func (r *WebhookInstallReconciler) componentFailed(s *installState, err error) error {
	s.stop(v1alpha1.PhaseFailed, v1alpha1.ReasonInstallComponentFailed, err.Error())
	return err
}

// deploymentSpecOf finds a webhook's deployment; admission guarantees it exists.
func deploymentSpecOf(install *v1alpha1.WebhookInstall, name string) *appsv1.DeploymentSpec {
	for i := range install.Spec.Install.Spec.Deployments {
		if d := &install.Spec.Install.Spec.Deployments[i]; d.Name == name {
			return &d.Spec
		}
	}
	return &appsv1.DeploymentSpec{}
}

// recordAvailableSince keeps when dep, available, last turned so.
func (s *installState) recordAvailableSince(dep *appsv1.Deployment) {
	for _, c := range dep.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			if s.availableSince == nil {
				s.availableSince = map[string]time.Time{}
			}
			s.availableSince[dep.Name] = c.LastTransitionTime.Time
		}
	}
}

// available: the Deployment serves, per the deployment controller's own
// Available condition. A rolling update keeps it available.
func available(dep *appsv1.Deployment) bool {
	if dep.Generation == 0 || dep.Status.AvailableReplicas < 1 {
		return false
	}
	for _, c := range dep.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// fullyRolledOut: the current spec observed, every replica updated and
// available, and no replica of an older template left running: the test
// `kubectl rollout status` applies. During a surge the deployment
// controller counts the new, not yet ready pod as updated while the old
// pod is the available one, so updated and available counts alone would
// call a rollout done before the new template serves.
func fullyRolledOut(dep *appsv1.Deployment) bool {
	want, st := replicas(dep), dep.Status
	return available(dep) && st.ObservedGeneration >= dep.Generation &&
		st.UpdatedReplicas >= want && st.Replicas <= st.UpdatedReplicas && st.AvailableReplicas >= st.UpdatedReplicas
}

// runsCertificate: every replica runs the pod template that carries the
// serving certificate whose fingerprint is given.
func runsCertificate(dep *appsv1.Deployment, fingerprint string) bool {
	return fullyRolledOut(dep) && dep.Spec.Template.Annotations[desired.AnnotationServingCert] == fingerprint
}

func replicas(dep *appsv1.Deployment) int32 {
	if dep.Spec.Replicas == nil {
		return 1
	}
	return *dep.Spec.Replicas
}
