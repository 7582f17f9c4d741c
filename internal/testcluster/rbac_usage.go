package testcluster

import (
	"fmt"
	"net/http"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Permission is one verb on one resource ("resource/subresource") of one
// API group ("" is the core group).
type Permission struct {
	Group, Resource, Verb string
}

func (p Permission) String() string {
	group := p.Group
	if group == "" {
		group = "core"
	}
	return fmt.Sprintf("%s/%s: %s", group, p.Resource, p.Verb)
}

// UsedPermissions is what user's requests in the audit events needed:
// each request's verb on its resource, plus create for a server-side
// apply that created its object (the API server authorizes an apply that
// creates as a create too). Requests the authorizer refused (403 without
// an "allow" decision) are returned apart; a 403 after the authorizer
// allowed the request is an admission webhook's denial (controller-runtime's
// admission.Denied answers 403), and the request used its permission.
func UsedPermissions(events []AuditEvent, user string) (used map[Permission]int, forbidden []AuditEvent) {
	used = map[Permission]int{}
	for _, e := range events {
		if e.User.Username != user || e.ObjectRef.Resource == "" {
			continue
		}
		if e.ResponseStatus.Code == http.StatusForbidden && e.Annotations[AnnotationAuthorizationDecision] != "allow" {
			forbidden = append(forbidden, e)
			continue
		}
		resource := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			resource += "/" + e.ObjectRef.Subresource
		}
		used[Permission{e.ObjectRef.APIGroup, resource, e.Verb}]++
		if e.Verb == "patch" && e.ResponseStatus.Code == http.StatusCreated {
			used[Permission{e.ObjectRef.APIGroup, resource, "create"}]++
		}
	}
	return used, forbidden
}

// GrantedPermissions flattens RBAC rules (resourceNames narrow a rule but
// do not change which permission it is).
func GrantedPermissions(rules []rbacv1.PolicyRule) []Permission {
	var out []Permission
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, Permission{g, res, v})
				}
			}
		}
	}
	return out
}

// UnusedPermissions lists, sorted, the granted permissions no request used.
func UnusedPermissions(granted []Permission, used map[Permission]int) []string {
	var unused []string
	for _, p := range granted {
		if used[p] == 0 {
			unused = append(unused, p.String())
		}
	}
	sort.Strings(unused)
	return unused
}
