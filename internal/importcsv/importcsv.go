// Package importcsv turns an OLM ClusterServiceVersion into a
// WebhookInstall: the CSV's webhookdefinitions of all three types
// (conversion, validating and mutating admission), the deployments that
// serve them and the owned CRDs they convert, so that an operator author
// who already ships an OLM bundle can adopt Hookwright in one command. It
// backs `hookwright import-csv`.
//
// Convert is pure: it never reads files. Load reads a bundle directory
// (operator-framework's manifests.GetBundleFromDir) or a CSV YAML file.
package importcsv

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/controllers/desired"
)

// Input is what an import reads: a CSV and, from a bundle or a multi-document
// file, the CRDs and other objects next to it.
type Input struct {
	CSV *operatorsv1alpha1.ClusterServiceVersion
	// CRDs of the bundle by name; used for a conversionCRDs entry the CSV
	// does not list as owned.
	CRDs map[string]CRD
	// Others names the bundle's other objects (Kind/name): none is carried over.
	Others []string
}

// CRD is what an import needs of a CustomResourceDefinition.
type CRD struct {
	Name, Kind, StorageVersion string
	// Webhook is where the CRD's webhook conversion points ("service
	// <namespace>/<name>" or "a URL"), or "" without one.
	Webhook string
}

// Options are the choices the caller makes.
type Options struct {
	// Name of the WebhookInstall; default: the CSV name without its version
	// suffix (DefaultName).
	Name string
	// Namespace of the WebhookInstall; default: the CSV's own namespace
	// (unless operator-sdk's "placeholder"), else its
	// operatorframework.io/suggested-namespace annotation.
	Namespace string
	// Versioned names the install after the full CSV name and keeps the
	// CSV's replaces as it is: each version is a new install replacing the
	// previous one, as with OLM, instead of one install upgraded in place.
	Versioned bool
}

// Result is the imported install and what was left behind, one line each.
type Result struct {
	Install  *v1alpha1.WebhookInstall
	Warnings []string
}

// ErrNoNamespace is returned when neither Options.Namespace nor the CSV
// names a namespace.
var ErrNoNamespace = errors.New("no namespace: the CSV has neither metadata.namespace nor an operatorframework.io/suggested-namespace annotation; pass --namespace (where the webhook Deployments will run)")

// SuggestedNamespaceAnnotation is the CSV annotation OLM bundles use to
// suggest an install namespace.
const SuggestedNamespaceAnnotation = "operatorframework.io/suggested-namespace"

// placeholderNamespace is the metadata.namespace operator-sdk writes into
// bundle CSVs; OLM ignores it.
const placeholderNamespace = "placeholder"

const (
	maxDefinitions = 16 // spec.webhookdefinitions maxItems
	maxRules       = 16 // spec.webhookdefinitions[].rules maxItems
	maxDeployments = 16 // spec.install.spec.deployments maxItems
	maxNameLength  = 63 // the install name is a label value on everything Hookwright makes
)

var (
	// versionSuffix matches a semver suffix of a CSV name: name.v1.2.3,
	// name.1.2.3, name-v1.2.3-rc.1.
	versionSuffix = regexp.MustCompile(`^(.+?)[.-]v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	// webhookPath is the rule api/v1alpha1 puts on webhookPath: DNS
	// subdomain segments, as the API server checks a webhook service path.
	webhookPath = regexp.MustCompile(`^(/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*)*/?$`)
	// crdName is the rule api/v1alpha1 puts on conversionCRDs entries.
	crdName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)+$`)
)

// DefaultName is the install name an import gives a CSV: its name without
// the version suffix (crontab-operator.v1.1.0 → crontab-operator). The same
// rule maps a CSV's spec.replaces, so successive versions of an operator
// map to one install, upgraded in place.
func DefaultName(csvName string) string {
	if m := versionSuffix.FindStringSubmatch(csvName); m != nil {
		return m[1]
	}
	return csvName
}

