package controllers

import (
	"crypto/x509"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
	"github.com/hookwright/hookwright/controllers/rotation"
)

// installState is what one pass of Reconcile learns and decides. Steps
// fill it in order; the status is computed from it once, at the end.
type installState struct {
	install *v1alpha1.WebhookInstall
	// installLive: install is a copy the API server returned this pass (a
	// live read, or the finalizer patch's answer), not the cache's.
	installLive bool
	// generation is the install's generation this pass acted on: the
	// status says it observed that one, even when a conflict made the
	// status write re-read a newer install (whose spec no step saw).
	generation int64
	now        time.Time
	webhooks   []desired.Webhook

	crds     []*crdState // every conversion CRD, in spec order
	services map[string]*serviceCerts
	// admission are the admission webhooks, validating then mutating,
	// each in spec order, with their live configurations (read before the
	// certificates step, so a CA rotation sees their caBundles too).
	// Empty while the install is deleted or replaced.
	admission []*admissionState

	// keepOnly: the install is deleted or replaced, and maintains only the
	// webhooks of the CRDs it keeps serving (keepalive.go).
	keepOnly  bool
	keepAlive *keepAliveNote // what the status says about kept CRDs
	// namespaceTerminating: the install is deleted with its namespace, so
	// nothing can be kept serving (the namespace controller deletes the
	// webhook's workloads and the API server refuses to create new ones).
	namespaceTerminating bool

	workloadsChecked bool     // ensureWorkloads ran to its end
	unavailable      []string // webhook Deployments not available yet
	// availableSince: when each available webhook Deployment last turned
	// available (its Available condition's lastTransitionTime), by name.
	availableSince map[string]time.Time
	// endpointsJustLate: the pass waits for a Service's first ready
	// endpoint, and its Deployment turned available less than
	// endpointsRetry ago (status_defer.go).
	endpointsJustLate bool
	// startingFor: how much longer every webhook Deployment not available
	// yet counts as just created (firstStatusGrace); zero when none waits,
	// or one was created longer ago (status_defer.go).
	startingFor time.Duration
	rollingOut  []string // webhook Deployments not yet all on the current template
	issuedCerts bool

	// migrations are the storage migration records this pass changed or
	// started; the others stay as the status has them when it is written.
	migrations []v1alpha1.StorageMigrationStatus

	// halt stops the pipeline: the steps after it cannot run yet.
	halt *halt
	// retryAfter asks for another pass soon (e.g. to verify a fresh write).
	retryAfter time.Duration

	rotations      []v1alpha1.RotationRecord // started this pass
	rotationNotes  map[string]string         // per Service: what a rotation waits for
	handledRequest string                    // manual rotation request carried out this pass
	// stored is, per Service, the rotations recorded on its Secrets
	// (desired.AnnotationRotation): the audit trail's write-ahead log.
	stored map[string]*storedRotations
}

// storedRotations are the rotation records a Service's Secrets carry.
type storedRotations struct {
	caAnnotation string // kept on every later write of the CA Secret
	records      []desired.RotationProvenance
}

// carried: one of the Service's Secrets was written for this request.
func (st *storedRotations) carried(request string) bool {
	if st == nil {
		return false
	}
	for _, p := range st.records {
		if request != "" && p.Request == request {
			return true
		}
	}
	return false
}

type halt struct {
	phase   v1alpha1.InstallPhase
	reason  string
	message string
}

// observedGeneration is the generation the status reports as observed.
func (s *installState) observedGeneration() int64 {
	if s.generation != 0 {
		return s.generation
	}
	return s.install.Generation
}

func (s *installState) stop(phase v1alpha1.InstallPhase, reason, message string) {
	if s.halt == nil {
		s.halt = &halt{phase: phase, reason: reason, message: message}
	}
}

func (s *installState) retryWithin(d time.Duration) {
	if s.retryAfter == 0 || d < s.retryAfter {
		s.retryAfter = d
	}
}

// crdState is one conversion CRD as seen this pass.
type crdState struct {
	name       string
	webhook    desired.Webhook
	definition v1alpha1.WebhookDefinition
	crd        *apiextensionsv1.CustomResourceDefinition // live read, nil if missing

	state        v1alpha1.ConversionState
	message      string
	written      bool   // spec.conversion written this pass, not verified yet
	bundleOnly   bool   // with written: the write changed the caBundle and nothing else
	echoDropped  bool   // with written: published a new CA; the pass scheduled the next step (own_echo.go)
	driftManager string // another manager rewrote the conversion Hookwright had configured
	unverifiable bool   // no object to convert, and a dry-run could not reach the webhook
	handover     bool   // owned by the install this one replaces, or by a deleted one: taken over once this one serves
	from         string // with handover: the owner it is taken over from (<namespace>/<name>)
	kept         bool   // no longer listed, but None is unsafe: kept serving (keepalive.go)
	forbidden    bool   // unverifiable because RBAC forbids reading the converted resource
	// trusted: this pass, the API server reached the webhook and trusted
	// its serving certificate through the current caBundle (or nothing
	// needs converting). It is what a certificate rotation waits for; a
	// webhook that refuses an object is trusted, with state Failed.
	trusted bool
	// firstVerified: this pass's verification succeeded and is a first
	// one (the status did not say Verified, or this pass changed where
	// conversions go), so it is confirmed once more (verify_confirm.go).
	firstVerified bool
	// verifyReason is why verification failed (state Failed), a Reason
	// constant: WebhookUntrusted, WebhookUnreachable, WebhookPathNotFound,
	// ConversionRefused or ConversionFailed. "" for failures of other steps.
	verifyReason string
	// verifyTook is how long this pass's conversion through the API server
	// took (unanswered.go).
	verifyTook time.Duration
	// writtenVersion is the CRD's resourceVersion after this pass's write
	// of spec.conversion: the pass verifies it once Hookwright's CRD watch
	// shows that version (verify_watched.go).
	writtenVersion string
}

// serviceCerts is the certificate material of one webhook Service.
type serviceCerts struct {
	secretName string
	ca         *certs.CA           // active: signs the serving certificate
	next       *certs.CA           // being introduced, trusted but not used yet
	previous   []*x509.Certificate // being retired (or kept: rotation.KeepTrust), still trusted
	servingPEM []byte
	rotateAt   time.Time
	rolledOut  bool // the Deployment serves the current certificate everywhere
}

// bundle is the caBundle the Service's CRDs must carry.
func (c *serviceCerts) bundle() []byte { return rotation.Bundle(c.ca, c.next, c.previous...) }
