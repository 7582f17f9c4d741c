package manifests_test

import (
	"fmt"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
)

const (
	namespace      = "hookwright-system"
	serviceAccount = "hookwright-manager"
	managerName    = "hookwright-controller-manager"
	clusterRole    = "hookwright-manager"
	electionRole   = "hookwright-leader-election"
)

// managerClusterPermissions is everything the manager may do cluster-wide,
// one "group/resource: verbs" line each ("core" is the "" group). A new
// permission must be added here on purpose.
// Leases are not here: leader election is granted in the manager's own
// namespace only. The controllers suite checks each permission is used.
var managerClusterPermissions = []string{
	"admissionregistration.k8s.io/mutatingwebhookconfigurations: create,delete,get,list,patch,watch",
	"admissionregistration.k8s.io/validatingadmissionpolicies[hookwright-install-authority]: get",
	"admissionregistration.k8s.io/validatingadmissionpolicybindings[hookwright-install-authority]: get",
	"admissionregistration.k8s.io/validatingwebhookconfigurations: create,delete,get,list,patch,watch",
	"apiextensions.k8s.io/customresourcedefinitions/status: update",
	"apiextensions.k8s.io/customresourcedefinitions: get,list,patch,watch",
	"apps/deployments: create,delete,get,list,patch,watch",
	"authentication.k8s.io/tokenreviews: create",
	"authorization.k8s.io/subjectaccessreviews: create",
	"core/namespaces: get",
	"core/secrets: create,delete,get,list,patch,watch",
	"core/serviceaccounts: create,delete,get",
	"core/services: create,delete,get,list,patch,watch",
	"discovery.k8s.io/endpointslices: list,watch",
	"events.k8s.io/events: create,patch",
	"operators.hookwright.dev/trustprobes2: create", // sorted: '2' before ':'
	"operators.hookwright.dev/trustprobes3: create",
	"operators.hookwright.dev/trustprobes4: create",
	"operators.hookwright.dev/trustprobes5: create",
	"operators.hookwright.dev/trustprobes: create",
	"operators.hookwright.dev/webhookinstalls/finalizers: update",
	"operators.hookwright.dev/webhookinstalls/status: update",
	"operators.hookwright.dev/webhookinstalls: get,list,patch,watch",
	"storagemigration.k8s.io/storageversionmigrations: create,delete,get",
}

// leaderElectionPermissions is what the manager may do in its namespace:
// client-go's LeaseLock, and controller-runtime's core/v1 leader-election Events.
var leaderElectionPermissions = []string{
	"coordination.k8s.io/leases: create,get,update",
	"core/events: create",
}

// permissions flattens rules to sorted "group/resource: verbs" lines;
// resourceNames and nonResourceURLs are spelled out so they cannot hide.
func permissions(rules []rbacv1.PolicyRule) []string {
	verbs := map[string]map[string]bool{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			if g == "" {
				g = "core"
			}
			for _, res := range r.Resources {
				key := g + "/" + res
				if len(r.ResourceNames) > 0 {
					key += "[" + strings.Join(r.ResourceNames, ",") + "]"
				}
				if verbs[key] == nil {
					verbs[key] = map[string]bool{}
				}
				for _, v := range r.Verbs {
					verbs[key][v] = true
				}
			}
		}
		for _, url := range r.NonResourceURLs {
			verbs["url:"+url] = map[string]bool{strings.Join(r.Verbs, ","): true}
		}
	}
	var out []string
	for key, set := range verbs {
		var vs []string
		for v := range set {
			vs = append(vs, v)
		}
		sort.Strings(vs)
		out = append(out, key+": "+strings.Join(vs, ","))
	}
	sort.Strings(out)
	return out
}

func refs(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName()))
	}
	return out
}