// Convert builds the WebhookInstall for in.CSV. It fails, saying what to
// do, when the CSV has no webhook or its webhooks could not pass the
// WebhookInstall admission rules; everything it leaves out on purpose is
// listed in Result.Warnings.
func Convert(in Input, opts Options) (*Result, error) {
	if in.CSV == nil {
		return nil, errors.New("no ClusterServiceVersion")
	}
	csv := in.CSV.DeepCopy()
	c := &converter{csv: csv}

	defs, err := c.definitions()
	if err != nil {
		return nil, err
	}
	deployments, err := c.deployments(defs)
	if err != nil {
		return nil, err
	}
	owned, err := c.ownedCRDs(defs, in.CRDs)
	if err != nil {
		return nil, err
	}
	// A CSV without spec.version decodes as 0.0.0, which no release uses.
	version := csv.Spec.Version.String()
	if csv.Spec.Version.Major == 0 && csv.Spec.Version.Minor == 0 && csv.Spec.Version.Patch == 0 && len(csv.Spec.Version.Pre) == 0 {
		return nil, fmt.Errorf("CSV %s has no spec.version: set the operator's semver version there (for example 1.0.0)", csv.Name)
	}
	name := opts.Name
	switch {
	case name != "":
	case opts.Versioned:
		name = csv.Name
	default:
		name = DefaultName(csv.Name)
	}
	if err := checkName(name); err != nil {
		if opts.Name == "" {
			return nil, fmt.Errorf("install name %q, made from CSV name %s, %v: pass --name", name, csv.Name, err)
		}
		return nil, fmt.Errorf("--name %q %v", name, err)
	}
	namespace := opts.Namespace
	if namespace == "" && csv.Namespace != placeholderNamespace {
		namespace = csv.Namespace
	}
	if namespace == "" {
		namespace = csv.Annotations[SuggestedNamespaceAnnotation]
	}
	if namespace == "" {
		return nil, ErrNoNamespace
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return nil, fmt.Errorf("namespace %q is not a namespace name: %s", namespace, strings.Join(errs, "; "))
	}
	if len(csv.Spec.DisplayName) > 256 {
		return nil, fmt.Errorf("CSV %s: spec.displayName is longer than the 256 characters a WebhookInstall allows", csv.Name)
	}

	install := &v1alpha1.WebhookInstall{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "WebhookInstall"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1alpha1.WebhookInstallSpec{
			DisplayName:               csv.Spec.DisplayName,
			Version:                   version,
			Replaces:                  c.replaces(name, opts.Name != "", opts.Versioned),
			InstallModes:              c.installModes(),
			CustomResourceDefinitions: v1alpha1.CustomResourceDefinitions{Owned: owned},
			Install: v1alpha1.InstallStrategy{
				StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment,
				Spec:         v1alpha1.InstallStrategySpec{Deployments: deployments},
			},
			WebhookDefinitions: defs,
		},
	}
	c.leftBehind(install, in)
	return &Result{Install: install, Warnings: c.warnings}, nil
}

type converter struct {
	csv      *operatorsv1alpha1.ClusterServiceVersion
	warnings []string
}

func (c *converter) warnf(format string, args ...any) {
	c.warnings = append(c.warnings, fmt.Sprintf(format, args...))
}

