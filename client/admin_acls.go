package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// CreateACLs stores ACL bindings (Kafka's CreateAcls). Storing a binding
// that is already stored succeeds. A binding the cluster refuses gives a
// *KafkaError (INVALID_REQUEST, CLUSTER_AUTHORIZATION_FAILED,
// SECURITY_DISABLED, POLICY_VIOLATION past the cluster's cap), joined
// with the others' errors; the rest are stored.
func (a *Admin) CreateACLs(ctx context.Context, bindings []acl.Binding) error {
	req := kmsg.NewPtrCreateACLsRequest()
	for _, b := range bindings {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceType(b.ResourceType), b.Name, kmsg.ACLResourcePatternType(b.Pattern)
		c.Principal, c.Host = b.Principal, b.Host
		c.Operation, c.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
		req.Creations = append(req.Creations, c)
	}
	return a.askAny(ctx, req, func(resp kmsg.Response) error {
		rs := resp.(*kmsg.CreateACLsResponse).Results
		if len(rs) != len(bindings) {
			return fmt.Errorf("client: CreateAcls answered %d of %d bindings", len(rs), len(bindings))
		}
		var errs []error
		for i, r := range rs {
			if err := kafkaErr(r.ErrorCode, r.ErrorMessage); err != nil {
				errs = append(errs, fmt.Errorf("%v: %w", bindings[i], err))
			}
		}
		return errors.Join(errs...)
	})
}

// ListACLs returns the stored bindings f matches (Kafka's DescribeAcls),
// sorted by resource.
func (a *Admin) ListACLs(ctx context.Context, f acl.Filter) ([]acl.Binding, error) {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourceName, req.ResourcePatternType = kmsg.ACLResourceType(f.ResourceType), f.Name, kmsg.ACLResourcePatternType(f.Pattern)
	req.Principal, req.Host = f.Principal, f.Host
	req.Operation, req.PermissionType = kmsg.ACLOperation(f.Operation), kmsg.ACLPermissionType(f.Permission)
	var out []acl.Binding
	err := a.askAny(ctx, req, func(resp kmsg.Response) error {
		r := resp.(*kmsg.DescribeACLsResponse)
		if err := kafkaErr(r.ErrorCode, r.ErrorMessage); err != nil {
			return err
		}
		out = out[:0]
		for _, res := range r.Resources {
			for _, x := range res.ACLs {
				out = append(out, acl.Binding{ResourceType: acl.ResourceType(res.ResourceType), Name: res.ResourceName,
					Pattern: acl.PatternType(res.ResourcePatternType), Principal: x.Principal, Host: x.Host,
					Operation: acl.Operation(x.Operation), Permission: acl.Permission(x.PermissionType)})
			}
		}
		return nil
	})
	return out, err
}

// DeleteACLs removes every stored binding one of the filters matches
// (Kafka's DeleteAcls) and returns them.
func (a *Admin) DeleteACLs(ctx context.Context, filters []acl.Filter) ([]acl.Binding, error) {
	req := kmsg.NewPtrDeleteACLsRequest()
	for _, f := range filters {
		d := kmsg.NewDeleteACLsRequestFilter()
		d.ResourceType, d.ResourceName, d.ResourcePatternType = kmsg.ACLResourceType(f.ResourceType), f.Name, kmsg.ACLResourcePatternType(f.Pattern)
		d.Principal, d.Host = f.Principal, f.Host
		d.Operation, d.PermissionType = kmsg.ACLOperation(f.Operation), kmsg.ACLPermissionType(f.Permission)
		req.Filters = append(req.Filters, d)
	}
	var out []acl.Binding
	err := a.askAny(ctx, req, func(resp kmsg.Response) error {
		rs := resp.(*kmsg.DeleteACLsResponse).Results
		if len(rs) != len(filters) {
			return fmt.Errorf("client: DeleteAcls answered %d of %d filters", len(rs), len(filters))
		}
		out = out[:0]
		var errs []error
		for _, r := range rs {
			if err := kafkaErr(r.ErrorCode, r.ErrorMessage); err != nil {
				errs = append(errs, err)
				continue
			}
			for _, m := range r.MatchingACLs {
				out = append(out, acl.Binding{ResourceType: acl.ResourceType(m.ResourceType), Name: m.ResourceName,
					Pattern: acl.PatternType(m.ResourcePatternType), Principal: m.Principal, Host: m.Host,
					Operation: acl.Operation(m.Operation), Permission: acl.Permission(m.PermissionType)})
			}
		}
		return errors.Join(errs...)
	})
	return out, err
}
