package controllers

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

// Drift handling: a fight is this many restores within the window.
const (
	fightRestores = 3
	fightWindow   = 10 * time.Minute
)

// otherConversionManagers lists the field managers other than Hookwright
// that own a field under spec.conversion: whoever rewrote it.
func otherConversionManagers(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var managers []string
	for _, mf := range crd.ManagedFields {
		if mf.Manager == desired.FieldManager {
			continue
		}
		if ownsConversionField(mf) {
			managers = append(managers, mf.Manager)
		}
	}
	sort.Strings(managers)
	return managers
}

// ownsConversionField: the entry owns a field under spec.conversion (the
// map's own "." entry alone is no field).
func ownsConversionField(mf metav1.ManagedFieldsEntry) bool {
	if mf.FieldsV1 == nil {
		return false
	}
	var fields struct {
		Spec struct {
			Conversion map[string]json.RawMessage `json:"f:conversion"`
		} `json:"f:spec"`
	}
	if json.Unmarshal(mf.FieldsV1.Raw, &fields) != nil {
		return false
	}
	for key := range fields.Spec.Conversion {
		if key != "." {
			return true
		}
	}
	return false
}

// wasConfiguredByUs: this install owns the CRD and Hookwright's apply still
// owns fields of its conversion, so a difference now is drift, not a first
// configuration. Read from the CRD itself, never from a possibly stale status.
func wasConfiguredByUs(s *installState, c *crdState) bool {
	if c.crd.Annotations[v1alpha1.AnnotationOwner] != installRef(s.install) {
		return false
	}
	for _, mf := range c.crd.ManagedFields {
		if mf.Manager == desired.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply && ownsConversionField(mf) {
			return true
		}
	}
	return false
}

// driftStatus carries the fight counters of one CRD into the new status.
func driftStatus(s *installState, c *crdState, out *v1alpha1.ConversionCRDStatus) {
	for _, prev := range s.install.Status.ConversionCRDs {
		if prev.Name == c.name {
			out.DriftRestores, out.LastDriftManager, out.DriftWindowStart = prev.DriftRestores, prev.LastDriftManager, prev.DriftWindowStart
		}
	}
	if out.DriftWindowStart != nil && s.now.Sub(out.DriftWindowStart.Time) > fightWindow {
		out.DriftRestores, out.DriftWindowStart = 0, nil
	}
	if c.driftManager == "" {
		return
	}
	if out.DriftWindowStart == nil {
		out.DriftWindowStart = &metav1.Time{Time: s.now.Truncate(time.Second)}
	}
	out.DriftRestores++
	out.LastDriftManager = c.driftManager
}

// contested explains the fights in the new status, or returns "".
func contested(st *v1alpha1.WebhookInstallStatus) string {
	var fights []string
	for _, c := range st.ConversionCRDs {
		if c.DriftRestores >= fightRestores {
			fights = append(fights, fmt.Sprintf("%q rewrote CRD %s's conversion %d times since %s", c.LastDriftManager, c.Name, c.DriftRestores, c.DriftWindowStart.UTC().Format(time.RFC3339)))
		}
	}
	if len(fights) == 0 {
		return ""
	}
	return strings.Join(fights, "; ") + ". Hookwright owns spec.conversion of its CRDs: stop rendering spec.conversion (and its caBundle) in that tool's manifests, " +
		"or tell it to ignore the field (Argo CD: ignoreDifferences on /spec/conversion/webhook/clientConfig/caBundle; Flux/kustomize: drop the field from the manifest)"
}