// definitions keeps every webhook definition, conversion and admission,
// and fails, saying what to fix, on one the WebhookInstall admission rules
// would refuse. Fields OLM ignores for a type are dropped with a warning.
func (c *converter) definitions() ([]v1alpha1.WebhookDefinition, error) {
	var defs []v1alpha1.WebhookDefinition
	for _, w := range c.csv.Spec.WebhookDefinitions {
		defs = append(defs, v1alpha1.WebhookDefinitionFrom(w))
	}
	if len(defs) == 0 {
		return nil, fmt.Errorf("CSV %s declares no webhook in spec.webhookdefinitions, and webhooks are what Hookwright installs: "+
			"add an entry (a ConversionWebhook naming its deploymentName, conversionCRDs, containerPort, targetPort and webhookPath, "+
			"or a ValidatingAdmissionWebhook or MutatingAdmissionWebhook with its rules; with operator-sdk: create the webhook, then make bundle), "+
			"or keep installing this operator with OLM", c.csv.Name)
	}
	if len(defs) > maxDefinitions {
		return nil, fmt.Errorf("CSV %s has %d webhook definitions; a WebhookInstall takes at most %d: split the operator into several installs", c.csv.Name, len(defs), maxDefinitions)
	}
	converts := map[string]string{}
	for i := range defs {
		d := &defs[i]
		where := fmt.Sprintf("CSV %s, webhook %s", c.csv.Name, d.GenerateName)
		switch d.Type {
		case operatorsv1alpha1.ConversionWebhook, operatorsv1alpha1.ValidatingAdmissionWebhook, operatorsv1alpha1.MutatingAdmissionWebhook:
		default:
			return nil, fmt.Errorf("%s: type %q is none of ConversionWebhook, ValidatingAdmissionWebhook and MutatingAdmissionWebhook", where, d.Type)
		}
		if errs := validation.IsDNS1123Subdomain(d.GenerateName); len(errs) > 0 {
			return nil, fmt.Errorf("%s: generateName is not a DNS subdomain name (%s): rename it in the CSV", where, strings.Join(errs, "; "))
		}
		if d.DeploymentName == "" {
			return nil, fmt.Errorf("%s: no deploymentName: name the install deployment that serves it", where)
		}
		if d.ContainerPort < 0 || d.ContainerPort > 65535 {
			return nil, fmt.Errorf("%s: containerPort %d is not a port number (1 to 65535)", where, d.ContainerPort)
		}
		if t := d.TargetPort; t != nil && t.StrVal == "" && (t.IntVal < 1 || t.IntVal > 65535) {
			return nil, fmt.Errorf("%s: targetPort %s is not a port number (1 to 65535) or a port name", where, t.String())
		}
		if p := d.WebhookPath; p != nil && !strings.HasPrefix(*p, "/") {
			return nil, fmt.Errorf("%s: webhookPath %q must start with /", where, *p)
		}
		if p := d.WebhookPath; p != nil && !webhookPath.MatchString(*p) {
			return nil, fmt.Errorf("%s: webhookPath %q: each segment must be a DNS subdomain (lowercase letters, digits, '-' and '.'), as the API server requires of a webhook service path", where, *p)
		}
		review := "ConversionReview"
		if d.Type != operatorsv1alpha1.ConversionWebhook {
			review = "AdmissionReview"
		}
		var versions []string
		for _, v := range d.AdmissionReviewVersions {
			if (v == "v1" || v == "v1beta1") && !slices.Contains(versions, v) {
				versions = append(versions, v)
			}
		}
		switch {
		case len(versions) == 0:
			c.warnf("webhook %s: admissionReviewVersions %v name no %s version; set to [v1]", d.GenerateName, d.AdmissionReviewVersions, review)
			versions = []string{"v1"}
		case len(versions) < len(d.AdmissionReviewVersions):
			c.warnf("webhook %s: admissionReviewVersions %v reduced to %v, the %s versions the API server speaks", d.GenerateName, d.AdmissionReviewVersions, versions, review)
		}
		d.AdmissionReviewVersions = versions
		if d.Type != operatorsv1alpha1.ConversionWebhook {
			if err := c.admission(d, where); err != nil {
				return nil, err
			}
			continue
		}
		if d.ReinvocationPolicy != nil {
			c.warnf("webhook %s: reinvocationPolicy dropped: it applies only to a MutatingAdmissionWebhook (OLM ignores it on a ConversionWebhook)", d.GenerateName)
			d.ReinvocationPolicy = nil
		}
		if len(d.ConversionCRDs) == 0 {
			return nil, fmt.Errorf("%s: a ConversionWebhook needs at least one conversionCRDs entry: list the CRDs (<plural>.<group>) it converts", where)
		}
		for _, crd := range d.ConversionCRDs {
			if !crdName.MatchString(crd) || len(crd) > 253 {
				return nil, fmt.Errorf("%s: conversionCRDs entry %q is not a CRD name, <plural>.<group> (for example crontabs.stable.example.com)", where, crd)
			}
			if other, ok := converts[crd]; ok && other != d.GenerateName {
				return nil, fmt.Errorf("%s: CRD %s is also converted by webhook %s; a CRD has one conversion webhook", where, crd, other)
			}
			converts[crd] = d.GenerateName
		}
	}
	return defs, nil
}

