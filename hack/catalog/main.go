// Command catalog renders the OLM bundle directory as a file-based catalog
// (FBC) with opm, validates it with opm, and writes its Dockerfile:
//
//	catalog --opm bin/tools/opm-v1.64.0/opm --bundle-dir bundle \
//	  --bundle-image ghcr.io/hookwright/hookwright-bundle:v0.1.0 --out bin/catalog
//
// The catalog has the package hookwright, its alpha channel, and the
// bundle, referenced by the bundle image a cluster will pull. `make
// catalog-build` runs it.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const (
	packageName = "hookwright"
	channel     = "alpha"
)

func main() {
	var opm, bundleDir, bundleImage, out, opmImage string
	flag.StringVar(&opm, "opm", "opm", "the opm binary")
	flag.StringVar(&bundleDir, "bundle-dir", "bundle", "the bundle directory (manifests/ and metadata/)")
	flag.StringVar(&bundleImage, "bundle-image", "", "the bundle image the catalog references (required)")
	flag.StringVar(&out, "out", "bin/catalog", "the catalog directory to write; <out>.Dockerfile is written next to it")
	flag.StringVar(&opmImage, "opm-image", "", "the image that serves the catalog (default: quay.io/operator-framework/opm at the opm version)")
	flag.Parse()
	if err := run(opm, bundleDir, bundleImage, out, opmImage); err != nil {
		fmt.Fprintln(os.Stderr, "catalog:", err)
		os.Exit(1)
	}
}

func run(opm, bundleDir, bundleImage, out, opmImage string) error {
	if bundleImage == "" {
		return errors.New("--bundle-image is required: the image reference clusters pull the bundle from")
	}
	rendered, err := command(opm, "render", bundleDir, "--output=json")
	if err != nil {
		return err
	}
	var blobs []map[string]any
	dec := json.NewDecoder(bytes.NewReader(rendered))
	for dec.More() {
		var blob map[string]any
		if err := dec.Decode(&blob); err != nil {
			return fmt.Errorf("reading opm render's output: %w", err)
		}
		blobs = append(blobs, blob)
	}
	var bundleName string
	for _, b := range blobs {
		if b["schema"] == "olm.bundle" {
			if bundleName != "" {
				return errors.New("opm render returned more than one bundle")
			}
			bundleName, _ = b["name"].(string)
			b["image"] = bundleImage
		}
	}
	if bundleName == "" {
		return fmt.Errorf("opm render %s returned no olm.bundle", bundleDir)
	}
	catalog := []map[string]any{
		{"schema": "olm.package", "name": packageName, "defaultChannel": channel},
		{"schema": "olm.channel", "name": channel, "package": packageName, "entries": []map[string]any{{"name": bundleName}}},
	}
	catalog = append(catalog, blobs...)

	if err := os.RemoveAll(out); err != nil {
		return err
	}
	dir := filepath.Join(out, packageName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	for _, blob := range catalog {
		raw, err := json.MarshalIndent(blob, "", "  ")
		if err != nil {
			return err
		}
		buf.Write(raw)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "catalog.json"), buf.Bytes(), 0o644); err != nil {
		return err
	}
	if _, err := command(opm, "validate", out); err != nil {
		return err
	}
	if opmImage == "" {
		v, err := opmVersion(opm)
		if err != nil {
			return err
		}
		opmImage = "quay.io/operator-framework/opm:" + v
	}
	dockerfile := filepath.Clean(out) + ".Dockerfile"
	if err := os.Remove(dockerfile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if _, err := command(opm, "generate", "dockerfile", out, "--binary-image", opmImage); err != nil {
		return err
	}
	fmt.Printf("catalog %s: package %s, channel %s, bundle %s (%s); validated; %s\n", out, packageName, channel, bundleName, bundleImage, dockerfile)
	return nil
}

// opmVersion is the opm binary's release ("v1.64.0"), so the catalog is
// served by the opm it was validated with.
func opmVersion(opm string) (string, error) {
	raw, err := command(opm, "version")
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		// Version: version.Version{OpmVersion:"v1.64.0", ...}
		if _, rest, ok := strings.Cut(sc.Text(), `OpmVersion:"`); ok {
			if v, _, ok := strings.Cut(rest, `"`); ok && strings.HasPrefix(v, "v") {
				return v, nil
			}
		}
	}
	return "", fmt.Errorf("cannot read the release from `opm version`: %s (give --opm-image)", raw)
}

func command(name string, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}
