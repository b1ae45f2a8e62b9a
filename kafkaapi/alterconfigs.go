package kafkaapi

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/topicconfig"
)

// Errors AlterConfigs and IncrementalAlterConfigs answer before asking the
// backend.
var (
	errDuplicateResource = fmt.Errorf("%w: resource named more than once in one request", kerr.InvalidRequest)
	errPerBrokerConfigs  = fmt.Errorf("%w: per-broker dynamic configs are not supported; "+
		"set cluster-wide defaults on the broker resource with an empty name", kerr.InvalidRequest)
)

// resourceKey names a config resource of a request.
type resourceKey struct {
	typ  kmsg.ConfigResourceType
	name string
}

// computeConfigs turns a resource's current dynamic configs into the new
// ones (a copy; current must not change).
type computeConfigs func(current map[string]string, broker bool) (map[string]string, error)

// startAlterConfigs answers AlterConfigs: each resource's dynamic configs
// are replaced by the request's set, as Kafka does.
func (s *Server) startAlterConfigs(req *kmsg.AlterConfigsRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
		count := countResources(len(req.Resources), func(i int) resourceKey {
			return resourceKey{req.Resources[i].ResourceType, req.Resources[i].ResourceName}
		})
		for i := range req.Resources {
			rr := &req.Resources[i]
			r := kmsg.NewAlterConfigsResponseResource()
			r.ResourceType, r.ResourceName = rr.ResourceType, rr.ResourceName
			err := errDuplicateResource
			if count[resourceKey{rr.ResourceType, rr.ResourceName}] == 1 {
				err = s.alterResource(ctx, rr.ResourceType, rr.ResourceName, req.ValidateOnly, replaceConfigs(rr.Configs))
			}
			if err != nil {
				r.ErrorCode, r.ErrorMessage = ErrorCode(err), errorMessage(err)
			}
			resp.Resources = append(resp.Resources, r)
		}
		return resp, nil
	}
}

// startIncrementalAlterConfigs answers IncrementalAlterConfigs: each
// resource's dynamic configs are changed by SET, DELETE, APPEND and
// SUBTRACT operations, computed here from the current configs.
func (s *Server) startIncrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		count := countResources(len(req.Resources), func(i int) resourceKey {
			return resourceKey{req.Resources[i].ResourceType, req.Resources[i].ResourceName}
		})
		for i := range req.Resources {
			rr := &req.Resources[i]
			r := kmsg.NewIncrementalAlterConfigsResponseResource()
			r.ResourceType, r.ResourceName = rr.ResourceType, rr.ResourceName
			err := errDuplicateResource
			if count[resourceKey{rr.ResourceType, rr.ResourceName}] == 1 {
				err = s.alterResource(ctx, rr.ResourceType, rr.ResourceName, req.ValidateOnly, incrementalConfigs(rr.Configs))
			}
			if err != nil {
				r.ErrorCode, r.ErrorMessage = ErrorCode(err), errorMessage(err)
			}
			resp.Resources = append(resp.Resources, r)
		}
		return resp, nil
	}
}

// authorizeConfigs checks op (DESCRIBE_CONFIGS or ALTER_CONFIGS) on a
// config resource as Kafka does: a topic's on the topic
// (TOPIC_AUTHORIZATION_FAILED), a broker's on the cluster
// (CLUSTER_AUTHORIZATION_FAILED).
func (s *Server) authorizeConfigs(ctx context.Context, op acl.Operation, typ kmsg.ConfigResourceType, name string) error {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if !s.authorizeTopic(ctx, op, name) {
			return kerr.TopicAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeBroker:
		if !s.authorizeCluster(ctx, op) {
			return kerr.ClusterAuthorizationFailed
		}
	}
	return nil
}

func countResources(n int, key func(i int) resourceKey) map[resourceKey]int {
	count := make(map[resourceKey]int, n)
	for i := range n {
		count[key(i)]++
	}
	return count
}