// admission checks an admission webhook definition as the WebhookInstall
// admission rules do (which refuse what admissionregistration.k8s.io/v1
// would refuse later), so the import fails here with the CSV's names
// instead of at kubectl apply; fields OLM ignores are dropped.
func (c *converter) admission(d *v1alpha1.WebhookDefinition, where string) error {
	if len(d.ConversionCRDs) > 0 {
		c.warnf("webhook %s: conversionCRDs dropped: they apply only to a ConversionWebhook (OLM ignores them on a %s)", d.GenerateName, d.Type)
		d.ConversionCRDs = nil
	}
	if d.ReinvocationPolicy != nil && d.Type != operatorsv1alpha1.MutatingAdmissionWebhook {
		c.warnf("webhook %s: reinvocationPolicy dropped: it applies only to a MutatingAdmissionWebhook (OLM ignores it on a %s)", d.GenerateName, d.Type)
		d.ReinvocationPolicy = nil
	}
	if strings.Count(d.GenerateName, ".") < 2 {
		return fmt.Errorf("%s: an admission webhook's generateName is its webhook name, which the API server requires to be a fully qualified name of at least three DNS segments (for example vcrontab.kb.io): rename it in the CSV", where)
	}
	if se := d.SideEffects; se == nil || (*se != admissionregistrationv1.SideEffectClassNone && *se != admissionregistrationv1.SideEffectClassNoneOnDryRun) {
		got := "unset"
		if se != nil {
			got = string(*se)
		}
		return fmt.Errorf("%s: sideEffects is %s; an admission webhook needs None or NoneOnDryRun: admissionregistration.k8s.io/v1 refuses Some and Unknown, "+
			"and Hookwright verifies every admission webhook with a server-side dry-run request (with kubebuilder: sideEffects=None in the webhook marker)", where, got)
	}
	if len(d.Rules) == 0 {
		return fmt.Errorf("%s: an admission webhook needs at least one rule: add rules (operations, apiGroups, apiVersions, resources) saying which requests it sees", where)
	}
	if len(d.Rules) > maxRules {
		return fmt.Errorf("%s: %d rules; a WebhookInstall takes at most %d per webhook: merge rules (a rule lists several groups, versions and resources)", where, len(d.Rules), maxRules)
	}
	for i, r := range d.Rules {
		rule := fmt.Sprintf("%s, rule %d", where, i+1)
		switch {
		case len(r.Operations) == 0:
			return fmt.Errorf("%s: no operations: list CREATE, UPDATE, DELETE or CONNECT, or '*' alone", rule)
		case len(r.APIGroups) == 0:
			return fmt.Errorf("%s: no apiGroups: list the API groups of the resources it matches (\"\" for the core group, '*' alone for every group)", rule)
		case len(r.APIVersions) == 0:
			return fmt.Errorf("%s: no apiVersions: list the versions it matches, or '*' alone", rule)
		case len(r.Resources) == 0:
			return fmt.Errorf("%s: no resources: list the resources it matches (for example crontabs, pods/status, or '*')", rule)
		}
		for _, op := range r.Operations {
			if !slices.Contains([]admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll, admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete, admissionregistrationv1.Connect}, op) {
				return fmt.Errorf("%s: operation %q is none of CREATE, UPDATE, DELETE, CONNECT and '*'", rule, op)
			}
		}
		if s := r.Scope; s != nil && !slices.Contains([]admissionregistrationv1.ScopeType{admissionregistrationv1.AllScopes, admissionregistrationv1.ClusterScope, admissionregistrationv1.NamespacedScope}, *s) {
			return fmt.Errorf("%s: scope %q is none of Cluster, Namespaced and '*'", rule, *s)
		}
	}
	if p := d.FailurePolicy; p != nil && *p != admissionregistrationv1.Ignore && *p != admissionregistrationv1.Fail {
		return fmt.Errorf("%s: failurePolicy %q is neither Fail nor Ignore", where, *p)
	}
	if p := d.MatchPolicy; p != nil && *p != admissionregistrationv1.Exact && *p != admissionregistrationv1.Equivalent {
		return fmt.Errorf("%s: matchPolicy %q is neither Exact nor Equivalent", where, *p)
	}
	if p := d.ReinvocationPolicy; p != nil && *p != admissionregistrationv1.NeverReinvocationPolicy && *p != admissionregistrationv1.IfNeededReinvocationPolicy {
		return fmt.Errorf("%s: reinvocationPolicy %q is neither Never nor IfNeeded", where, *p)
	}
	if t := d.TimeoutSeconds; t != nil && (*t < 1 || *t > 30) {
		return fmt.Errorf("%s: timeoutSeconds %d is out of the 1 to 30 the API server allows", where, *t)
	}
	return nil
}

