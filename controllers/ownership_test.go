package controllers_test

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/hookwright/hookwright/api/v1alpha1"
	"github.com/hookwright/hookwright/internal/testcluster"
)

// conversionApplies counts, per CRD, the operator's server-side applies
// (force=true: spec.conversion; claims are merge patches) that the API
// server answered with 200, from the audit log since offset.
func conversionApplies(g Gomega, offset int64, crdNames ...string) map[string]int {
	events, _, err := cluster.AuditEvents(offset)
	g.Expect(err).NotTo(HaveOccurred())
	counts := map[string]int{}
	for _, name := range crdNames {
		counts[name] = 0
	}
	for _, e := range events {
		if isConversionApply(e) && e.ResponseStatus.Code == 200 {
			if _, ok := counts[e.ObjectRef.Name]; ok {
				counts[e.ObjectRef.Name]++
			}
		}
	}
	return counts
}

func isConversionApply(e testcluster.AuditEvent) bool {
	return e.User.Username == managerUser && e.Verb == "patch" && e.ObjectRef.Resource == "customresourcedefinitions" &&
		strings.Contains(e.RequestURI, "force=true")
}

// createInstalls creates the installs at once, as a burst of users would.
func createInstalls(ctx context.Context, installs []*v1alpha1.WebhookInstall) {
	var wg sync.WaitGroup
	for _, whi := range installs {
		wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			Expect(k8s.Create(ctx, whi)).To(Succeed())
		}()
	}
	wg.Wait()
}

