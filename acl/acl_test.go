package acl

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func allow(rt ResourceType, pat PatternType, name, principal string, op Operation) Binding {
	return Binding{ResourceType: rt, Name: name, Pattern: pat, Principal: principal, Host: Wildcard, Operation: op, Permission: PermissionAllow}
}

func deny(rt ResourceType, pat PatternType, name, principal string, op Operation) Binding {
	b := allow(rt, pat, name, principal, op)
	b.Permission = PermissionDeny
	return b
}

func TestAuthorizeDecisionTable(t *testing.T) {
	const alice, bob = "User:alice", "User:bob"
	set := NewSet(
		allow(ResourceTopic, PatternLiteral, "a", alice, OpWrite),
		allow(ResourceTopic, PatternLiteral, "r", alice, OpRead),
		allow(ResourceTopic, PatternLiteral, "all", alice, OpAll),
		allow(ResourceTopic, PatternPrefixed, "logs-", alice, OpRead),
		deny(ResourceTopic, PatternLiteral, "logs-secret", alice, OpRead),
		allow(ResourceTopic, PatternLiteral, "cfg", alice, OpAlterConfigs),
		allow(ResourceTopic, PatternLiteral, Wildcard, bob, OpDescribe),
		deny(ResourceTopic, PatternLiteral, "hidden", WildcardPrincipal, OpAll),
		allow(ResourceTopic, PatternLiteral, "hidden", alice, OpAll),
		Binding{ResourceType: ResourceTopic, Name: "lan", Pattern: PatternLiteral, Principal: alice, Host: "10.0.0.1", Operation: OpRead, Permission: PermissionAllow},
		allow(ResourceGroup, PatternLiteral, "g", alice, OpRead),
		allow(ResourceCluster, PatternLiteral, ClusterName, bob, OpAlter),
	)
	req := func(p string, op Operation, rt ResourceType, name string) Request {
		return Request{Principal: p, Host: "127.0.0.1", Operation: op, Resource: rt, Name: name}
	}
	cases := []struct {
		what string
		r    Request
		az   Authorizer
		want bool
	}{
		{"literal allow", req(alice, OpWrite, ResourceTopic, "a"), Authorizer{}, true},
		{"other operation", req(alice, OpRead, ResourceTopic, "a"), Authorizer{}, false},
		{"other principal", req(bob, OpWrite, ResourceTopic, "a"), Authorizer{}, false},
		{"WRITE implies DESCRIBE", req(alice, OpDescribe, ResourceTopic, "a"), Authorizer{}, true},
		{"READ implies DESCRIBE", req(alice, OpDescribe, ResourceTopic, "r"), Authorizer{}, true},
		{"READ does not imply WRITE", req(alice, OpWrite, ResourceTopic, "r"), Authorizer{}, false},
		{"ALL allows everything", req(alice, OpDelete, ResourceTopic, "all"), Authorizer{}, true},
		{"prefixed allow", req(alice, OpRead, ResourceTopic, "logs-app"), Authorizer{}, true},
		{"prefix must start the name", req(alice, OpRead, ResourceTopic, "applogs-"), Authorizer{}, false},
		{"DENY beats a prefixed ALLOW", req(alice, OpRead, ResourceTopic, "logs-secret"), Authorizer{}, false},
		{"ALTER_CONFIGS implies DESCRIBE_CONFIGS", req(alice, OpDescribeConfigs, ResourceTopic, "cfg"), Authorizer{}, true},
		{"ALTER_CONFIGS does not imply DESCRIBE", req(alice, OpDescribe, ResourceTopic, "cfg"), Authorizer{}, false},
		{"wildcard resource", req(bob, OpDescribe, ResourceTopic, "anything"), Authorizer{}, true},
		{"wildcard principal DENY ALL beats ALLOW ALL", req(alice, OpRead, ResourceTopic, "hidden"), Authorizer{}, false},
		{"host must match", req(alice, OpRead, ResourceTopic, "lan"), Authorizer{}, false},
		{"host matches", Request{Principal: alice, Host: "10.0.0.1", Operation: OpRead, Resource: ResourceTopic, Name: "lan"}, Authorizer{}, true},
		{"group", req(alice, OpRead, ResourceGroup, "g"), Authorizer{}, true},
		{"group type is not topic type", req(alice, OpRead, ResourceTopic, "g"), Authorizer{}, false},
		{"cluster", req(bob, OpAlter, ResourceCluster, ClusterName), Authorizer{}, true},
		{"no ACL: denied by default", req(alice, OpRead, ResourceGroup, "none"), Authorizer{}, false},
		{"no ACL: allowed when configured", req(alice, OpRead, ResourceGroup, "none"), Authorizer{AllowIfNoACL: true}, true},
		{"some ACL: AllowIfNoACL does not apply", req(bob, OpRead, ResourceGroup, "g"), Authorizer{AllowIfNoACL: true}, false},
		{"super user bypasses DENY", req("User:admin", OpRead, ResourceTopic, "hidden"), Authorizer{SuperUsers: []string{"User:admin"}}, true},
		{"anonymous", req(Anonymous, OpRead, ResourceTopic, "r"), Authorizer{}, false},
	}
	for _, c := range cases {
		if got := c.az.Authorize(set, c.r); got != c.want {
			t.Errorf("%s: %+v = %v, want %v", c.what, c.r, got, c.want)
		}
	}
}