// deployments keeps the deployments that serve a webhook, in CSV order,
// without OLM-internal annotations and certificate volumes.
func (c *converter) deployments(defs []v1alpha1.WebhookDefinition) ([]operatorsv1alpha1.StrategyDeploymentSpec, error) {
	wanted := map[string]bool{}
	for _, d := range defs {
		wanted[d.DeploymentName] = true
	}
	var out []operatorsv1alpha1.StrategyDeploymentSpec
	found := map[string]bool{}
	for _, d := range c.csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		if !wanted[d.Name] {
			c.warnf("deployment %s not carried over: it serves no webhook (Hookwright runs only webhook deployments; keep running it as before)", d.Name)
			continue
		}
		if found[d.Name] {
			return nil, fmt.Errorf("CSV %s lists deployment %s twice in install.spec.deployments", c.csv.Name, d.Name)
		}
		found[d.Name] = true
		out = append(out, c.cleanDeployment(d))
	}
	for _, d := range defs {
		if !found[d.DeploymentName] {
			return nil, fmt.Errorf("CSV %s, webhook %s: deploymentName %s names no deployment in install.spec.deployments", c.csv.Name, d.GenerateName, d.DeploymentName)
		}
	}
	if len(out) > maxDeployments {
		return nil, fmt.Errorf("CSV %s has %d webhook deployments; a WebhookInstall takes at most %d", c.csv.Name, len(out), maxDeployments)
	}
	services := map[string]string{}
	for _, d := range out {
		key := strings.ReplaceAll(d.Name, ".", "-")
		if other, ok := services[key]; ok {
			return nil, fmt.Errorf("CSV %s: deployments %s and %s differ only by '.' versus '-' and would share one webhook Service; rename one", c.csv.Name, other, d.Name)
		}
		services[key] = d.Name
	}
	return out, nil
}

