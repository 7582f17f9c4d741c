package conversion

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// tracer is a conversion function that records its name and the
// apiVersion it was given, and renames the spec's "via" trail.
func tracer(name string, calls *[]string) Func {
	return func(in *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		*calls = append(*calls, name+"("+in.GetAPIVersion()+")")
		return in, nil
	}
}

func TestConvertRoutes(t *testing.T) {
	tests := []struct {
		name      string
		from, to  string
		wantCalls []string
		wantErr   string
	}{
		{name: "identity calls nothing", from: "v1", to: "v1", wantCalls: nil},
		{name: "direct pair wins over the hub", from: "v1", to: "v3", wantCalls: []string{"pair v1->v3(stable.example.com/v1)"}},
		{name: "spoke to hub", from: "v1", to: "v2", wantCalls: []string{"v1 toHub(stable.example.com/v1)"}},
		{name: "hub to spoke", from: "v2", to: "v3", wantCalls: []string{"v3 fromHub(stable.example.com/v2)"}},
		{name: "spoke to spoke through the hub, hub apiVersion in between", from: "v3", to: "v1",
			wantCalls: []string{"v3 toHub(stable.example.com/v3)", "v1 fromHub(stable.example.com/v2)"}},
		{name: "unknown version", from: "v1", to: "v9", wantErr: "no conversion from v1 to v9 is registered for CronTab.stable.example.com"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls []string
			c := NewConverter(group, "CronTab").
				AddHub("v2").
				AddSpoke("v1", tracer("v1 toHub", &calls), tracer("v1 fromHub", &calls)).
				AddSpoke("v3", tracer("v3 toHub", &calls), tracer("v3 fromHub", &calls)).
				AddPair("v1", "v3", tracer("pair v1->v3", &calls))
			obj := &unstructured.Unstructured{Object: cronV1("default", "c", "u1", "* * * * *")}
			obj.SetAPIVersion(group + "/" + tc.from)

			out, err := c.Convert(obj, tc.to)
			if tc.wantErr != "" {
				var cerr *Error
				if !errors.As(err, &cerr) || cerr.Reason != ReasonUnsupported || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want unsupported %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := out.GetAPIVersion(), group+"/"+tc.to; got != want {
				t.Errorf("apiVersion = %s, want %s", got, want)
			}
			if strings.Join(calls, ",") != strings.Join(tc.wantCalls, ",") {
				t.Errorf("calls = %q, want %q", calls, tc.wantCalls)
			}
		})
	}
}

func TestConvertWithoutHub(t *testing.T) {
	c := NewConverter(group, "CronTab").AddSpoke("v1", cronV1ToV2, cronV2ToV1)
	_, err := c.Convert(&unstructured.Unstructured{Object: cronV1("default", "c", "u1", "* * * * *")}, "v2")
	var cerr *Error
	if !errors.As(err, &cerr) || cerr.Reason != ReasonUnsupported {
		t.Fatalf("error = %v, want unsupported: spokes without a hub", err)
	}
}

func TestConvertRejectsOtherKinds(t *testing.T) {
	obj := &unstructured.Unstructured{Object: cronV1("default", "c", "u1", "* * * * *")}
	obj.SetKind("Other")
	_, err := cronConverter().Convert(obj, "v2")
	if err == nil || !strings.Contains(err.Error(), "converts CronTab.stable.example.com only") {
		t.Fatalf("error = %v, want a refusal naming the converter's kind", err)
	}
}

func TestRegistrationMistakesPanic(t *testing.T) {
	noop := func(in *unstructured.Unstructured) (*unstructured.Unstructured, error) { return in, nil }
	tests := []struct {
		name     string
		register func()
	}{
		{"empty kind", func() { NewConverter(group, "") }},
		{"duplicate pair", func() { NewConverter(group, "K").AddPair("v1", "v2", noop).AddPair("v1", "v2", noop) }},
		{"pair to itself", func() { NewConverter(group, "K").AddPair("v1", "v1", noop) }},
		{"empty version", func() { NewConverter(group, "K").AddPair("", "v2", noop) }},
		{"nil function", func() { NewConverter(group, "K").AddPair("v1", "v2", nil) }},
		{"second hub", func() { NewConverter(group, "K").AddHub("v1").AddHub("v2") }},
		{"hub as spoke", func() { NewConverter(group, "K").AddHub("v1").AddSpoke("v1", noop, noop) }},
		{"spoke as hub", func() { NewConverter(group, "K").AddSpoke("v1", noop, noop).AddHub("v1") }},
		{"duplicate spoke", func() { NewConverter(group, "K").AddSpoke("v1", noop, noop).AddSpoke("v1", noop, noop) }},
		{"two converters for a kind", func() { NewWebhook(NewConverter(group, "K"), NewConverter(group, "K")) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			tc.register()
		})
	}
}

// Typed CronTab halves, as an author with Go types would write them.
type typedCronV1 struct {
	Spec struct {
		CronSpec string `json:"cronSpec"`
		Image    string `json:"image"`
	} `json:"spec"`
}

type typedCronV2 struct {
	Spec struct {
		Minute string `json:"minute"`
		Rest   string `json:"rest"`
		Image  string `json:"image"`
	} `json:"spec"`
}

func TestTyped(t *testing.T) {
	c := NewConverter(group, "CronTab").AddPair("v1", "v2", Typed(func(in *typedCronV1) (*typedCronV2, error) {
		out := &typedCronV2{}
		out.Spec.Minute, out.Spec.Rest, _ = strings.Cut(in.Spec.CronSpec, " ")
		out.Spec.Image = in.Spec.Image
		return out, nil
	}))
	out, err := c.Convert(&unstructured.Unstructured{Object: cronV1("default", "c", "u1", "5 * * * *")}, "v2")
	if err != nil {
		t.Fatal(err)
	}
	spec, _, _ := unstructured.NestedStringMap(out.Object, "spec")
	if spec["minute"] != "5" || spec["rest"] != "* * * *" || spec["image"] != "busybox:1.36" {
		t.Errorf("spec = %v", spec)
	}
	// The typed result had no kind, metadata or apiVersion: all filled in.
	if out.GetKind() != "CronTab" || out.GetAPIVersion() != v2 || out.GetName() != "c" || out.GetLabels()["app"] != "cron" {
		t.Errorf("kind, apiVersion or metadata not filled in: %v", out.Object)
	}
}

func TestErrorMessage(t *testing.T) {
	cause := errors.New("cause")
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{APIVersion: v1, Kind: "CronTab", Namespace: "default", Name: "my-cron", UID: "123", ToVersion: "v2", Err: cause},
			"converting stable.example.com/v1 CronTab default/my-cron (uid 123) to v2: cause"},
		{&Error{APIVersion: v1, Kind: "ClusterCronTab", Name: "global", UID: "9", ToVersion: "v2", Err: cause},
			"converting stable.example.com/v1 ClusterCronTab global (uid 9) to v2: cause"},
		{&Error{ToVersion: "v2", Err: cause}, "converting <unnamed object> to v2: cause"},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
		if !errors.Is(tc.err, cause) {
			t.Errorf("%q does not wrap its cause", tc.err)
		}
	}
}
