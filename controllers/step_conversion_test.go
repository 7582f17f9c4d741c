package controllers

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

func TestOnlyCABundleDiffers(t *testing.T) {
	def := v1alpha1.WebhookDefinition{}
	def.ContainerPort = 9443
	def.WebhookPath = ptr.To("/convert")
	def.AdmissionReviewVersions = []string{"v1"}
	otherPath := def
	otherPath.WebhookPath = ptr.To("/v2/convert")
	want := desired.Conversion("ns", "hooks", def, []byte("old+new"))
	for _, tc := range []struct {
		name string
		have *apiextensionsv1.CustomResourceConversion
		want bool
	}{
		{"a new CA added to the caBundle", desired.Conversion("ns", "hooks", def, []byte("old")), true},
		{"nothing differs (no write is made then)", desired.Conversion("ns", "hooks", def, []byte("old+new")), true},
		{"another Service", desired.Conversion("ns", "other", def, []byte("old")), false},
		{"another path", desired.Conversion("ns", "hooks", otherPath, []byte("old")), false},
		{"no conversion yet (None)", &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}, false},
		{"no conversion stanza at all", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := onlyCABundleDiffers(tc.have, want); got != tc.want {
				t.Errorf("onlyCABundleDiffers = %v, want %v", got, tc.want)
			}
			if string(want.Webhook.ClientConfig.CABundle) != "old+new" {
				t.Fatalf("onlyCABundleDiffers changed its want argument")
			}
		})
	}
}
