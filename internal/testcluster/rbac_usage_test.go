package testcluster

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

func auditEvent(user, group, resource, subresource, verb string, code int) AuditEvent {
	var e AuditEvent
	e.User.Username, e.Verb, e.ResponseStatus.Code = user, verb, code
	e.ObjectRef.APIGroup, e.ObjectRef.Resource, e.ObjectRef.Subresource = group, resource, subresource
	return e
}

func TestUnusedPermissions(t *testing.T) {
	const me = "system:serviceaccount:ns:me"
	events := []AuditEvent{
		auditEvent(me, "apps", "deployments", "", "patch", 201), // an apply that created
		auditEvent(me, "apps", "deployments", "", "patch", 200),
		auditEvent(me, "", "secrets", "", "get", 404), // a miss still needed get
		auditEvent(me, "x.dev", "things", "status", "update", 200),
		auditEvent(me, "", "configmaps", "", "list", 403),
		auditEvent("someone-else", "", "services", "", "delete", 200),
	}
	// A webhook's denial: 403 after the authorizer allowed the request.
	denied := auditEvent(me, "x.dev", "things", "", "create", 403)
	denied.Annotations = map[string]string{AnnotationAuthorizationDecision: "allow"}
	events = append(events, denied)
	used, forbidden := UsedPermissions(events, me)
	if len(forbidden) != 1 || forbidden[0].ObjectRef.Resource != "configmaps" {
		t.Fatalf("forbidden = %+v, want the configmaps list only", forbidden)
	}
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
		{APIGroups: []string{"x.dev"}, Resources: []string{"things/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{"x.dev"}, Resources: []string{"things"}, Verbs: []string{"create"}},
	}
	if got := UnusedPermissions(GrantedPermissions(rules), used); len(got) != 0 {
		t.Fatalf("unused = %v, want none", got)
	}
	// A rule nobody used is reported, and so is a verb added to a used rule.
	rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"delete"}})
	rules[0].Verbs = append(rules[0].Verbs, "update")
	want := []string{"apps/deployments: update", "core/services: delete"}
	if got := UnusedPermissions(GrantedPermissions(rules), used); !reflect.DeepEqual(got, want) {
		t.Fatalf("unused = %v, want %v", got, want)
	}
}
