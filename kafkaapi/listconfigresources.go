package kafkaapi

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// configResourceTypes are the config resource types ListConfigResources
// lists at a version, in the order it lists them. v0 (Kafka's
// ListClientMetricsResources) knows client metrics only. From v1 Kafka
// also lists broker loggers, whose configs DescribeConfigs does not serve
// here: a node has no loggers to name, so BROKER_LOGGER is a type this
// broker does not support.
func configResourceTypes(version int16) []kmsg.ConfigResourceType {
	if version == 0 {
		return []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeClientMetrics}
	}
	return []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker,
		kmsg.ConfigResourceTypeGroupConfig, kmsg.ConfigResourceTypeClientMetrics}
}

// startListConfigResources answers ListConfigResources (KIP-1142) as
// Kafka's KafkaApis.handleListConfigResources does: DESCRIBE_CONFIGS on
// the cluster, else CLUSTER_AUTHORIZATION_FAILED; no types asks for every
// supported one, and a type not supported answers UNSUPPORTED_VERSION and
// nothing else. Topics are every topic, brokers every registered broker
// with an endpoint on the connection's listener (fenced ones too, as
// Kafka's getBrokerNodes has them), each sorted. Groups are those with
// config overrides and client metrics those with a subscription, of which
// this broker has none: it stores no group configs (IncrementalAlterConfigs
// takes topics and brokers only) and collects no client metrics (KIP-714).
func (s *Server) startListConfigResources(req *kmsg.ListConfigResourcesRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
		if !s.authorizeCluster(ctx, acl.OpDescribeConfigs) {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp, nil
		}
		supported := configResourceTypes(req.Version)
		want := supported
		if len(req.ResourceTypes) > 0 {
			want = nil
			for _, t := range req.ResourceTypes {
				if !slices.Contains(supported, kmsg.ConfigResourceType(t)) {
					resp.ErrorCode = kerr.UnsupportedVersion.Code
					return resp, nil
				}
				want = append(want, kmsg.ConfigResourceType(t))
			}
		}
		for _, t := range supported {
			if slices.Contains(want, t) {
				resp.ConfigResources = s.appendConfigResources(ctx, resp.ConfigResources, t)
			}
		}
		return resp, nil
	}
}

// appendConfigResources adds the resources of type t, reading the
// topics' names or the brokers alone.
func (s *Server) appendConfigResources(ctx context.Context, out []kmsg.ListConfigResourcesResponseConfigResource, t kmsg.ConfigResourceType) []kmsg.ListConfigResourcesResponseConfigResource {
	var names []string
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		names = s.topicNames()
	case kmsg.ConfigResourceTypeBroker:
		view := onConnListener(ctx, s.clusterBrokers())
		var ids []int32
		for _, b := range view.Brokers {
			ids = append(ids, b.NodeID)
		}
		for _, d := range view.Down {
			if d.Registered.Host != "" || d.Registered.Port != 0 {
				ids = append(ids, d.NodeID)
			}
		}
		slices.Sort(ids)
		for _, id := range slices.Compact(ids) {
			names = append(names, strconv.Itoa(int(id)))
		}
	}
	for _, name := range names {
		r := kmsg.NewListConfigResourcesResponseConfigResource()
		r.Name, r.Type = name, int8(t)
		out = append(out, r)
	}
	return out
}