// cleanDeployment drops OLM-internal labels and annotations, and Secret
// volumes mounted only where Hookwright mounts its serving certificate.
func (c *converter) cleanDeployment(d operatorsv1alpha1.StrategyDeploymentSpec) operatorsv1alpha1.StrategyDeploymentSpec {
	d.Label = withoutOLMKeys(d.Label)
	pod := &d.Spec.Template
	pod.Annotations = withoutOLMKeys(pod.Annotations)
	var selected map[string]string
	if d.Spec.Selector != nil {
		selected = d.Spec.Selector.MatchLabels
	}
	for k := range pod.Labels {
		if isOLMKey(k) {
			if _, inSelector := selected[k]; !inSelector {
				delete(pod.Labels, k)
			}
		}
	}
	if len(pod.Labels) == 0 {
		pod.Labels = nil
	}

	certDirs := []string{desired.ServingCertDir, desired.APIServerCertDir}
	mounts := map[string][]string{} // volume name → mount paths
	containers := func(visit func(*corev1.Container)) {
		for i := range pod.Spec.InitContainers {
			visit(&pod.Spec.InitContainers[i])
		}
		for i := range pod.Spec.Containers {
			visit(&pod.Spec.Containers[i])
		}
	}
	containers(func(ctr *corev1.Container) {
		for _, m := range ctr.VolumeMounts {
			mounts[m.Name] = append(mounts[m.Name], path.Clean(m.MountPath))
		}
	})
	drop := map[string]bool{}
	var volumes []corev1.Volume
	for _, v := range pod.Spec.Volumes {
		paths := mounts[v.Name]
		if v.Secret != nil && len(paths) > 0 && !slices.ContainsFunc(paths, func(p string) bool { return !slices.Contains(certDirs, p) }) {
			drop[v.Name] = true
			slices.Sort(paths)
			c.warnf("deployment %s: volume %s (Secret %s at %s) dropped: Hookwright mounts the serving certificate it issues there",
				d.Name, v.Name, v.Secret.SecretName, strings.Join(slices.Compact(paths), ", "))
			continue
		}
		volumes = append(volumes, v)
	}
	pod.Spec.Volumes = volumes
	containers(func(ctr *corev1.Container) {
		ctr.VolumeMounts = slices.DeleteFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool { return drop[m.Name] })
		if len(ctr.VolumeMounts) == 0 {
			ctr.VolumeMounts = nil
		}
	})
	return d
}

// ownedCRDs lists the owned CRDs that a conversion webhook converts, in
// CSV order; CRDs converted but not listed come from the bundle's CRDs.
func (c *converter) ownedCRDs(defs []v1alpha1.WebhookDefinition, bundleCRDs map[string]CRD) ([]v1alpha1.CRDDescription, error) {
	var converted []string
	for _, d := range defs {
		for _, crd := range d.ConversionCRDs {
			if !slices.Contains(converted, crd) {
				converted = append(converted, crd)
			}
		}
	}
	var out []v1alpha1.CRDDescription
	listed := map[string]bool{}
	for _, o := range c.csv.Spec.CustomResourceDefinitions.Owned {
		if !slices.Contains(converted, o.Name) {
			c.warnf("owned CRD %s not carried over: no conversion webhook converts it (an install lists the CRDs whose spec.conversion Hookwright sets; apply the CRD yourself as before)", o.Name)
			continue
		}
		if listed[o.Name] {
			continue
		}
		listed[o.Name] = true
		desc, err := crdDescription(o)
		if err != nil {
			return nil, fmt.Errorf("CSV %s, owned CRD %s: %w", c.csv.Name, o.Name, err)
		}
		out = append(out, desc)
	}
	for _, name := range converted {
		if listed[name] {
			continue
		}
		crd, ok := bundleCRDs[name]
		if !ok {
			return nil, fmt.Errorf("CSV %s converts CRD %s but does not list it in spec.customresourcedefinitions.owned: add it there (name, version, kind), as OLM requires too", c.csv.Name, name)
		}
		c.warnf("CRD %s is converted but not listed in the CSV's owned CRDs; added from the bundle's CRD manifest (version %s, kind %s)", name, crd.StorageVersion, crd.Kind)
		out = append(out, v1alpha1.CRDDescription{Name: name, Version: crd.StorageVersion, Kind: crd.Kind})
	}
	if n := len(c.csv.Spec.CustomResourceDefinitions.Required); n > 0 {
		var names []string
		for _, r := range c.csv.Spec.CustomResourceDefinitions.Required {
			names = append(names, r.Name)
		}
		c.warnf("required CRDs not carried over (%s): Hookwright does not resolve dependencies", strings.Join(names, ", "))
	}
	return out, nil
}

