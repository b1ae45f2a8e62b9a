package kafkaapi

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// aclsServed is nil when the backend stores ACLs, else what its ACLs
// answers (kerr.SecurityDisabled), which every ACL API answers.
func (s *Server) aclsServed() error {
	_, err := s.backend.ACLs()
	return err
}

var errClusterAuth = fmt.Errorf("%w: not authorized on the cluster", kerr.ClusterAuthorizationFailed)

// startCreateACLs answers CreateAcls: ALTER on the cluster, then each
// creation validated here (INVALID_REQUEST) and the valid ones stored.
func (s *Server) startCreateACLs(req *kmsg.CreateACLsRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
		errs := make([]error, len(req.Creations))
		err := s.aclsServed()
		if err == nil && !s.authorizeCluster(ctx, acl.OpAlter) {
			err = errClusterAuth
		}
		if err == nil && len(req.Creations) > acl.MaxBindings {
			err = fmt.Errorf("%w: %d creations in one request, at most %d", kerr.InvalidRequest, len(req.Creations), acl.MaxBindings)
		}
		if err == nil {
			var valid []acl.Binding
			var at []int
			for i, c := range req.Creations {
				b := acl.Binding{ResourceType: acl.ResourceType(c.ResourceType), Name: c.ResourceName,
					Pattern: acl.PatternType(c.ResourcePatternType), Principal: c.Principal, Host: c.Host,
					Operation: acl.Operation(c.Operation), Permission: acl.Permission(c.PermissionType)}
				if errs[i] = b.Validate(); errs[i] == nil {
					valid, at = append(valid, b), append(at, i)
				}
			}
			if len(valid) > 0 {
				ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
				var got []error
				got, err = s.backend.CreateACLs(ctx, valid)
				cancel()
				for j, i := range at {
					if err == nil && j < len(got) {
						errs[i] = got[j]
					}
				}
			}
		}
		for i := range req.Creations {
			e := errs[i]
			if err != nil {
				e = err
			}
			r := kmsg.NewCreateACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = ErrorCode(e), errorMessage(e)
			resp.Results = append(resp.Results, r)
		}
		return resp, nil
	}
}

// aclFilter converts a DescribeAcls or DeleteAcls filter.
func aclFilter(rt kmsg.ACLResourceType, name *string, pat kmsg.ACLResourcePatternType, principal, host *string,
	op kmsg.ACLOperation, perm kmsg.ACLPermissionType) acl.Filter {
	return acl.Filter{ResourceType: acl.ResourceType(rt), Name: name, Pattern: acl.PatternType(pat),
		Principal: principal, Host: host, Operation: acl.Operation(op), Permission: acl.Permission(perm)}
}

// startDescribeACLs answers DescribeAcls: DESCRIBE on the cluster, then
// the matching bindings grouped by resource pattern.
func (s *Server) startDescribeACLs(req *kmsg.DescribeACLsRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
		set, err := s.backend.ACLs()
		if err == nil && !s.authorizeCluster(ctx, acl.OpDescribe) {
			err = errClusterAuth
		}
		f := aclFilter(req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
		if err == nil {
			err = f.Validate()
		}
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = ErrorCode(err), errorMessage(err)
			return resp, nil
		}
		var cur *kmsg.DescribeACLsResponseResource
		for _, b := range set.Filter(f) { // sorted: one resource's bindings are adjacent
			if cur == nil || cur.ResourceType != kmsg.ACLResourceType(b.ResourceType) || cur.ResourceName != b.Name ||
				cur.ResourcePatternType != kmsg.ACLResourcePatternType(b.Pattern) {
				r := kmsg.NewDescribeACLsResponseResource()
				r.ResourceType, r.ResourceName, r.ResourcePatternType = kmsg.ACLResourceType(b.ResourceType), b.Name, kmsg.ACLResourcePatternType(b.Pattern)
				resp.Resources = append(resp.Resources, r)
				cur = &resp.Resources[len(resp.Resources)-1]
			}
			a := kmsg.NewDescribeACLsResponseResourceACL()
			a.Principal, a.Host, a.Operation, a.PermissionType = b.Principal, b.Host, kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
			cur.ACLs = append(cur.ACLs, a)
		}
		return resp, nil
	}
}

// startDeleteACLs answers DeleteAcls: ALTER on the cluster, then per
// filter the bindings it removed.
func (s *Server) startDeleteACLs(req *kmsg.DeleteACLsRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
		errs := make([]error, len(req.Filters))
		removed := make([][]acl.Binding, len(req.Filters))
		err := s.aclsServed()
		if err == nil && !s.authorizeCluster(ctx, acl.OpAlter) {
			err = errClusterAuth
		}
		if err == nil && len(req.Filters) > acl.MaxFilters {
			err = fmt.Errorf("%w: %d filters in one request, at most %d", kerr.InvalidRequest, len(req.Filters), acl.MaxFilters)
		}
		if err == nil {
			var valid []acl.Filter
			var at []int
			for i, f := range req.Filters {
				af := aclFilter(f.ResourceType, f.ResourceName, f.ResourcePatternType, f.Principal, f.Host, f.Operation, f.PermissionType)
				if errs[i] = af.Validate(); errs[i] == nil {
					valid, at = append(valid, af), append(at, i)
				}
			}
			if len(valid) > 0 {
				ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
				var got [][]acl.Binding
				var gotErrs []error
				got, gotErrs, err = s.backend.DeleteACLs(ctx, valid)
				cancel()
				for j, i := range at {
					if err == nil && j < len(got) && j < len(gotErrs) {
						removed[i], errs[i] = got[j], gotErrs[j]
					}
				}
			}
		}
		for i := range req.Filters {
			e := errs[i]
			if err != nil {
				e = err
			}
			r := kmsg.NewDeleteACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = ErrorCode(e), errorMessage(e)
			for _, b := range removed[i] {
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(b.ResourceType), b.Name, kmsg.ACLResourcePatternType(b.Pattern)
				m.Principal, m.Host = b.Principal, b.Host
				m.Operation, m.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
				r.MatchingACLs = append(r.MatchingACLs, m)
			}
			resp.Results = append(resp.Results, r)
		}
		return resp, nil
	}
}
