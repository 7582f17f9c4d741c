package controllers

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/certs"
	"github.com/hookwright/hookwright/controllers/desired"
)

// A CRD's first successful verification may have converted through the
// CRD's previous strategy (None) if the API server had not applied
// Hookwright's write yet, whether it ran in the pass that wrote (once the
// watch showed the write) or in a later pass. Here that first dry-run
// succeeds as None would, and the webhook really answers 404 (a
// webhookPath it does not serve): the pass after it verifies once more and
// reports the 404; the pass after that trusts the status, as ever.
func TestFirstVerificationIsConfirmedOnce(t *testing.T) {
	for _, writtenThisPass := range []bool{true, false} {
		t.Run(map[bool]string{true: "verified in the pass that wrote", false: "verified in a later pass"}[writtenThisPass], func(t *testing.T) {
			testFirstVerificationConfirmed(t, writtenThisPass)
		})
	}
}

func testFirstVerificationConfirmed(t *testing.T, writtenThisPass bool) {
	notServed := errors.New(`conversion webhook for example.com/v2, Kind=Widget failed: the server could not find the requested resource`)
	rig := newConversionRig(t, func(n int) error {
		if n == 1 {
			return nil // through None: the API server had not applied the write
		}
		return notServed
	})

	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	rig.r.unconfirmed.begin(t0.Add(-time.Minute)) // a manager that has run for a while
	s, first := rig.pass(t, v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling}, writtenThisPass, t0)
	if first.state != v1alpha1.ConversionVerified || s.retryAfter != confirmAfter {
		t.Fatalf("the writing pass: state %q, retry after %s; want Verified, confirmed after %s", first.state, s.retryAfter, confirmAfter)
	}

	verified := rig.verifiedStatus(crdVerifiedSince(s, first)) // its own verification: not a predecessor's to inherit
	_, second := rig.pass(t, verified, false, t0.Add(confirmAfter))
	if second.state != v1alpha1.ConversionFailed || second.verifyReason != v1alpha1.ReasonWebhookPathNotFound {
		t.Fatalf("the next pass: state %q (%s: %s), want Failed WebhookPathNotFound: it must convert once more", second.state, second.verifyReason, second.message)
	}

	_, third := rig.pass(t, verified, false, t0.Add(2*confirmAfter))
	if rig.dryRuns != 2 || third.state != v1alpha1.ConversionVerified {
		t.Errorf("a later pass: %d dry runs in all, state %q; want 2 and Verified from the status (confirmed once, then trusted)", rig.dryRuns, third.state)
	}
}

// A first verification is confirmed because it may have converted
// through the previous configuration: the confirmation's dry run, now
// through the webhook, rules that out. It reads stored objects again only
// when the first verification read one; when that found none, its reads
// proved nothing a second read would confirm. A predecessor's
// verification is not known, so its confirmation reads again.
func TestConfirmationRereadsOnlyWhatTheFirstVerificationRead(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stored    bool
		inherited bool // verified by a predecessor, confirmed after a restart
		wantLists int  // by the confirmation
	}{
		{name: "nothing stored: a dry run alone", wantLists: 0},
		{name: "an object stored: read again", stored: true, wantLists: 1},
		{name: "a predecessor's verification: read again", inherited: true, wantLists: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := newConversionRig(t, func(int) error { return nil })
			rig.stored = tc.stored
			t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
			var verified v1alpha1.WebhookInstallStatus
			if tc.inherited {
				since := metav1.NewTime(t0)
				verified = rig.verifiedStatus(&since)
				rig.r.unconfirmed.begin(t0.Add(time.Minute)) // the successor starts a minute later
			} else {
				rig.r.unconfirmed.begin(t0.Add(-time.Minute))
				s, first := rig.pass(t, v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling}, true, t0)
				if first.state != v1alpha1.ConversionVerified || s.retryAfter != confirmAfter {
					t.Fatalf("first verification: state %q, retry after %s; want Verified, confirmed after %s", first.state, s.retryAfter, confirmAfter)
				}
				verified = rig.verifiedStatus(crdVerifiedSince(s, first))
			}
			lists, dryRuns := rig.lists, rig.dryRuns
			_, confirmed := rig.pass(t, verified, false, t0.Add(time.Minute+confirmAfter+time.Second))
			if confirmed.state != v1alpha1.ConversionVerified || rig.dryRuns != dryRuns+1 {
				t.Fatalf("confirmation: state %q, %d dry run(s); want Verified through one dry run", confirmed.state, rig.dryRuns-dryRuns)
			}
			if got := rig.lists - lists; got != tc.wantLists {
				t.Errorf("the confirmation listed %d time(s), want %d", got, tc.wantLists)
			}
		})
	}
}

