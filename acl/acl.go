// Package acl is Kafka's authorisation model: bindings (a resource pattern
// and an access control entry), the filters that CreateAcls, DescribeAcls
// and DeleteAcls carry, an immutable indexed Set of bindings, and the
// Authorizer's decision. It is pure: no I/O, no clock, no map order.
//
// Numbers are Kafka's wire numbers, so a kmsg value converts by a cast.
package acl

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"strings"
)

// ResourceType is Kafka's ACL resource type.
type ResourceType uint8

// Resource types. Zero is Kafka's UNKNOWN; Any is for filters only.
const (
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	// ResourceDelegationToken names a delegation token by its id.
	ResourceDelegationToken ResourceType = 6
	// ResourceUser names a principal, "User:<name>", whose delegation
	// tokens CREATE_TOKENS and DESCRIBE_TOKENS are about.
	ResourceUser ResourceType = 7
)

var resourceNames = map[ResourceType]string{
	ResourceAny: "ANY", ResourceTopic: "TOPIC", ResourceGroup: "GROUP",
	ResourceCluster: "CLUSTER", ResourceTransactionalID: "TRANSACTIONAL_ID",
	ResourceDelegationToken: "DELEGATION_TOKEN", ResourceUser: "USER",
}

func (t ResourceType) String() string { return enumName(resourceNames, t) }

// PatternType says how a binding's resource name matches resource names.
type PatternType uint8

// Pattern types. Zero is Kafka's UNKNOWN; Any and Match are for filters
// only.
const (
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3 // the name itself, or "*" for every name
	PatternPrefixed PatternType = 4 // every name that starts with the name
)

var patternNames = map[PatternType]string{
	PatternAny: "ANY", PatternMatch: "MATCH", PatternLiteral: "LITERAL", PatternPrefixed: "PREFIXED",
}

func (p PatternType) String() string { return enumName(patternNames, p) }

// Operation is Kafka's ACL operation.
type Operation uint8

// Operations. Zero is Kafka's UNKNOWN; Any is for filters only; All
// matches every operation.
const (
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	// OpCreateTokens on a USER lets a principal create delegation tokens
	// owned by that user.
	OpCreateTokens Operation = 13
	// OpDescribeTokens on a USER lets a principal describe that user's
	// delegation tokens.
	OpDescribeTokens Operation = 14
)

var operationNames = map[Operation]string{
	OpAny: "ANY", OpAll: "ALL", OpRead: "READ", OpWrite: "WRITE", OpCreate: "CREATE",
	OpDelete: "DELETE", OpAlter: "ALTER", OpDescribe: "DESCRIBE", OpClusterAction: "CLUSTER_ACTION",
	OpDescribeConfigs: "DESCRIBE_CONFIGS", OpAlterConfigs: "ALTER_CONFIGS", OpIdempotentWrite: "IDEMPOTENT_WRITE",
	OpCreateTokens: "CREATE_TOKENS", OpDescribeTokens: "DESCRIBE_TOKENS",
}

func (o Operation) String() string { return enumName(operationNames, o) }

// Permission is ALLOW or DENY.
type Permission uint8

// Permissions. Zero is Kafka's UNKNOWN; Any is for filters only.
const (
	PermissionAny   Permission = 1
	PermissionDeny  Permission = 2
	PermissionAllow Permission = 3
)

var permissionNames = map[Permission]string{PermissionAny: "ANY", PermissionDeny: "DENY", PermissionAllow: "ALLOW"}

func (p Permission) String() string { return enumName(permissionNames, p) }

func enumName[T ~uint8](names map[T]string, v T) string {
	if n, ok := names[v]; ok {
		return n
	}
	return fmt.Sprintf("UNKNOWN(%d)", uint8(v))
}

// ParseOperation reads an operation's name, case-insensitive, with "-" or
// "_" between words (as kafka-acls accepts "IdempotentWrite" too).
func ParseOperation(s string) (Operation, bool) { return parseEnum(operationNames, s) }

func parseEnum[T ~uint8](names map[T]string, s string) (T, bool) {
	norm := func(x string) string {
		return strings.ToUpper(strings.NewReplacer("-", "", "_", "").Replace(x))
	}
	for v, n := range names {
		if norm(n) == norm(s) {
			return v, true
		}
	}
	return 0, false
}

// Names Kafka gives special meaning.
const (
	// ClusterName is the only name of the CLUSTER resource.
	ClusterName = "kafka-cluster"
	// Wildcard as a LITERAL resource name matches every name; as a host,
	// every host.
	Wildcard = "*"
	// WildcardPrincipal matches every user.
	WildcardPrincipal = "User:*"
	// Anonymous is the principal of an unauthenticated connection.
	Anonymous = "User:ANONYMOUS"
	// UserPrefix starts every principal this broker knows.
	UserPrefix = "User:"
)

// Limits on what a client may store.
const (
	// MaxBindings bounds the bindings the cluster stores, and those one
	// request may create.
	MaxBindings = 10000
	// MaxFilters bounds the filters of one DeleteAcls, so that a request
	// cannot make every replica match millions of filters against every
	// binding.
	MaxFilters = 1000
	// MaxNameLen bounds a resource name, a principal and a host.
	MaxNameLen = 1024
)

