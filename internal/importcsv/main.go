package importcsv

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

const usage = `usage: hookwright import-csv [--namespace NS] [--name NAME] [--versioned] [-o FILE] <CSV file or bundle dir>

Writes a WebhookInstall for an OLM operator's webhooks, read from
its ClusterServiceVersion: a bundle directory (the one holding manifests/ and
metadata/) or a YAML file with the CSV (and, optionally, its CRDs).

What is carried over:
  displayName, version        as in the CSV
  installModes                as in the CSV, made to support AllNamespaces only
  webhookdefinitions          every entry, of all three types (ConversionWebhook,
                              ValidatingAdmissionWebhook, MutatingAdmissionWebhook)
  install.spec.deployments    only the deployments the webhooks name, without
                              OLM-internal labels and annotations and without
                              Secret volumes mounted at the serving-certificate
                              directories (Hookwright mounts its own there)
  customresourcedefinitions   only the owned CRDs a conversion webhook converts
Left out, with a warning each on stderr: fields OLM ignores too
(reinvocationPolicy of a validating webhook, conversionCRDs of an admission
webhook), other deployments, other owned CRDs, required CRDs, permissions and
clusterPermissions (Hookwright grants no RBAC), apiservicedefinitions, skips,
the bundle's CRDs and other objects. No Secret and no CSV annotation is copied.

Naming: the install is named after the CSV without its version suffix
(crontab-operator.v1.1.0 becomes crontab-operator), so every version of an
operator maps to one install, upgraded in place by applying the new output
over it. The CSV's replaces is mapped by the same rule: dropped when it maps
to the install's own name (the usual case) or --name is given, kept only when
the package was renamed (old-name.v1.0.0 becomes replaces: old-name). With
--versioned the install keeps the full CSV name and the CSV's replaces as
they are: each version is a new install replacing the previous one, as in OLM.

Namespace: --namespace, else the CSV's metadata.namespace (unless
operator-sdk's "placeholder"), else its operatorframework.io/suggested-namespace
annotation; with none of them the command fails.

Example:
  hookwright import-csv bundle/ -o webhookinstall.yaml
  kubectl apply -f bundle/manifests/<the CRDs, without spec.conversion>
  kubectl apply -f webhookinstall.yaml

Exit status: 0 written (warnings or not), 1 the input cannot be read or
imported, 2 usage errors (including no namespace).

Flags:
`

// Main runs the import-csv command with args (after "import-csv") and
// returns its exit status: 0 when the WebhookInstall was written, 1 when
// the input cannot be read or imported, 2 on usage errors.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("import-csv", flag.ContinueOnError)
	fs.SetOutput(stderr)
	namespace := fs.String("namespace", "", "namespace of the WebhookInstall and its webhook Deployments (default: the CSV's, see Namespace above)")
	name := fs.String("name", "", "name of the WebhookInstall (default: the CSV name without its version suffix)")
	versioned := fs.Bool("versioned", false, "name the install after the full CSV name and keep the CSV's replaces: each version is a new install replacing the previous one, as with OLM")
	outFile := fs.String("o", "", "write the WebhookInstall YAML to this file instead of stdout")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	// Flags may come before or after the one argument.
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) != 1 {
		fmt.Fprintln(stderr, "import-csv: pass one CSV file or bundle directory")
		fs.Usage()
		return 2
	}

	in, err := Load(positional[0])
	if err != nil {
		fmt.Fprintln(stderr, "import-csv:", err)
		return 1
	}
	res, err := Convert(in, Options{Name: *name, Namespace: *namespace, Versioned: *versioned})
	if errors.Is(err, ErrNoNamespace) {
		fmt.Fprintln(stderr, "import-csv:", err)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "import-csv:", err)
		return 1
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(stderr, "import-csv: warning:", w)
	}
	data, err := Render(res, in.CSV.Name)
	if err != nil {
		fmt.Fprintln(stderr, "import-csv:", err)
		return 1
	}
	if *outFile == "" {
		if _, err := stdout.Write(data); err != nil {
			fmt.Fprintln(stderr, "import-csv:", err)
			return 1
		}
		return 0
	}
	if err := os.WriteFile(*outFile, data, 0o644); err != nil {
		fmt.Fprintln(stderr, "import-csv:", err)
		return 1
	}
	fmt.Fprintf(stderr, "import-csv: wrote WebhookInstall %s/%s to %s\n", res.Install.Namespace, res.Install.Name, *outFile)
	return 0
}

// Render writes res as YAML: a comment naming the source CSV and listing
// the warnings, then the WebhookInstall without status and empty fields.
func Render(res *Result, csvName string) ([]byte, error) {
	raw, err := json.Marshal(res.Install)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	delete(obj, "status")
	prune(obj)
	body, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Imported by hookwright import-csv from ClusterServiceVersion %s.\n", csvName)
	if len(res.Warnings) > 0 {
		b.WriteString("# Not carried over or changed:\n")
		for _, w := range res.Warnings {
			fmt.Fprintf(&b, "# - %s\n", w)
		}
	}
	b.Write(body)
	return []byte(b.String()), nil
}

// emptyRemovable are the keys whose empty object is Go's zero value, not a
// choice (unlike emptyDir: {}): an unset rollout strategy, resources,
// certificates policy, or pod template metadata.
var emptyRemovable = map[string]bool{"strategy": true, "resources": true, "certificates": true, "metadata": true, "status": true}

// prune drops nulls (creationTimestamp: null) everywhere and the empty
// objects Go's encoder writes for unset struct fields.
func prune(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			prune(child)
			if child == nil {
				delete(v, k)
				continue
			}
			if m, ok := child.(map[string]any); ok && len(m) == 0 && emptyRemovable[k] {
				delete(v, k)
			}
		}
	case []any:
		for _, child := range v {
			prune(child)
		}
	}
}