func TestAuthorizeAny(t *testing.T) {
	const alice = "User:alice"
	az := Authorizer{}
	if az.AuthorizeAny(NewSet(), alice, "1.2.3.4", OpWrite, ResourceTopic) {
		t.Error("no bindings: allowed")
	}
	if !az.AuthorizeAny(NewSet(allow(ResourceTopic, PatternLiteral, "a", alice, OpWrite)), alice, "1.2.3.4", OpWrite, ResourceTopic) {
		t.Error("WRITE on one topic: denied")
	}
	if az.AuthorizeAny(NewSet(allow(ResourceTopic, PatternLiteral, "a", alice, OpWrite), deny(ResourceTopic, PatternLiteral, "a", alice, OpWrite)),
		alice, "1.2.3.4", OpWrite, ResourceTopic) {
		t.Error("the only WRITE is denied: allowed")
	}
	if az.AuthorizeAny(NewSet(allow(ResourceTopic, PatternPrefixed, "ab", alice, OpWrite), deny(ResourceTopic, PatternPrefixed, "a", alice, OpAll)),
		alice, "1.2.3.4", OpWrite, ResourceTopic) {
		t.Error("prefix denied by a shorter prefix: allowed")
	}
	if az.AuthorizeAny(NewSet(allow(ResourceTopic, PatternLiteral, "a", alice, OpWrite), deny(ResourceTopic, PatternLiteral, Wildcard, alice, OpWrite)),
		alice, "1.2.3.4", OpWrite, ResourceTopic) {
		t.Error("wildcard DENY: allowed")
	}
}

func TestValidate(t *testing.T) {
	good := allow(ResourceTopic, PatternLiteral, "a", "User:alice", OpRead)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*Binding){
		"any resource":     func(b *Binding) { b.ResourceType = ResourceAny },
		"unknown resource": func(b *Binding) { b.ResourceType = 9 },
		"match pattern":    func(b *Binding) { b.Pattern = PatternMatch },
		"any operation":    func(b *Binding) { b.Operation = OpAny },
		"any permission":   func(b *Binding) { b.Permission = PermissionAny },
		"empty name":       func(b *Binding) { b.Name = "" },
		"cluster name":     func(b *Binding) { b.ResourceType, b.Name = ResourceCluster, "c" },
		"principal type":   func(b *Binding) { b.Principal = "Group:x" },
		"empty principal":  func(b *Binding) { b.Principal = "User:" },
		"host":             func(b *Binding) { b.Host = "example.com" },
	}
	for what, f := range bad {
		b := good
		f(&b)
		if err := b.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", what, err)
		}
	}
	if err := (Filter{ResourceType: ResourceAny, Pattern: PatternAny, Operation: OpAny, Permission: PermissionAny}).Validate(); err != nil {
		t.Error(err)
	}
	if err := (Filter{ResourceType: ResourceAny, Pattern: 0, Operation: OpAny, Permission: PermissionAny}).Validate(); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown pattern filter: %v", err)
	}
}