// Binding is one ACL: who (Principal, from Host) may or may not
// (Permission) do what (Operation) to which resources (ResourceType, Name
// read by Pattern). It is comparable, so it serves as a set key.
type Binding struct {
	ResourceType ResourceType
	Name         string
	Pattern      PatternType
	Principal    string // "User:<name>" or WildcardPrincipal
	Host         string // Wildcard or an IP address
	Operation    Operation
	Permission   Permission
}

func (b Binding) String() string {
	return fmt.Sprintf("%v:%v:%s %s %v %v from %s", b.ResourceType, b.Pattern, b.Name, b.Principal, b.Permission, b.Operation, b.Host)
}

// Compare orders bindings: by resource type, pattern, name, principal,
// host, operation, permission. Sets and snapshots keep this order.
func Compare(a, b Binding) int {
	return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), cmp.Compare(a.Pattern, b.Pattern),
		cmp.Compare(a.Name, b.Name), cmp.Compare(a.Principal, b.Principal), cmp.Compare(a.Host, b.Host),
		cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Permission, b.Permission))
}

// ErrInvalid is wrapped by every rejection of a binding or filter
// (Kafka's INVALID_REQUEST).
var ErrInvalid = errors.New("acl: invalid")

// ErrTooMany rejects a creation that would store more than MaxBindings.
var ErrTooMany = errors.New("acl: too many bindings")

// InvalidError says what is wrong with a binding or filter; it wraps
// ErrInvalid.
type InvalidError struct{ Reason string }

func (e *InvalidError) Error() string { return "acl: invalid: " + e.Reason }
func (e *InvalidError) Unwrap() error { return ErrInvalid }

func invalid(format string, args ...any) error {
	return &InvalidError{Reason: fmt.Sprintf(format, args...)}
}

// Validate checks a binding to be stored, as Kafka's CreateAcls does:
// concrete enums, a non-empty name ("kafka-cluster" for CLUSTER), a
// principal "User:<name>", a host that is "*" or an IP address.
func (b Binding) Validate() error {
	switch {
	case b.ResourceType < ResourceTopic || b.ResourceType > ResourceUser:
		return invalid("resource type %v", b.ResourceType)
	case b.Pattern != PatternLiteral && b.Pattern != PatternPrefixed:
		return invalid("pattern type %v; want LITERAL or PREFIXED", b.Pattern)
	case b.Operation < OpAll || b.Operation > OpDescribeTokens:
		return invalid("operation %v", b.Operation)
	case b.Permission != PermissionAllow && b.Permission != PermissionDeny:
		return invalid("permission %v; want ALLOW or DENY", b.Permission)
	case b.Name == "":
		return invalid("empty resource name")
	case len(b.Name) > MaxNameLen || len(b.Principal) > MaxNameLen || len(b.Host) > MaxNameLen:
		return invalid("a name is longer than %d bytes", MaxNameLen)
	case b.ResourceType == ResourceCluster && b.Name != ClusterName:
		return invalid("the only valid name for the CLUSTER resource is %s", ClusterName)
	}
	if err := checkPrincipal(b.Principal); err != nil {
		return err
	}
	return checkHost(b.Host)
}

func checkPrincipal(p string) error {
	name, ok := strings.CutPrefix(p, UserPrefix)
	if !ok || name == "" {
		return invalid("principal %q; want User:<name>", p)
	}
	return nil
}

func checkHost(h string) error {
	if h != Wildcard && net.ParseIP(h) == nil {
		return invalid("host %q; want * or an IP address", h)
	}
	return nil
}

// Filter selects bindings, as DescribeAcls and DeleteAcls carry it: Any
// values and nil strings match everything; PatternMatch matches the
// bindings that would apply to the named resource.
type Filter struct {
	ResourceType ResourceType
	Name         *string
	Pattern      PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Validate rejects a filter with an unknown (zero or out of range) enum, as
// Kafka answers such a filter INVALID_REQUEST.
func (f Filter) Validate() error {
	switch {
	case f.ResourceType < ResourceAny || f.ResourceType > ResourceUser:
		return invalid("filter resource type %v", f.ResourceType)
	case f.Pattern < PatternAny || f.Pattern > PatternPrefixed:
		return invalid("filter pattern type %v", f.Pattern)
	case f.Operation < OpAny || f.Operation > OpDescribeTokens:
		return invalid("filter operation %v", f.Operation)
	case f.Permission < PermissionAny || f.Permission > PermissionAllow:
		return invalid("filter permission %v", f.Permission)
	}
	return nil
}

// Matches reports whether b is selected by f (Kafka's AclBindingFilter).
func (f Filter) Matches(b Binding) bool {
	switch {
	case f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType,
		f.Pattern != PatternAny && f.Pattern != PatternMatch && f.Pattern != b.Pattern,
		f.Principal != nil && *f.Principal != b.Principal,
		f.Host != nil && *f.Host != b.Host,
		f.Operation != OpAny && f.Operation != b.Operation,
		f.Permission != PermissionAny && f.Permission != b.Permission:
		return false
	case f.Name == nil:
		return true
	case f.Pattern == PatternAny || f.Pattern == b.Pattern:
		return *f.Name == b.Name
	case b.Pattern == PatternLiteral:
		return *f.Name == b.Name || b.Name == Wildcard
	default: // PREFIXED binding, MATCH filter
		return strings.HasPrefix(*f.Name, b.Name)
	}
}