var _ = Describe("One owner per CRD", func() {
	It("lets exactly one of ten concurrent installs own a CRD; nine are blocked and deploy nothing", func(ctx context.Context) {
		first := createNamespace(ctx)
		group := first + ".hookwright.test"
		crdName := "widgets." + group
		createWidgetCRD(ctx, group)
		_, offset := managerWrites(0)

		namespaces := []string{first}
		for len(namespaces) < 10 {
			namespaces = append(namespaces, createNamespace(ctx))
		}
		var installs []*v1alpha1.WebhookInstall
		for _, ns := range namespaces {
			serve(ns, "widget-webhook")
			installs = append(installs, newInstall(ns, "widgets", "widget-webhook", crdName))
		}
		createInstalls(ctx, installs)

		var owner string
		Eventually(func(g Gomega) {
			succeeded, conflicted := 0, 0
			for _, ns := range namespaces {
				whi := installIn(ctx, g, ns, "widgets")
				switch {
				case whi.Status.Phase == v1alpha1.PhaseSucceeded:
					succeeded++
					owner = ns + "/widgets"
				case whi.Status.Phase == v1alpha1.PhaseFailed && whi.Status.Reason == v1alpha1.ReasonOwnerConflict:
					conflicted++
				}
			}
			g.Expect(succeeded).To(Equal(1))
			g.Expect(conflicted).To(Equal(9))
		}).Should(Succeed())

		crd := getCRD(ctx, crdName)
		Expect(crd.Annotations[v1alpha1.AnnotationOwner]).To(Equal(owner))
		ownerNS, _, _ := strings.Cut(owner, "/")
		Expect(conversionService(crd)).To(Equal(ownerNS+"/widget-webhook-service"), "the CRD converts through the owner's Service")
		Eventually(func(g Gomega) {
			g.Expect(conversionApplies(g, offset, crdName)).To(HaveKeyWithValue(crdName, 1), "exactly one spec.conversion write succeeded: the owner's")
		}).Should(Succeed())
		for _, ns := range namespaces {
			if ns+"/widgets" == owner {
				continue
			}
			whi := getInstall(ctx, ns, "widgets")
			Expect(whi.Status.Message).To(ContainSubstring(fmt.Sprintf("CRD %s is owned by WebhookInstall %s", crdName, owner)))
			Expect(whi.Status.Message).To(ContainSubstring("delete WebhookInstall "+owner), "the hand-over that works across namespaces")
			Expect(whi.Status.Message).NotTo(ContainSubstring("spec.replaces"), "spec.replaces names an install of the same namespace only")
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widget-webhook"}, &appsv1.Deployment{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "blocked install %s deployed nothing", ns)
		}
	})

	It("offers spec.replaces only to an install of the owner's namespace", func(ctx context.Context) {
		ns, _, crdName := widgetNamespace(ctx)
		serve(ns, "widget-webhook")
		Expect(k8s.Create(ctx, newInstall(ns, "widgets", "widget-webhook", crdName))).To(Succeed())
		eventuallyPhase(ctx, ns, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
		Expect(k8s.Create(ctx, newInstall(ns, "other", "other-webhook", crdName))).To(Succeed())
		blocked := eventuallyPhase(ctx, ns, "other", v1alpha1.PhaseFailed, v1alpha1.ReasonOwnerConflict)
		Expect(blocked.Status.Message).To(ContainSubstring("spec.replaces: widgets"))
	})

	It("releases a claim a blocked install holds, such as one left by an interrupted pass", func(ctx context.Context) {
		nsA, _, free := widgetNamespace(ctx)
		nsB, _, taken := widgetNamespace(ctx)
		serve(nsB, "widget-webhook")
		Expect(k8s.Create(ctx, newInstall(nsB, "widgets", "widget-webhook", taken))).To(Succeed())
		eventuallyPhase(ctx, nsB, "widgets", v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)

		By("claiming one CRD for an install that does not exist yet, as a pass interrupted after its first claim leaves it")
		crd := getCRD(ctx, free)
		patch := client.MergeFrom(crd.DeepCopy())
		crd.Annotations = map[string]string{v1alpha1.AnnotationOwner: nsA + "/widgets"}
		Expect(k8s.Patch(ctx, crd, patch)).To(Succeed())

		serve(nsA, "widget-webhook")
		install := newInstall(nsA, "widgets", "widget-webhook", free)
		install.Spec.CustomResourceDefinitions.Owned = append(install.Spec.CustomResourceDefinitions.Owned, v1alpha1.CRDDescription{Name: taken, Version: "v1", Kind: "Widget"})
		install.Spec.WebhookDefinitions[0].ConversionCRDs = []string{free, taken}
		Expect(k8s.Create(ctx, install)).To(Succeed())
		eventuallyPhase(ctx, nsA, "widgets", v1alpha1.PhaseFailed, v1alpha1.ReasonOwnerConflict)
		Eventually(func(g Gomega) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: free}, crd)).To(Succeed())
			g.Expect(crd.Annotations).NotTo(HaveKey(v1alpha1.AnnotationOwner), "the blocked install holds none of its CRDs")
		}).Should(Succeed())
		Expect(getCRD(ctx, taken).Annotations[v1alpha1.AnnotationOwner]).To(Equal(nsB + "/widgets"))
	})

	It("claims all or none of an install's CRDs: ten installs over random overlapping sets never deadlock nor keep a partial set", func(ctx context.Context) {
		for _, seed := range []int64{1, 2, 3} {
			By(fmt.Sprintf("seed %d", seed))
			rng := rand.New(rand.NewSource(seed))
			base := createNamespace(ctx)
			var crdNames []string
			for i := range 5 {
				group := fmt.Sprintf("%s-c%d.hookwright.test", base, i)
				createWidgetCRD(ctx, group)
				crdNames = append(crdNames, "widgets."+group)
			}
			_, offset := managerWrites(0)

			lists := map[string][]string{} // install ref -> its CRDs, in its own (random) order
			var installs []*v1alpha1.WebhookInstall
			for i := range 10 {
				ns := base
				if i > 0 {
					ns = createNamespace(ctx)
				}
				var set []string
				for _, k := range rng.Perm(len(crdNames))[:2+rng.Intn(2)] {
					set = append(set, crdNames[k])
				}
				serve(ns, "widget-webhook")
				whi := newInstall(ns, "widgets", "widget-webhook", set[0])
				for _, name := range set[1:] {
					whi.Spec.CustomResourceDefinitions.Owned = append(whi.Spec.CustomResourceDefinitions.Owned, v1alpha1.CRDDescription{Name: name, Version: "v1", Kind: "Widget"})
				}
				whi.Spec.WebhookDefinitions[0].ConversionCRDs = set
				installs = append(installs, whi)
				lists[ns+"/widgets"] = set
			}
			AddReportEntry(fmt.Sprintf("seed %d", seed), fmt.Sprint(lists))
			createInstalls(ctx, installs)

			Eventually(func(g Gomega) {
				owners := map[string]string{}
				crds := map[string]*apiextensionsv1.CustomResourceDefinition{}
				for _, name := range crdNames {
					crds[name] = &apiextensionsv1.CustomResourceDefinition{}
					g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, crds[name])).To(Succeed())
					owners[name] = crds[name].Annotations[v1alpha1.AnnotationOwner]
				}
				winners := map[string]bool{}
				for ref, set := range lists {
					ns, name, _ := strings.Cut(ref, "/")
					whi := installIn(ctx, g, ns, name)
					owned := 0
					for _, crd := range set {
						if owners[crd] == ref {
							owned++
						}
					}
					if whi.Status.Phase == v1alpha1.PhaseSucceeded {
						g.Expect(owned).To(Equal(len(set)), "%s succeeded with all of its CRDs", ref)
						winners[ref] = true
						continue
					}
					g.Expect(whi.Status.Reason).To(Equal(v1alpha1.ReasonOwnerConflict), "%s: %s", ref, whi.Status.Message)
					g.Expect(owned).To(BeZero(), "blocked install %s holds no partial set (owners %v)", ref, owners)
				}
				for ref, set := range lists {
					if winners[ref] {
						continue
					}
					blockedByWinner := false
					for _, crd := range set {
						blockedByWinner = blockedByWinner || winners[owners[crd]]
					}
					g.Expect(blockedByWinner).To(BeTrue(), "%s is blocked only by an install that holds its whole set (owners %v)", ref, owners)
				}
				applies := conversionApplies(g, offset, crdNames...)
				for _, name := range crdNames {
					if owner := owners[name]; owner != "" {
						g.Expect(winners).To(HaveKey(owner), "CRD %s is owned by a winner", name)
						ownerNS, _, _ := strings.Cut(owner, "/")
						g.Expect(conversionService(crds[name])).To(Equal(ownerNS+"/widget-webhook-service"), "%s converts through its owner", name)
						g.Expect(applies[name]).To(Equal(1), "one spec.conversion write for %s, the owner's", name)
					} else {
						g.Expect(applies[name]).To(BeZero(), "no spec.conversion write for unowned %s", name)
					}
				}
			}).WithTimeout(3 * time.Minute).Should(Succeed())
		}
	})
})
