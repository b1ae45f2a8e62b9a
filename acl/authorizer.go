package acl

import (
	"net"
	"slices"
	"strings"
)

// Authorizer decides requests against a Set the way Kafka's
// StandardAuthorizer does:
//
//   - a super user may do everything;
//   - a resource no binding applies to is allowed only with
//     AllowIfNoACL (allow.everyone.if.no.acl.found), else denied;
//   - a matching DENY wins over any ALLOW;
//   - ALL matches every operation; an ALLOW of READ, WRITE, DELETE or
//     ALTER also allows DESCRIBE, and one of ALTER_CONFIGS allows
//     DESCRIBE_CONFIGS;
//   - a binding applies to a resource when its type matches and its
//     LITERAL name equals the name or is "*", or its PREFIXED name
//     starts the name; to a principal when it names it or is "User:*";
//     to a host when it is "*" or the same IP address.
type Authorizer struct {
	SuperUsers   []string // principals, "User:<name>"
	AllowIfNoACL bool
}

// Request is one access to decide.
type Request struct {
	Principal string // "User:<name>"
	Host      string // the client's IP address
	Operation Operation
	Resource  ResourceType
	Name      string // ClusterName for ResourceCluster
}

// SuperUser reports whether principal is one of the super users.
func (a Authorizer) SuperUser(principal string) bool { return slices.Contains(a.SuperUsers, principal) }

// Authorize decides r against the bindings of s.
func (a Authorizer) Authorize(s Set, r Request) bool {
	if a.SuperUser(r.Principal) {
		return true
	}
	found, allowed, denied := false, false, false
	s.applying(r.Resource, r.Name, func(b Binding) bool {
		found = true
		if !b.appliesToPrincipal(r.Principal, r.Host) {
			return true
		}
		if b.Permission == PermissionDeny && (b.Operation == r.Operation || b.Operation == OpAll) {
			denied = true
			return false
		}
		if b.Permission == PermissionAllow && allows(b.Operation, r.Operation) {
			allowed = true
		}
		return true
	})
	if !found {
		return a.AllowIfNoACL
	}
	return allowed && !denied
}

// AuthorizeAny decides whether principal may do op on at least one
// resource of type rt (Kafka's authorizeByResourceType, which
// InitProducerId uses for WRITE on any topic): some ALLOW applies to it
// whose resources no DENY covers whole.
func (a Authorizer) AuthorizeAny(s Set, principal, host string, op Operation, rt ResourceType) bool {
	if a.SuperUser(principal) {
		return true
	}
	bs := s.ofType(rt)
	if len(bs) == 0 {
		return a.AllowIfNoACL
	}
	var denyLiteral, denyPrefix []string
	for _, b := range bs {
		if b.Permission == PermissionDeny && b.appliesToPrincipal(principal, host) && (b.Operation == op || b.Operation == OpAll) {
			if b.Pattern == PatternLiteral {
				denyLiteral = append(denyLiteral, b.Name)
			} else {
				denyPrefix = append(denyPrefix, b.Name)
			}
		}
	}
	if slices.Contains(denyLiteral, Wildcard) {
		return false
	}
	prefixDenied := func(name string) bool {
		return slices.ContainsFunc(denyPrefix, func(p string) bool { return strings.HasPrefix(name, p) })
	}
	for _, b := range bs {
		if b.Permission != PermissionAllow || !b.appliesToPrincipal(principal, host) || !allows(b.Operation, op) {
			continue
		}
		if prefixDenied(b.Name) || (b.Pattern == PatternLiteral && slices.Contains(denyLiteral, b.Name)) {
			continue
		}
		return true
	}
	return false
}

// allows reports whether an ALLOW of granted permits op.
func allows(granted, op Operation) bool {
	switch {
	case granted == op || granted == OpAll:
		return true
	case op == OpDescribe:
		return granted == OpRead || granted == OpWrite || granted == OpDelete || granted == OpAlter
	case op == OpDescribeConfigs:
		return granted == OpAlterConfigs
	}
	return false
}

func (b Binding) appliesToPrincipal(principal, host string) bool {
	if b.Principal != principal && b.Principal != WildcardPrincipal {
		return false
	}
	if b.Host == Wildcard || b.Host == host {
		return true
	}
	bip, hip := net.ParseIP(b.Host), net.ParseIP(host)
	return bip != nil && bip.Equal(hip)
}