// crdDescription converts a CSV CRD description, keeping its descriptors
// as the schemaless JSON a WebhookInstall holds them in.
func crdDescription(o operatorsv1alpha1.CRDDescription) (v1alpha1.CRDDescription, error) {
	out := v1alpha1.CRDDescription{Name: o.Name, Version: o.Version, Kind: o.Kind, DisplayName: o.DisplayName, Description: o.Description}
	var err error
	if out.Resources, err = rawList(o.Resources); err != nil {
		return out, err
	}
	if out.StatusDescriptors, err = rawList(o.StatusDescriptors); err != nil {
		return out, err
	}
	if out.SpecDescriptors, err = rawList(o.SpecDescriptors); err != nil {
		return out, err
	}
	out.ActionDescriptor, err = rawList(o.ActionDescriptor)
	return out, err
}

func rawList[T any](items []T) ([]apiextensionsv1.JSON, error) {
	var out []apiextensionsv1.JSON
	for _, item := range items {
		raw, err := json.Marshal(item)
		if err != nil {
			return nil, err
		}
		var generic any // keys sorted, as they come back from the API server
		if err := json.Unmarshal(raw, &generic); err != nil {
			return nil, err
		}
		if raw, err = json.Marshal(generic); err != nil {
			return nil, err
		}
		out = append(out, apiextensionsv1.JSON{Raw: raw})
	}
	return out, nil
}

// replaces maps the CSV's replaces by DefaultName, or keeps it when
// versioned. Successive CSVs of one package map to the install's own name:
// that upgrade is done in place, so the field is dropped, as it is when the
// caller chose the name (the previous install's name is then unknown).
func (c *converter) replaces(name string, nameGiven, versioned bool) string {
	from := c.csv.Spec.Replaces
	if from == "" {
		return ""
	}
	mapped := DefaultName(from)
	switch {
	case versioned:
		mapped = from
	case nameGiven:
		c.warnf("replaces %s dropped: with --name the previous install's name is unknown; upgrade by applying this WebhookInstall over the existing one", from)
		return ""
	}
	if mapped == name {
		c.warnf("replaces %s dropped: it maps to this install's own name %s; upgrade by applying this WebhookInstall over the existing one", from, name)
		return ""
	}
	if err := checkName(mapped); err != nil {
		c.warnf("replaces %s dropped: it maps to %q, which %v", from, mapped, err)
		return ""
	}
	if !versioned {
		c.warnf("replaces %s mapped to replaces: %s (the name import-csv gives that CSV's install); check that install exists under this name", from, mapped)
	}
	return mapped
}

// installModes carries the CSV's install modes over, made to support
// AllNamespaces only, as webhooks serve every namespace.
func (c *converter) installModes() []operatorsv1alpha1.InstallMode {
	known := []operatorsv1alpha1.InstallModeType{
		operatorsv1alpha1.InstallModeTypeOwnNamespace, operatorsv1alpha1.InstallModeTypeSingleNamespace,
		operatorsv1alpha1.InstallModeTypeMultiNamespace, operatorsv1alpha1.InstallModeTypeAllNamespaces,
	}
	var out []operatorsv1alpha1.InstallMode
	var changed []string
	seen := map[operatorsv1alpha1.InstallModeType]bool{}
	for _, m := range c.csv.Spec.InstallModes {
		if !slices.Contains(known, m.Type) || seen[m.Type] {
			changed = append(changed, fmt.Sprintf("dropped %s entry", m.Type))
			continue
		}
		seen[m.Type] = true
		all := m.Type == operatorsv1alpha1.InstallModeTypeAllNamespaces
		if m.Supported != all {
			changed = append(changed, fmt.Sprintf("%s supported: %t → %t", m.Type, m.Supported, all))
			m.Supported = all
		}
		out = append(out, m)
	}
	if !seen[operatorsv1alpha1.InstallModeTypeAllNamespaces] {
		changed = append(changed, "added AllNamespaces")
		out = append(out, operatorsv1alpha1.InstallMode{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces, Supported: true})
	}
	if len(changed) > 0 {
		c.warnf("installModes changed to support AllNamespaces only, as webhooks serve every namespace (%s)", strings.Join(changed, "; "))
	}
	return out
}

