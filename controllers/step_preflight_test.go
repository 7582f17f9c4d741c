package controllers

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

// The preflight's pure check, on typed CRDs in memory: the
// apiextensions.k8s.io/v1 API refuses to store preserveUnknownFields: true
// (a CRD upgraded from v1beta1 can still carry it), so no API server is
// needed, nor could one hold such a CRD.
func TestPreflightUnusableForWebhookConversion(t *testing.T) {
	tests := []struct {
		name           string
		preserve       bool
		reviewVersions []string
		want           []string // in the message; none: usable
		wantReason     string
	}{
		{"structural, v1 reviews: usable", false, []string{"v1"}, nil, ""},
		{"structural, v1beta1 reviews: usable", false, []string{"v1beta1"}, nil, ""},
		{"structural, an unknown version listed first: usable", false, []string{"v2", "v1"}, nil, ""},
		{"preserveUnknownFields: refused, saying what to set", true, []string{"v1"},
			[]string{"CRD widgets.example.com", "spec.preserveUnknownFields: true", "structural schemas", "set it to false"}, v1alpha1.ReasonPreserveUnknownFields},
		{"preserveUnknownFields and no usable review version: the CRD's problem is reported", true, []string{"v2"},
			[]string{"spec.preserveUnknownFields: true"}, v1alpha1.ReasonPreserveUnknownFields},
		{"no review version the API server speaks", false, []string{"v2"},
			[]string{"webhook widget-conversion", "no ConversionReview version", "v1, v1beta1"}, v1alpha1.ReasonConversionFailed},
		{"no review version at all", false, nil,
			[]string{"webhook widget-conversion", "no ConversionReview version"}, v1alpha1.ReasonConversionFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd := &apiextensionsv1.CustomResourceDefinition{
				ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
				Spec:       apiextensionsv1.CustomResourceDefinitionSpec{PreserveUnknownFields: tt.preserve},
			}
			def := v1alpha1.WebhookDefinition{GenerateName: "widget-conversion", AdmissionReviewVersions: tt.reviewVersions}
			msg := unusableForWebhookConversion(crd, def)
			if len(tt.want) == 0 {
				if msg != "" {
					t.Errorf("refused: %q, want usable", msg)
				}
				return
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			if got := reasonForUnusable(crd); got != tt.wantReason {
				t.Errorf("reason %q, want %q", got, tt.wantReason)
			}
		})
	}
}