var _ = Describe("config/default", func() {
	var rendered string
	var objs []*unstructured.Unstructured
	BeforeEach(func(ctx SpecContext) {
		rendered = kustomize(ctx, "config/default")
		objs = decode(rendered)
	})

	It("renders the CRDs, the admission guard, the manager's RBAC, the metrics reader role and the manager, nothing else", func() {
		Expect(refs(objs)).To(ConsistOf(
			"Namespace /"+namespace,
			"CustomResourceDefinition /webhookinstalls.operators.hookwright.dev",
			"CustomResourceDefinition /trustprobes.operators.hookwright.dev", // the CA rotation's trust probe pool (controllers/probe_pool.go)
			"CustomResourceDefinition /trustprobes2.operators.hookwright.dev",
			"CustomResourceDefinition /trustprobes3.operators.hookwright.dev",
			"CustomResourceDefinition /trustprobes4.operators.hookwright.dev",
			"CustomResourceDefinition /trustprobes5.operators.hookwright.dev",
			"ValidatingAdmissionPolicy /hookwright-install-authority",
			"ValidatingAdmissionPolicyBinding /hookwright-install-authority",
			"ClusterRole /hookwright-metrics-reader",
			"ServiceAccount "+namespace+"/"+serviceAccount,
			"ClusterRole /"+clusterRole,
			"ClusterRoleBinding /"+clusterRole,
			"Role "+namespace+"/"+electionRole,
			"RoleBinding "+namespace+"/"+electionRole,
			"Deployment "+namespace+"/"+managerName,
		))
	})

	It("is accepted by the API server with server-side apply, without warnings", func(ctx SpecContext) {
		stderr, err := applyServerSide(ctx, rendered)
		Expect(err).NotTo(HaveOccurred())
		// hookwright-system warns on Pod Security "restricted" violations:
		// no warning means the manager's pod template meets it.
		Expect(stderr).To(BeEmpty())
		for _, o := range objs {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(o.GroupVersionKind())
			Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(o), live)).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
		}

		By("checking that the API server does warn about a pod template that is not restricted")
		weak := find(objs, "Deployment", managerName).DeepCopy()
		unstructured.RemoveNestedField(weak.Object, "spec", "template", "spec", "securityContext")
		Expect(unstructured.SetNestedSlice(weak.Object, []any{map[string]any{"name": "manager", "image": "hookwright:latest"}}, "spec", "template", "spec", "containers")).To(Succeed())
		raw, err := yaml.Marshal(weak.Object)
		Expect(err).NotTo(HaveOccurred())
		stderr, err = applyServerSide(ctx, string(raw), "--dry-run=server")
		Expect(err).NotTo(HaveOccurred())
		Expect(stderr).To(ContainSubstring(`would violate PodSecurity "restricted:latest"`))
	})

	It("grants exactly the manager's permissions, no wildcard, to its ServiceAccount only", func() {
		for _, o := range objs {
			if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
				continue
			}
			for _, rule := range into[rbacv1.ClusterRole](o).Rules {
				for _, field := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs, rule.ResourceNames, rule.NonResourceURLs} {
					for _, v := range field {
						Expect(v).NotTo(ContainSubstring("*"), "%s %s: %+v", o.GetKind(), o.GetName(), rule)
					}
				}
			}
		}
		Expect(into[rbacv1.ClusterRole](find(objs, "ClusterRole", clusterRole)).AggregationRule).To(BeNil())
		Expect(permissions(into[rbacv1.ClusterRole](find(objs, "ClusterRole", "hookwright-metrics-reader")).Rules)).To(Equal([]string{"url:/metrics: get"}))
		Expect(permissions(into[rbacv1.ClusterRole](find(objs, "ClusterRole", clusterRole)).Rules)).To(Equal(managerClusterPermissions))
		Expect(permissions(into[rbacv1.Role](find(objs, "Role", electionRole)).Rules)).To(Equal(leaderElectionPermissions))

		manager := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: serviceAccount, Namespace: namespace}}
		crb := into[rbacv1.ClusterRoleBinding](find(objs, "ClusterRoleBinding", clusterRole))
		Expect(crb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole}))
		Expect(crb.Subjects).To(Equal(manager))
		rb := into[rbacv1.RoleBinding](find(objs, "RoleBinding", electionRole))
		Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: electionRole}))
		Expect(rb.Subjects).To(Equal(manager))
		Expect(into[appsv1.Deployment](find(objs, "Deployment", managerName)).Spec.Template.Spec.ServiceAccountName).To(Equal(serviceAccount))
	})

	It("runs the manager image hardened, with probes and leader election", func() {
		dep := into[appsv1.Deployment](find(objs, "Deployment", managerName))
		pod := dep.Spec.Template.Spec
		Expect(pod.Containers).To(HaveLen(1))
		c := pod.Containers[0]
		Expect(c.Image).To(Equal("ghcr.io/hookwright/hookwright:v"+makeVar("VERSION")), "fully qualified and versioned, never latest")
		Expect(c.Args).To(ConsistOf("--leader-elect", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8443"))
		Expect(c.Ports).To(ContainElement(corev1.ContainerPort{Name: "https-metrics", ContainerPort: 8443, Protocol: corev1.ProtocolTCP}))
		health := intstr.FromString("health")
		Expect(c.Ports).To(ContainElement(corev1.ContainerPort{Name: "health", ContainerPort: 8081, Protocol: corev1.ProtocolTCP}))
		Expect(c.LivenessProbe.HTTPGet).To(Equal(&corev1.HTTPGetAction{Path: "/healthz", Port: health}))
		Expect(c.ReadinessProbe.HTTPGet).To(Equal(&corev1.HTTPGetAction{Path: "/readyz", Port: health}))

		Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
		Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
		Expect(*c.SecurityContext.AllowPrivilegeEscalation).To(BeFalse())
		Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
		Expect(c.SecurityContext.Capabilities.Drop).To(Equal([]corev1.Capability{"ALL"}))
		Expect(c.SecurityContext.Capabilities.Add).To(BeEmpty())
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, limit := c.Resources.Requests[name], c.Resources.Limits[name]
			Expect(req.IsZero()).To(BeFalse(), "a %s request", name)
			Expect(limit.Cmp(req)).To(BeNumerically(">=", 0), "a %s limit at least the request", name)
		}
		Expect(c.Resources.Limits.Memory().Cmp(resource.MustParse("128Mi"))).To(BeNumerically(">=", 0))
	})
})

var _ = Describe("config/samples", func() {
	It("holds a CronTab WebhookInstall the API server accepts", func(ctx SpecContext) {
		rendered := kustomize(ctx, "config/samples")
		objs := decode(rendered)
		Expect(refs(objs)).To(ConsistOf("WebhookInstall /crontab"))
		whi := into[v1alpha1.WebhookInstall](objs[0])
		Expect(whi.Spec.WebhookDefinitions).To(HaveLen(1))
		Expect(whi.Spec.WebhookDefinitions[0].ConversionCRDs).To(Equal([]string{"crontabs.stable.example.com"}))
		Expect(whi.Spec.CustomResourceDefinitions.Owned[0].Name).To(Equal("crontabs.stable.example.com"))

		// Dry run: no operator may act on it while other specs run one.
		stderr, err := applyServerSide(ctx, rendered, "--namespace=default", "--dry-run=server")
		Expect(err).NotTo(HaveOccurred())
		Expect(stderr).To(BeEmpty())
	})
})