// leftBehind warns about the rest of the CSV and bundle that has no place
// in a WebhookInstall.
func (c *converter) leftBehind(install *v1alpha1.WebhookInstall, in Input) {
	spec := c.csv.Spec
	byAccount := map[string][]string{}
	for _, d := range install.Spec.Install.Spec.Deployments {
		sa := d.Spec.Template.Spec.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		byAccount[sa] = append(byAccount[sa], d.Name)
	}
	var accounts []string
	for sa := range byAccount {
		accounts = append(accounts, sa)
	}
	slices.Sort(accounts)
	for _, sa := range accounts {
		var blocks []string
		if slices.ContainsFunc(spec.InstallStrategy.StrategySpec.Permissions, func(p operatorsv1alpha1.StrategyDeploymentPermissions) bool { return p.ServiceAccountName == sa }) {
			blocks = append(blocks, "permissions")
		}
		if slices.ContainsFunc(spec.InstallStrategy.StrategySpec.ClusterPermissions, func(p operatorsv1alpha1.StrategyDeploymentPermissions) bool { return p.ServiceAccountName == sa }) {
			blocks = append(blocks, "clusterPermissions")
		}
		if len(blocks) > 0 {
			c.warnf("RBAC of service account %s (deployment %s) not carried over from install.spec.%s: Hookwright grants no RBAC and creates a missing ServiceAccount bare; create the roles and bindings the webhook needs yourself",
				sa, strings.Join(byAccount[sa], ", "), strings.Join(blocks, " and "))
		}
	}
	if len(spec.APIServiceDefinitions.Owned) > 0 || len(spec.APIServiceDefinitions.Required) > 0 {
		c.warnf("apiservicedefinitions not carried over: Hookwright does not install aggregated API servers")
	}
	if len(spec.Skips) > 0 || c.csv.Annotations[operatorsv1alpha1.SkipRangeAnnotationKey] != "" {
		c.warnf("skips and olm.skipRange not carried over: a WebhookInstall has no upgrade graph")
	}
	for _, def := range install.Spec.WebhookDefinitions {
		want := "service " + install.Namespace + "/" + desired.ServiceName(def.DeploymentName)
		for _, name := range def.ConversionCRDs {
			if crd := in.CRDs[name]; crd.Webhook != "" && crd.Webhook != want {
				c.warnf("the bundle's CRD %s sets spec.conversion to %s, not %s where Hookwright points it: apply the CRD without spec.conversion, or the install fails (a conversion Hookwright did not configure is never taken over without an admin's handover)",
					name, crd.Webhook, want)
			}
		}
	}
	if len(in.CRDs) > 0 {
		var names []string
		for name := range in.CRDs {
			names = append(names, name)
		}
		slices.Sort(names)
		c.warnf("the bundle's CRDs are not part of a WebhookInstall: apply them yourself (%s); Hookwright waits for them and then sets their spec.conversion", strings.Join(names, ", "))
	}
	if len(in.Others) > 0 {
		c.warnf("other bundle objects not carried over: %s", strings.Join(in.Others, ", "))
	}
}

func checkName(name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("is not a valid name (%s)", strings.Join(errs, "; "))
	}
	if len(name) > maxNameLength {
		return fmt.Errorf("is longer than %d characters (it is a label value on everything Hookwright makes for the install)", maxNameLength)
	}
	return nil
}

// isOLMKey tells the labels and annotations OLM owns, which never belong
// in a WebhookInstall: olm.*, *operatorframework.io/*, operators.coreos.com/*.
func isOLMKey(key string) bool {
	prefix, _, hasPrefix := strings.Cut(key, "/")
	if !hasPrefix {
		return strings.HasPrefix(key, "olm.")
	}
	return strings.HasPrefix(prefix, "olm.") || prefix == "operatorframework.io" || strings.HasSuffix(prefix, ".operatorframework.io") ||
		prefix == "operators.coreos.com" || strings.HasSuffix(prefix, ".operators.coreos.com")
}

func withoutOLMKeys(m map[string]string) map[string]string {
	var out map[string]string
	for k, v := range m {
		if isOLMKey(k) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}
