package main

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		ref     string
		want    reference
		wantErr string
	}{
		{ref: "registry.example.com/hookwright:v0.2.0", want: reference{name: "registry.example.com/hookwright", tag: "v0.2.0"}},
		{ref: "registry.example.com:5000/team/hookwright:v0.2.0", want: reference{name: "registry.example.com:5000/team/hookwright", tag: "v0.2.0"}},
		{ref: "ghcr.io/hookwright/hookwright:v0.2.0@" + digest, want: reference{name: "ghcr.io/hookwright/hookwright", tag: "v0.2.0", digest: digest}},
		{ref: "localhost/hookwright@" + digest, want: reference{name: "localhost/hookwright", digest: digest}},
		{ref: "hookwright:v0.2.0", wantErr: "not fully qualified"},
		{ref: "registry.example.com/hookwright:latest", wantErr: "latest moves"},
		{ref: "registry.example.com/hookwright", wantErr: "neither tag nor digest"},
		{ref: "registry.example.com/hookwright@sha256:short", wantErr: "64 hex digits"},
	} {
		got, err := parse(tc.ref)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parse(%q) = %v, want an error with %q", tc.ref, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("parse(%q): %v", tc.ref, err)
		case got != tc.want:
			t.Errorf("parse(%q) = %+v, want %+v", tc.ref, got, tc.want)
		}
	}
}

const kustomization = `# A comment that stays.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
images:
- name: hookwright
  newName: old.example.com/hookwright
  newTag: v0.1.0
resources:
- manager.yaml
`

func TestSetImage(t *testing.T) {
	out, err := setImage([]byte(kustomization), "hookwright", reference{name: "registry.example.com/hookwright", tag: "v0.2.0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# A comment that stays.\n", "newName: registry.example.com/hookwright", "newTag: v0.2.0", "- manager.yaml"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	digest := "sha256:" + strings.Repeat("cd", 32)
	out, err = setImage(out, "hookwright", reference{name: "registry.example.com/hookwright", tag: "v0.2.0", digest: digest})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "digest: "+digest) || strings.Contains(string(out), "newTag") {
		t.Errorf("with a digest, want digest and no tag:\n%s", out)
	}
	if _, err := setImage([]byte(kustomization), "other", reference{name: "x.io/y", tag: "v1"}); err == nil {
		t.Error("an image the kustomization does not list must be an error")
	}
}
