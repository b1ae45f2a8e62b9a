package kafkabackend

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/metadata"
)

// authorizer decides with the node's super users and no-ACL rule.
func (b *Backend) authorizer() acl.Authorizer {
	return acl.Authorizer{SuperUsers: b.cfg.SuperUsers, AllowIfNoACL: b.cfg.AllowEveryoneIfNoACLFound}
}

// Authorize decides against the local metadata copy's ACLs; everything is
// allowed unless AuthorizationEnabled.
func (b *Backend) Authorize(r acl.Request) bool {
	if !b.cfg.AuthorizationEnabled {
		return true
	}
	return b.authorizer().Authorize(b.deps.Meta.State().ACLs(), r)
}

// AuthorizeAny is Authorize for "some resource of type rt".
func (b *Backend) AuthorizeAny(principal, host string, op acl.Operation, rt acl.ResourceType) bool {
	if !b.cfg.AuthorizationEnabled {
		return true
	}
	return b.authorizer().AuthorizeAny(b.deps.Meta.State().ACLs(), principal, host, op, rt)
}

// ACLs reads the local metadata copy. The node always stores ACLs, even
// with authorization off, so it never answers kerr.SecurityDisabled.
func (b *Backend) ACLs() (acl.Set, error) { return b.deps.Meta.State().ACLs(), nil }

// CreateACLs proposes the bindings to the metadata group.
func (b *Backend) CreateACLs(ctx context.Context, bindings []acl.Binding) ([]error, error) {
	if !b.deps.Meta.State().Initialized() {
		return nil, fmt.Errorf("%w: the cluster is not formed yet", kerr.NotController)
	}
	r, err := b.deps.Meta.Propose(ctx, metadata.CreateACLs{Bindings: bindings})
	if err != nil {
		return nil, err
	}
	if len(r.ACLs) != len(bindings) {
		return nil, fmt.Errorf("%w: %d results for %d bindings", kerr.UnknownServerError, len(r.ACLs), len(bindings))
	}
	errs := make([]error, len(bindings))
	for i, a := range r.ACLs {
		if a.Code != 0 {
			errs[i] = fmt.Errorf("%w: %s", kerr.ErrorForCode(a.Code), a.Message)
		}
	}
	return errs, nil
}

// DeleteACLs proposes the filters to the metadata group.
func (b *Backend) DeleteACLs(ctx context.Context, filters []acl.Filter) ([][]acl.Binding, []error, error) {
	if !b.deps.Meta.State().Initialized() {
		return nil, nil, fmt.Errorf("%w: the cluster is not formed yet", kerr.NotController)
	}
	r, err := b.deps.Meta.Propose(ctx, metadata.DeleteACLs{Filters: filters})
	if err != nil {
		return nil, nil, err
	}
	if len(r.ACLs) != len(filters) {
		return nil, nil, fmt.Errorf("%w: %d results for %d filters", kerr.UnknownServerError, len(r.ACLs), len(filters))
	}
	removed := make([][]acl.Binding, len(filters))
	errs := make([]error, len(filters))
	for i, a := range r.ACLs {
		removed[i] = a.Removed
		if a.Code != 0 {
			errs[i] = fmt.Errorf("%w: %s", kerr.ErrorForCode(a.Code), a.Message)
		}
	}
	return removed, errs, nil
}