// alterResource computes, validates and stores one resource's configs:
// a topic's overrides, or the cluster-wide defaults (a broker resource
// with an empty name). A specific broker id is refused: the node has no
// per-broker dynamic configs.
func (s *Server) alterResource(ctx context.Context, typ kmsg.ConfigResourceType, name string, validateOnly bool, compute computeConfigs) error {
	if err := s.authorizeConfigs(ctx, acl.OpAlterConfigs, typ, name); err != nil {
		return err
	}
	ctx, cancel := s.withRequestTimeout(ctx, 0)
	defer cancel()
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if err := ValidateTopicName(name); err != nil {
			return err
		}
		current, err := s.backend.TopicConfigs(name)
		if err != nil {
			return err
		}
		next, err := compute(current, false)
		if err != nil {
			return err
		}
		if err := topicconfig.ValidateAll(next); err != nil {
			return err
		}
		return s.backend.AlterTopicConfigs(ctx, name, next, validateOnly)
	case kmsg.ConfigResourceTypeBroker:
		if name != "" {
			if _, err := strconv.ParseInt(name, 10, 32); err != nil {
				return fmt.Errorf("%w: broker id must be an integer, but it is %q", kerr.InvalidRequest, name)
			}
			return errPerBrokerConfigs
		}
		next, err := compute(s.backend.ClusterConfigs(), true)
		if err != nil {
			return err
		}
		if err := topicconfig.ValidateBrokerAll(next); err != nil {
			return err
		}
		return s.backend.AlterClusterConfigs(ctx, next, validateOnly)
	}
	return fmt.Errorf("%w: unsupported resource type %d", kerr.InvalidRequest, typ)
}

// replaceConfigs is AlterConfigs' computation: the request's set, whole.
func replaceConfigs(configs []kmsg.AlterConfigsRequestResourceConfig) computeConfigs {
	return func(map[string]string, bool) (map[string]string, error) {
		next := make(map[string]string, len(configs))
		for _, c := range configs {
			if _, dup := next[c.Name]; dup {
				return nil, fmt.Errorf("%w: duplicate config key %s", kerr.InvalidRequest, c.Name)
			}
			if c.Value == nil {
				return nil, fmt.Errorf("%w: null value not supported for %s", kerr.InvalidRequest, c.Name)
			}
			next[c.Name] = *c.Value
		}
		return next, nil
	}
}

// incrementalConfigs applies IncrementalAlterConfigs' operations, in
// request order, to a copy of the current configs. Names the node does
// not know are dropped from the current set first (a topic created by an
// older build may hold them), so that they cannot block every change.
func incrementalConfigs(ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) computeConfigs {
	return func(current map[string]string, broker bool) (map[string]string, error) {
		known := topicconfig.Validate
		if broker {
			known = topicconfig.ValidateBroker
		}
		next := maps.Clone(current)
		maps.DeleteFunc(next, func(k, v string) bool { return topicconfig.IsUnknown(known(k, v)) })
		if next == nil {
			next = map[string]string{}
		}
		seen := make(map[string]bool, len(ops))
		for _, op := range ops {
			if seen[op.Name] {
				return nil, fmt.Errorf("%w: duplicate config key %s", kerr.InvalidRequest, op.Name)
			}
			seen[op.Name] = true
			if err := applyOp(next, op, broker); err != nil {
				return nil, err
			}
		}
		return next, nil
	}
}

// applyOp applies one operation to m.
func applyOp(m map[string]string, op kmsg.IncrementalAlterConfigsRequestResourceConfig, broker bool) error {
	value := ""
	if op.Value != nil {
		value = *op.Value
	}
	switch op.Op {
	case kmsg.IncrementalAlterConfigOpSet:
		if op.Value == nil {
			return fmt.Errorf("%w: null value not supported for %s", kerr.InvalidRequest, op.Name)
		}
		m[op.Name] = value
	case kmsg.IncrementalAlterConfigOpDelete:
		delete(m, op.Name)
	case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
		dflt, ok := listDefault(op.Name, broker)
		if !ok {
			return fmt.Errorf("%w: config value append or subtract is not allowed for config key %s, which is not a list",
				kerr.InvalidConfig, op.Name)
		}
		old, set := m[op.Name]
		if !set {
			old = dflt
		}
		m[op.Name] = alterList(old, value, op.Op == kmsg.IncrementalAlterConfigOpAppend)
	default:
		return fmt.Errorf("%w: unknown operation %d on %s", kerr.InvalidRequest, op.Op, op.Name)
	}
	return nil
}

// listDefault is a list config's default, which APPEND and SUBTRACT
// start from when the config is not set; ok is false for other configs.
func listDefault(name string, broker bool) (string, bool) {
	for _, spec := range topicconfig.Specs() {
		if spec.Type == kmsg.ConfigTypeList && (spec.Name == name && !broker || spec.Broker == name && broker && name != "") {
			return spec.Default, true
		}
	}
	return "", false
}

// alterList appends the items of change not yet in list, or removes them.
func alterList(list, change string, add bool) string {
	items := splitConfigList(list)
	for _, it := range splitConfigList(change) {
		has := slices.Contains(items, it)
		switch {
		case add && !has:
			items = append(items, it)
		case !add && has:
			items = slices.DeleteFunc(items, func(x string) bool { return x == it })
		}
	}
	return joinList(items)
}

func splitConfigList(v string) []string {
	var out []string
	for it := range strings.SplitSeq(v, ",") {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out
}

func joinList(items []string) string { return strings.Join(items, ",") }
