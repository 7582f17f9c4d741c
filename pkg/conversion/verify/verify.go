package verify

import (
	"fmt"
	"strings"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Target converts an object to another version of its group: the kit's
// *conversion.Converter in process, or Webhook for a running webhook.
type Target interface {
	Convert(obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, error)
}

// Finding is one problem found; Diff is "-want +got".
type Finding struct {
	Sample  string
	From    string
	To      string
	Problem string
	Diff    string
}

func (f Finding) String() string {
	s := fmt.Sprintf("FAIL %s: %s -> %s: %s", f.Sample, f.From, f.To, f.Problem)
	if f.Diff != "" {
		s += "\n" + indent(f.Diff)
	}
	return s
}

// Run converts every sample of the CRD's kind to every other served
// version and back, and compares with the counterpart samples.
func Run(crd *apiextensionsv1.CustomResourceDefinition, samples []Sample, target Target) []Finding {
	var served []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served = append(served, v.Name)
		}
	}
	counterpart := map[string]Sample{} // version/namespace/name
	for _, s := range samples {
		counterpart[key(s.Object)] = s
	}
	var findings []Finding
	for _, s := range samples {
		gv, err := schema.ParseGroupVersion(s.Object.GetAPIVersion())
		if err != nil || gv.Group != crd.Spec.Group || s.Object.GetKind() != crd.Spec.Names.Kind {
			findings = append(findings, Finding{Sample: s.Path, From: s.Object.GetAPIVersion(), Problem: fmt.Sprintf("not a %s of group %s", crd.Spec.Names.Kind, crd.Spec.Group)})
			continue
		}
		for _, to := range served {
			if to == gv.Version {
				continue
			}
			findings = append(findings, check(s, gv.Version, to, target, counterpart)...)
		}
	}
	return findings
}

func check(s Sample, from, to string, target Target, counterpart map[string]Sample) []Finding {
	converted, err := target.Convert(s.Object.DeepCopy(), to)
	if err == nil {
		converted, err = normalize(converted)
	}
	if err != nil {
		return []Finding{{Sample: s.Path, From: from, To: to, Problem: "conversion failed: " + err.Error()}}
	}
	var findings []Finding
	if want, ok := counterpart[versionKey(to, s.Object)]; ok {
		if diff := cmp.Diff(want.Object.Object, converted.Object); diff != "" {
			findings = append(findings, Finding{Sample: s.Path, From: from, To: to, Problem: "does not match " + want.Path, Diff: diff})
		}
	}
	back, err := target.Convert(converted, from)
	if err == nil {
		back, err = normalize(back)
	}
	if err != nil {
		return append(findings, Finding{Sample: s.Path, From: to, To: from, Problem: "converting back failed: " + err.Error()})
	}
	if diff := cmp.Diff(s.Object.Object, back.Object); diff != "" {
		findings = append(findings, Finding{Sample: s.Path, From: from, To: to, Problem: "does not round-trip (" + from + " -> " + to + " -> " + from + ")", Diff: diff})
	}
	return findings
}

func key(u *unstructured.Unstructured) string {
	gv, _ := schema.ParseGroupVersion(u.GetAPIVersion())
	return versionKey(gv.Version, u)
}

func versionKey(version string, u *unstructured.Unstructured) string {
	return version + "/" + u.GetNamespace() + "/" + u.GetName()
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
