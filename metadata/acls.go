package metadata

import (
	"fmt"

	"github.com/minikafka/minikafka-go/acl"
)

// CreateACLs stores ACL bindings (Kafka's CreateAcls). A command of more
// than acl.MaxBindings is rejected whole (acl.ErrTooMany). Each binding is
// checked on its own: an invalid one (acl.ErrInvalid) or one that would
// store more than acl.MaxBindings (acl.ErrTooMany) fails, the others are
// stored. Storing a binding that is already stored succeeds and changes
// nothing, as in Kafka.
//
// Result: CreateACLsResult.
type CreateACLs struct {
	Bindings []acl.Binding
}

// CreateACLsResult has one error per binding of the command, in its
// order; nil when stored.
type CreateACLsResult struct {
	Errs []error
}

// DeleteACLs removes every stored binding one of the filters matches
// (Kafka's DeleteAcls). An invalid filter (acl.ErrInvalid) removes
// nothing; a command of more than acl.MaxFilters is rejected whole
// (acl.ErrTooMany).
//
// Result: DeleteACLsResult.
type DeleteACLs struct {
	Filters []acl.Filter
}

// DeleteACLsResult has, per filter of the command in its order, the
// bindings it removed (sorted by acl.Compare) or the error that rejected
// it. A binding two filters match is listed for both.
type DeleteACLsResult struct {
	Removed [][]acl.Binding
	Errs    []error
}

// Type implements Command.
func (CreateACLs) Type() CommandType { return TypeCreateACLs }

// Type implements Command.
func (DeleteACLs) Type() CommandType { return TypeDeleteACLs }

func (c CreateACLs) appendBody(b []byte) []byte {
	b = appendLen(b, len(c.Bindings))
	for _, x := range c.Bindings {
		b = appendBinding(b, x)
	}
	return b
}

func (c DeleteACLs) appendBody(b []byte) []byte {
	b = appendLen(b, len(c.Filters))
	for _, f := range c.Filters {
		b = appendU8(b, uint8(f.ResourceType))
		b = appendOptString(b, f.Name)
		b = appendU8(b, uint8(f.Pattern))
		b = appendOptString(b, f.Principal)
		b = appendOptString(b, f.Host)
		b = appendU8(b, uint8(f.Operation))
		b = appendU8(b, uint8(f.Permission))
	}
	return b
}

// appendBinding writes u8 resource type, string name, u8 pattern, string
// principal, string host, u8 operation, u8 permission.
func appendBinding(b []byte, x acl.Binding) []byte {
	b = appendU8(b, uint8(x.ResourceType))
	b = appendString(b, x.Name)
	b = appendU8(b, uint8(x.Pattern))
	b = appendString(b, x.Principal)
	b = appendString(b, x.Host)
	b = appendU8(b, uint8(x.Operation))
	return appendU8(b, uint8(x.Permission))
}

// minBindingLen is the encoded size of a binding with empty strings.
const minBindingLen = 4 + 3*4

func readBinding(r *reader) acl.Binding {
	return acl.Binding{
		ResourceType: acl.ResourceType(r.u8("acl resource type")),
		Name:         r.str("acl resource name"),
		Pattern:      acl.PatternType(r.u8("acl pattern type")),
		Principal:    r.str("acl principal"),
		Host:         r.str("acl host"),
		Operation:    acl.Operation(r.u8("acl operation")),
		Permission:   acl.Permission(r.u8("acl permission")),
	}
}

// appendOptString writes a bool "present", then the string if present.
func appendOptString(b []byte, s *string) []byte {
	b = appendBool(b, s != nil)
	if s != nil {
		b = appendString(b, *s)
	}
	return b
}

func readOptString(r *reader, what string) *string {
	if !r.boolean(what + " present") {
		return nil
	}
	s := r.str(what)
	return &s
}

func decodeCreateACLs(r *reader) CreateACLs {
	var c CreateACLs
	if n := r.length("acl bindings", minBindingLen); n > 0 {
		c.Bindings = make([]acl.Binding, n)
		for i := range c.Bindings {
			c.Bindings[i] = readBinding(r)
		}
	}
	return c
}

func decodeDeleteACLs(r *reader) DeleteACLs {
	var c DeleteACLs
	if n := r.length("acl filters", 7); n > 0 {
		c.Filters = make([]acl.Filter, n)
		for i := range c.Filters {
			c.Filters[i] = acl.Filter{
				ResourceType: acl.ResourceType(r.u8("acl resource type")),
				Name:         readOptString(r, "acl resource name"),
				Pattern:      acl.PatternType(r.u8("acl pattern type")),
				Principal:    readOptString(r, "acl principal"),
				Host:         readOptString(r, "acl host"),
				Operation:    acl.Operation(r.u8("acl operation")),
				Permission:   acl.Permission(r.u8("acl permission")),
			}
		}
	}
	return c
}

// createACLs stores the valid bindings, in command order, while there is
// room.
func (s *Snapshot) createACLs(c CreateACLs) (CreateACLsResult, error) {
	if len(c.Bindings) > acl.MaxBindings {
		return CreateACLsResult{}, fmt.Errorf("%w: %d bindings in one command, at most %d", acl.ErrTooMany, len(c.Bindings), acl.MaxBindings)
	}
	res := CreateACLsResult{Errs: make([]error, len(c.Bindings))}
	var add []acl.Binding
	seen := map[acl.Binding]bool{}
	n := s.acls.Len()
	for i, b := range c.Bindings {
		if err := b.Validate(); err != nil {
			res.Errs[i] = err
			continue
		}
		if s.acls.Contains(b) || seen[b] {
			continue
		}
		if n >= acl.MaxBindings {
			res.Errs[i] = fmt.Errorf("%w: the cluster stores at most %d", acl.ErrTooMany, acl.MaxBindings)
			continue
		}
		add, seen[b] = append(add, b), true
		n++
	}
	if len(add) > 0 {
		s.acls = s.acls.With(add)
	}
	return res, nil
}

// deleteACLs removes what the valid filters match.
func (s *Snapshot) deleteACLs(c DeleteACLs) (DeleteACLsResult, error) {
	if len(c.Filters) > acl.MaxFilters {
		return DeleteACLsResult{}, fmt.Errorf("%w: %d filters in one command, at most %d", acl.ErrTooMany, len(c.Filters), acl.MaxFilters)
	}
	res := DeleteACLsResult{Removed: make([][]acl.Binding, len(c.Filters)), Errs: make([]error, len(c.Filters))}
	var valid []acl.Filter
	var at []int
	for i, f := range c.Filters {
		if err := f.Validate(); err != nil {
			res.Errs[i] = err
			continue
		}
		valid, at = append(valid, f), append(at, i)
	}
	next, removed := s.acls.Without(valid)
	for j, i := range at {
		res.Removed[i] = removed[j]
	}
	s.acls = next
	return res, nil
}

// ACLs returns the stored ACL bindings. The Set is immutable, so it is
// shared, not copied.
func (s *Snapshot) ACLs() acl.Set { return s.acls }