// A confirmation due when the spec changed since the verification it
// confirms is a full verification: the new spec calls for one whatever
// the first one read.
func TestConfirmationOfAChangedSpecReadsAgain(t *testing.T) {
	rig := newConversionRig(t, func(int) error { return nil })
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	rig.r.unconfirmed.begin(t0.Add(-time.Minute))
	s, first := rig.pass(t, v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling}, true, t0)
	if first.state != v1alpha1.ConversionVerified || s.retryAfter != confirmAfter {
		t.Fatalf("first verification: state %q, retry after %s; want Verified, confirmed after %s", first.state, s.retryAfter, confirmAfter)
	}
	install := rigInstall(rig.verifiedStatus(crdVerifiedSince(s, first)))
	install.Generation = 2 // edited since; the status observed 1
	lists := rig.lists
	rig.passOn(t, install, t0.Add(confirmAfter))
	if got := rig.lists - lists; got != 1 {
		t.Errorf("the confirmation of a changed spec listed %d time(s), want 1 (everywhere, where nothing is stored)", got)
	}
}

const rigCRD = "widgets.example.com"

// conversionRig is a reconciler whose API server holds one CRD served at
// v1 (storage) and v2, and no stored object: each verification dry-run
// creates a v2 object, and answer(n) is the API server's answer to the
// n-th (from 1); lists counts the reads of stored objects.
type conversionRig struct {
	r       *WebhookInstallReconciler
	crd     *apiextensionsv1.CustomResourceDefinition
	ca      *certs.CA
	dryRuns int
	lists   int // reads of stored objects
	// stored: a Widget is stored in the install's namespace.
	stored bool
	// bundleOnly: a pass's write changes only the caBundle.
	bundleOnly bool
	// rollingOut: the Service's Deployment has not rolled its serving
	// certificate out everywhere yet.
	rollingOut bool
}

func newConversionRig(t *testing.T, answer func(n int) error) *conversionRig {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	rig := &conversionRig{crd: rigCRDObject()}
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(rig.crd.DeepCopy()).Build(), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			obj.SetResourceVersion("12") // the cache shows the pass's write
			return nil
		},
	})
	resources := probeAnswersStoring(rig.crd, func() error {
		rig.dryRuns++
		return answer(rig.dryRuns)
	}, func() ([]unstructured.Unstructured, error) {
		rig.lists++
		if !rig.stored {
			return nil, nil
		}
		w := unstructured.Unstructured{}
		w.SetAPIVersion("example.com/v2")
		w.SetKind("Widget")
		w.SetNamespace("team-a")
		w.SetName("stored")
		return []unstructured.Unstructured{w}, nil
	})
	rig.r = &WebhookInstallReconciler{Client: c, APIReader: c, Resources: resources, Clock: clock.RealClock{}}
	var err error
	if rig.ca, err = certs.NewCA("ca", certs.ECDSAP256, time.Hour, time.Now()); err != nil {
		t.Fatal(err)
	}
	return rig
}

// pass runs the verification step of a pass at now, on an install whose
// status is status; written: the pass wrote the CRD's conversion.
func (rig *conversionRig) pass(t *testing.T, status v1alpha1.WebhookInstallStatus, written bool, now time.Time) (*installState, *crdState) {
	t.Helper()
	return rig.passWriting(t, rigInstall(status), written, now)
}

// passOn runs the verification step of a pass that wrote nothing at now,
// on install.
func (rig *conversionRig) passOn(t *testing.T, install *v1alpha1.WebhookInstall, now time.Time) (*installState, *crdState) {
	t.Helper()
	return rig.passWriting(t, install, false, now)
}

func (rig *conversionRig) passWriting(t *testing.T, install *v1alpha1.WebhookInstall, written bool, now time.Time) (*installState, *crdState) {
	t.Helper()
	cs := &crdState{name: rigCRD, webhook: desired.Webhook{Service: "svc"}, crd: rig.crd.DeepCopy(), written: written, bundleOnly: written && rig.bundleOnly}
	if written {
		cs.writtenVersion = "12"
	}
	s := &installState{install: install, now: now, crds: []*crdState{cs}, services: map[string]*serviceCerts{"svc": {ca: rig.ca, rolledOut: !rig.rollingOut}}}
	rig.r.unconfirmed.begin(now) // as Reconcile does
	if err := rig.r.verifyConversion(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s, cs
}

// verifiedStatus is a Succeeded install's status: the CRD verified since
// since, for this generation and CA.
func (rig *conversionRig) verifiedStatus(since *metav1.Time) v1alpha1.WebhookInstallStatus {
	st := succeededStatus(rig.ca)
	st.ConversionCRDs = []v1alpha1.ConversionCRDStatus{{Name: rigCRD, State: v1alpha1.ConversionVerified, VerifiedSince: since}}
	return st
}

// succeededStatus is a Succeeded install's status for generation 1, its
// Service's CA ca; the rigs add what they verify.
func succeededStatus(ca *certs.CA) v1alpha1.WebhookInstallStatus {
	return v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseSucceeded, ObservedGeneration: 1,
		Services: []v1alpha1.ServiceStatus{{Name: "svc", CAFingerprint: certs.Fingerprint(ca.Cert)}}}
}

// rigInstall is the rigs' install, generation 1, with status.
func rigInstall(status v1alpha1.WebhookInstallStatus) *v1alpha1.WebhookInstall {
	return &v1alpha1.WebhookInstall{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "widgets", Generation: 1}, Status: status}
}

