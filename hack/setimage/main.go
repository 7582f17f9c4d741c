// Command setimage points an image of a kustomization at a reference, as
// `kustomize edit set image` does (kubectl ships kustomize without edit):
//
//	setimage config/manager/kustomization.yaml hookwright registry.example.com/hookwright:v0.2.0
//	setimage ... hookwright registry.example.com/hookwright:v0.2.0@sha256:<digest>
//
// A reference with a digest is written as newName + digest, so the
// Deployment and the CSV pull exactly that image; a tag alone as newName +
// newTag. `make bundle IMG=...` runs it.
package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// reference is an image reference split as kustomize's images entries are.
type reference struct{ name, tag, digest string }

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

func parse(ref string) (reference, error) {
	var r reference
	rest, digest, hasDigest := strings.Cut(ref, "@")
	if hasDigest {
		if !digestPattern.MatchString(digest) {
			return r, fmt.Errorf("image %q: the digest must be sha256:<64 hex digits>", ref)
		}
		r.digest = digest
	}
	// A tag follows the last colon after the last slash (a registry port
	// is before a slash).
	if i := strings.LastIndex(rest, ":"); i > strings.LastIndex(rest, "/") {
		r.name, r.tag = rest[:i], rest[i+1:]
	} else {
		r.name = rest
	}
	switch {
	case r.name == "" || strings.ContainsAny(r.name, " \t"):
		return r, fmt.Errorf("image %q has no valid name", ref)
	case r.tag == "" && r.digest == "":
		return r, fmt.Errorf("image %q has neither tag nor digest: give a version tag (never latest) or a digest", ref)
	case r.tag == "latest":
		return r, fmt.Errorf("image %q: latest moves; give a version tag or a digest", ref)
	case !strings.Contains(strings.Split(r.name, "/")[0], ".") && !strings.Contains(strings.Split(r.name, "/")[0], ":") && strings.Split(r.name, "/")[0] != "localhost":
		return r, fmt.Errorf("image %q is not fully qualified: name its registry (registry.example.com/hookwright:v0.2.0)", ref)
	}
	return r, nil
}

func setImage(kustomization []byte, image string, r reference) ([]byte, error) {
	var k map[string]any
	if err := yaml.Unmarshal(kustomization, &k); err != nil {
		return nil, err
	}
	images, _ := k["images"].([]any)
	found := false
	for _, entry := range images {
		e, ok := entry.(map[string]any)
		if !ok || e["name"] != image {
			continue
		}
		found = true
		delete(e, "newTag")
		delete(e, "digest")
		e["newName"] = r.name
		if r.digest != "" {
			e["digest"] = r.digest
		} else {
			e["newTag"] = r.tag
		}
	}
	if !found {
		return nil, fmt.Errorf("the kustomization has no images entry named %q", image)
	}
	out, err := yaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	return append(leadingComments(kustomization), out...), nil
}

// leadingComments keeps the file's opening comment block.
func leadingComments(raw []byte) []byte {
	var out []byte
	for _, line := range strings.SplitAfter(string(raw), "\n") {
		if !strings.HasPrefix(line, "#") {
			break
		}
		out = append(out, line...)
	}
	return out
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: setimage <kustomization.yaml> <image name> <reference>")
		os.Exit(2)
	}
	path, image, ref := os.Args[1], os.Args[2], os.Args[3]
	r, err := parse(ref)
	if err == nil {
		var raw []byte
		if raw, err = os.ReadFile(path); err == nil {
			var out []byte
			if out, err = setImage(raw, image, r); err == nil {
				err = os.WriteFile(path, out, 0o644)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "setimage:", err)
		os.Exit(1)
	}
}
