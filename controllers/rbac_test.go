package controllers_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/hookwright/hookwright/internal/testcluster"
)

// shippedRoles are the roles config/rbac binds to the manager.
var shippedRoles = []string{"role.yaml", "leader_election_role.yaml"}

// authorRoles are granted by the suite in place of an author's verifier
// ClusterRole (suite_test.go), not by Hookwright.
var authorRoles = map[string]bool{"widgets": true}

// expectShippedRBACMatchesUse holds the shipped roles to what the operator
// did in this suite, as the API server's audit log recorded it: every
// granted permission was used by some request, and no request was refused.
// Three permissions are needed where the audit log cannot show a request:
//   - update on webhookinstalls/finalizers: the OwnerReferencesPermission-
//     Enforcement admission plugin (on in this suite) checks it when an
//     owner reference sets blockOwnerDeletion, so a missing grant fails every
//     apply of an owned object instead;
//   - list on every watched resource: client-go streams an informer's
//     initial list over its watch (WatchListClient, on by default since 1.35)
//     and falls back to LIST against API servers without watch-list;
//   - patch on events.k8s.io Events: the recorder sends a repeated Event's
//     series count every 6 minutes, longer than this suite runs;
//   - storage migration's (CRD status, StorageVersionMigrations): this
//     suite's cluster serves the in-tree migration API but runs no
//     controller for it, and its widgets are not granted to Hookwright for
//     rewriting; test/migration holds them to use.
func expectShippedRBACMatchesUse() {
	if suite, _ := GinkgoConfiguration(); len(suite.FocusStrings)+len(suite.SkipStrings)+len(suite.FocusFiles)+len(suite.SkipFiles) > 0 || suite.LabelFilter != "" {
		GinkgoWriter.Println("Not checking the shipped RBAC against the operator's requests: only some specs ran")
		return
	}
	events, _, err := cluster.AuditEvents(0)
	Expect(err).NotTo(HaveOccurred())
	used, forbidden := testcluster.UsedPermissions(events, managerUser)
	Expect(forbidden).To(BeEmpty(), "requests of the operator that the shipped RBAC refused")
	used[testcluster.Permission{Group: "operators.hookwright.dev", Resource: "webhookinstalls/finalizers", Verb: "update"}]++
	used[testcluster.Permission{Group: "events.k8s.io", Resource: "events", Verb: "patch"}]++
	// Storage migration's rules: test/migration runs the operator as this
	// ServiceAccount with these very roles through both migration paths,
	// and fails if any of them goes unused or a request is refused.
	for _, p := range []testcluster.Permission{
		{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions/status", Verb: "update"},
		{Group: "storagemigration.k8s.io", Resource: "storageversionmigrations", Verb: "create"},
		{Group: "storagemigration.k8s.io", Resource: "storageversionmigrations", Verb: "get"},
		{Group: "storagemigration.k8s.io", Resource: "storageversionmigrations", Verb: "delete"},
	} {
		used[p]++
	}
	for p := range used {
		if p.Verb == "watch" {
			used[testcluster.Permission{Group: p.Group, Resource: p.Resource, Verb: "list"}]++
		}
	}

	var granted []testcluster.Permission
	for _, file := range shippedRoles {
		raw, err := os.ReadFile(filepath.Join("..", "config", "rbac", file))
		Expect(err).NotTo(HaveOccurred())
		var role rbacv1.ClusterRole // a Role has the same rules field
		Expect(yaml.Unmarshal(raw, &role)).To(Succeed())
		granted = append(granted, testcluster.GrantedPermissions(role.Rules)...)
	}
	Expect(testcluster.UnusedPermissions(granted, used)).To(BeEmpty(),
		"permissions the shipped roles grant but no request of the operator used: remove them, or add the spec that needs them")

	grantedSet := map[testcluster.Permission]bool{}
	for _, p := range granted {
		grantedSet[p] = true
	}
	var ungranted []string
	for p := range used {
		if !grantedSet[p] && !authorRoles[p.Resource] {
			ungranted = append(ungranted, p.String())
		}
	}
	Expect(ungranted).To(BeEmpty(), "permissions the operator used that the shipped roles do not grant")
	GinkgoWriter.Printf("Shipped RBAC matches the operator's requests: %d permissions\n", len(granted))
}