// An admission webhook's first successful verification may have been
// made before the API server loaded its configuration: a request then
// calls no webhook and is admitted, which with failurePolicy Fail reads
// as the webhook's answer. Here that first dry run is admitted, and the
// webhook really answers 404: the next pass dry-runs once more and
// reports the 404; the pass after that trusts the status.
func TestFirstAdmissionVerificationIsConfirmedOnce(t *testing.T) {
	notServed := statusErr(http.StatusInternalServerError, metav1.StatusReasonInternalError,
		`Internal error occurred: failed calling webhook "vwidgets.example.com": failed to call webhook: the server could not find the requested resource`)
	rig := newAdmissionRig(t, func(n int) error {
		if n == 1 {
			return nil // the API server had not loaded the configuration: no webhook called
		}
		return notServed
	})

	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	rig.r.unconfirmed.begin(t0.Add(-time.Minute)) // a manager that has run for a while
	s, first := rig.pass(t, v1alpha1.WebhookInstallStatus{Phase: v1alpha1.PhaseInstalling}, t0)
	if first.state != v1alpha1.AdmissionVerified || s.retryAfter != confirmAfter {
		t.Fatalf("the first verification: state %q, retry after %s; want Verified, confirmed after %s", first.state, s.retryAfter, confirmAfter)
	}

	verified := rig.verifiedStatus(admissionVerifiedSince(s, first)) // its own verification: not a predecessor's to inherit
	_, second := rig.pass(t, verified, t0.Add(confirmAfter))
	if second.state != v1alpha1.AdmissionFailed || second.verifyReason != v1alpha1.ReasonWebhookPathNotFound {
		t.Fatalf("the next pass: state %q (%s: %s), want Failed WebhookPathNotFound: it must dry-run once more", second.state, second.verifyReason, second.message)
	}

	_, third := rig.pass(t, verified, t0.Add(2*confirmAfter))
	if rig.dryRuns != 2 || third.state != v1alpha1.AdmissionVerified {
		t.Errorf("a later pass: %d dry runs in all, state %q; want 2 and Verified from the status (confirmed once, then trusted)", rig.dryRuns, third.state)
	}
}

// admissionRig is a reconciler with one registered validating webhook
// (rules: CREATE widgets.example.com/v1): each verification dry-run
// creates a Widget, and answer(n) is the API server's answer to the n-th
// (from 1).
type admissionRig struct {
	r       *WebhookInstallReconciler
	def     v1alpha1.WebhookDefinition
	ca      *certs.CA
	dryRuns int
}

func newAdmissionRig(t *testing.T, answer func(n int) error) *admissionRig {
	t.Helper()
	rig := &admissionRig{def: v1alpha1.WebhookDefinition{
		GenerateName: "vwidgets.example.com", Type: operatorsv1alpha1.ValidatingAdmissionWebhook,
		SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), FailurePolicy: ptr.To(admissionregistrationv1.Fail),
		Rules: []v1alpha1.AdmissionRule{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}},
	}}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, meta.RESTScopeNamespace)
	c := interceptor.NewClient(fake.NewClientBuilder().WithRESTMapper(mapper).Build(), interceptor.Funcs{
		Create: func(ctx context.Context, _ client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if !isDryRunCreate(opts) {
				return errors.New("verification must only dry-run")
			}
			rig.dryRuns++
			return answer(rig.dryRuns)
		},
	})
	rig.r = &WebhookInstallReconciler{Client: c, APIReader: c, Clock: clock.RealClock{}}
	var err error
	if rig.ca, err = certs.NewCA("ca", certs.ECDSAP256, time.Hour, time.Now()); err != nil {
		t.Fatal(err)
	}
	return rig
}

// pass runs the verification step of a pass at now, on an install whose
// status is status.
func (rig *admissionRig) pass(t *testing.T, status v1alpha1.WebhookInstallStatus, now time.Time) (*installState, *admissionState) {
	t.Helper()
	install := rigInstall(status)
	a := &admissionState{name: rig.def.GenerateName, kind: rig.def.Type, definition: rig.def, webhook: desired.Webhook{Service: "svc"},
		registered: true, state: v1alpha1.AdmissionRegistered}
	s := &installState{install: install, now: now, admission: []*admissionState{a}, services: map[string]*serviceCerts{"svc": {ca: rig.ca}}}
	rig.r.unconfirmed.begin(now) // as Reconcile does
	if err := rig.r.verifyAdmission(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s, a
}

// verifiedStatus is a Succeeded install's status: the webhook verified
// since since, for this generation and CA.
func (rig *admissionRig) verifiedStatus(since *metav1.Time) v1alpha1.WebhookInstallStatus {
	st := succeededStatus(rig.ca)
	st.AdmissionWebhooks = []v1alpha1.AdmissionWebhookStatus{{Name: rig.def.GenerateName, Type: string(rig.def.Type),
		State: v1alpha1.AdmissionVerified, VerifiedSince: since}}
	return st
}

func isDryRunCreate(opts []client.CreateOption) bool {
	o := &client.CreateOptions{}
	o.ApplyOptions(opts)
	return len(o.DryRun) > 0
}