func TestFilterMatches(t *testing.T) {
	str := func(s string) *string { return &s }
	lit := allow(ResourceTopic, PatternLiteral, "orders", "User:a", OpRead)
	wild := allow(ResourceTopic, PatternLiteral, Wildcard, "User:a", OpRead)
	pre := allow(ResourceTopic, PatternPrefixed, "ord", "User:a", OpRead)
	any := Filter{ResourceType: ResourceAny, Pattern: PatternAny, Operation: OpAny, Permission: PermissionAny}
	cases := []struct {
		f    Filter
		b    Binding
		want bool
	}{
		{any, lit, true},
		{Filter{ResourceType: ResourceGroup, Pattern: PatternAny, Operation: OpAny, Permission: PermissionAny}, lit, false},
		{Filter{ResourceType: ResourceTopic, Name: str("orders"), Pattern: PatternAny, Operation: OpAny, Permission: PermissionAny}, lit, true},
		{Filter{ResourceType: ResourceTopic, Name: str("orders"), Pattern: PatternAny, Operation: OpAny, Permission: PermissionAny}, pre, false},
		{Filter{ResourceType: ResourceTopic, Name: str("orders"), Pattern: PatternMatch, Operation: OpAny, Permission: PermissionAny}, pre, true},
		{Filter{ResourceType: ResourceTopic, Name: str("orders"), Pattern: PatternMatch, Operation: OpAny, Permission: PermissionAny}, wild, true},
		{Filter{ResourceType: ResourceTopic, Name: str("ord"), Pattern: PatternPrefixed, Operation: OpAny, Permission: PermissionAny}, pre, true},
		{Filter{ResourceType: ResourceTopic, Name: str("ord"), Pattern: PatternLiteral, Operation: OpAny, Permission: PermissionAny}, pre, false},
		{Filter{ResourceType: ResourceAny, Pattern: PatternAny, Principal: str("User:b"), Operation: OpAny, Permission: PermissionAny}, lit, false},
		{Filter{ResourceType: ResourceAny, Pattern: PatternAny, Operation: OpWrite, Permission: PermissionAny}, lit, false},
		{Filter{ResourceType: ResourceAny, Pattern: PatternAny, Operation: OpAny, Permission: PermissionDeny}, lit, false},
	}
	for i, c := range cases {
		if got := c.f.Matches(c.b); got != c.want {
			t.Errorf("case %d: %v", i, got)
		}
	}
}

func TestSetWithWithout(t *testing.T) {
	a := allow(ResourceTopic, PatternLiteral, "a", "User:x", OpRead)
	b := allow(ResourceGroup, PatternLiteral, "g", "User:x", OpRead)
	s := NewSet(b, a, a)
	if s.Len() != 2 || s.All()[0] != a {
		t.Fatalf("set %v", s.All())
	}
	s2 := s.With([]Binding{a})
	if !s2.Equal(s) {
		t.Fatal("adding a present binding changed the set")
	}
	topics := Filter{ResourceType: ResourceTopic, Pattern: PatternAny, Operation: OpAny, Permission: PermissionAny}
	s3, removed := s.Without([]Filter{topics, topics})
	if s3.Len() != 1 || len(removed[0]) != 1 || len(removed[1]) != 1 || s3.Contains(a) || !s.Contains(a) {
		t.Fatalf("without: %v, removed %v; original %v", s3.All(), removed, s.All())
	}
}

func TestParseOperation(t *testing.T) {
	for in, want := range map[string]Operation{"read": OpRead, "IdempotentWrite": OpIdempotentWrite, "describe-configs": OpDescribeConfigs, "ALL": OpAll} {
		if got, ok := ParseOperation(in); !ok || got != want {
			t.Errorf("%q: %v %v", in, got, ok)
		}
	}
	if _, ok := ParseOperation("fly"); ok {
		t.Error("fly parsed")
	}
}

// appliesTo is the plain definition that Set.applying implements with
// binary searches.
func appliesTo(b Binding, rt ResourceType, name string) bool {
	if b.ResourceType != rt {
		return false
	}
	if b.Pattern == PatternPrefixed {
		return strings.HasPrefix(name, b.Name)
	}
	return b.Name == name || b.Name == Wildcard
}

func TestApplyingMatchesDefinition(t *testing.T) {
	names := []string{"*", "a", "ab", "abc", "b", "ba", "logs-", "logs-app", ""}
	var bs []Binding
	for i, n := range names {
		if n == "" {
			continue
		}
		for _, rt := range []ResourceType{ResourceTopic, ResourceGroup} {
			for _, pat := range []PatternType{PatternLiteral, PatternPrefixed} {
				bs = append(bs, Binding{ResourceType: rt, Name: n, Pattern: pat, Principal: fmt.Sprintf("User:u%d", i%3),
					Host: Wildcard, Operation: OpRead, Permission: Permission(2 + i%2)})
			}
		}
	}
	s := NewSet(bs...)
	for _, rt := range []ResourceType{ResourceTopic, ResourceGroup, ResourceCluster} {
		for _, n := range append(names, "abcd", "logs-app-2", "c") {
			var got, want []Binding
			s.applying(rt, n, func(b Binding) bool { got = append(got, b); return true })
			for _, b := range s.All() {
				if appliesTo(b, rt, n) {
					want = append(want, b)
				}
			}
			slices.SortFunc(got, Compare)
			if !slices.Equal(got, want) {
				t.Errorf("%v %q: applying %v, want %v", rt, n, got, want)
			}
		}
	}
}
