package testcluster

import (
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AdmissionAnnotation is the annotation AdmissionReviewer sets when it
// mutates: its value is the reviewer's name, so a test can see in a
// dry-run's result that a mutating webhook ran.
const AdmissionAnnotation = "admission.hookwright.test/mutated-by"

// AdmissionReviewer is a minimal admission webhook (admission.k8s.io/v1
// AdmissionReview): it allows every request and counts the reviews it
// served. With Mutate, it also returns a JSONPatch that sets the
// annotation AdmissionAnnotation to Name (replacing metadata.annotations,
// which a dry-run object of a test does not need). Deny makes it refuse
// requests for objects of one name, DenyAll for every object, with a
// message.
type AdmissionReviewer struct {
	Name   string
	Mutate bool
	Calls  atomic.Int64

	mu      sync.Mutex
	deny    map[string]string // object name -> denial message
	denyAll string
}

// DenyAll makes the reviewer refuse every object with message; an empty
// message stops it.
func (a *AdmissionReviewer) DenyAll(message string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.denyAll = message
}

// Deny makes the reviewer refuse objects named name with message; an
// empty message allows them again.
func (a *AdmissionReviewer) Deny(name, message string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.deny == nil {
		a.deny = map[string]string{}
	}
	if message == "" {
		delete(a.deny, name)
		return
	}
	a.deny[name] = message
}

func (a *AdmissionReviewer) denial(name string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.denyAll != "" {
		return a.denyAll
	}
	return a.deny[name]
}

// ServeHTTP implements http.Handler.
func (a *AdmissionReviewer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	a.Calls.Add(1)
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(rw, "bad review", http.StatusBadRequest)
		return
	}
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	var obj struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(review.Request.Object.Raw, &obj)
	if message := a.denial(obj.Metadata.Name); message != "" {
		resp.Allowed = false
		resp.Result = &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: message}
	} else if a.Mutate {
		patch, _ := json.Marshal([]map[string]any{{"op": "add", "path": "/metadata/annotations", "value": map[string]string{AdmissionAnnotation: a.Name}}})
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = patch, &pt
	}
	review.Response, review.Request = resp, nil
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(review)
}

// WebhookMux serves one webhook program's paths, as a kubebuilder manager
// serves /convert, /validate-... and /mutate-... from one pod and one
// certificate: Admission maps paths to their handlers, and Conversion
// answers every other path (as the conversion fixtures answer any path).
type WebhookMux struct {
	Conversion http.Handler
	Admission  map[string]http.Handler
}

// ServeHTTP implements http.Handler.
func (m WebhookMux) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if h, ok := m.Admission[r.URL.Path]; ok {
		h.ServeHTTP(rw, r)
		return
	}
	if m.Conversion == nil {
		http.NotFound(rw, r)
		return
	}
	m.Conversion.ServeHTTP(rw, r)
}
