package kafkaapi

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/topicconfig"
)

// ConfigEntry is one setting of the node, as DescribeConfigs reports it.
type ConfigEntry struct {
	Name  string
	Value string
	Type  kmsg.ConfigType
	Doc   string // "" answers no documentation
}

// startDescribeConfigs answers when its turn comes, as Kafka's
// ConfigHelper.describeConfigs does, for topics and brokers; other
// resource types are INVALID_REQUEST.
func (s *Server) startDescribeConfigs(req *kmsg.DescribeConfigsRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
		var topics *topicLookup
		for i := range req.Resources {
			rr := &req.Resources[i]
			r := kmsg.NewDescribeConfigsResponseResource()
			r.ResourceType, r.ResourceName = rr.ResourceType, rr.ResourceName
			var (
				configs []describedConfig
				err     error
			)
			err = s.authorizeConfigs(ctx, acl.OpDescribeConfigs, rr.ResourceType, rr.ResourceName)
			switch {
			case err != nil:
			case rr.ResourceType == kmsg.ConfigResourceTypeTopic:
				if topics == nil {
					tl := s.topics(ctx)
					topics = &tl
				}
				configs, err = s.topicConfigs(topics.byName, rr.ResourceName)
			case rr.ResourceType == kmsg.ConfigResourceTypeBroker:
				configs, err = s.brokerConfigs(rr.ResourceName)
			default:
				err = fmt.Errorf("%w: unsupported resource type %d", kerr.InvalidRequest, rr.ResourceType)
			}
			if err != nil {
				r.ErrorCode, r.ErrorMessage = ErrorCode(err), errorMessage(err)
			}
			r.Configs = answerConfigs(configs, rr.ConfigNames, req.IncludeSynonyms, req.IncludeDocumentation)
			resp.Resources = append(resp.Resources, r)
		}
		return resp, nil
	}
}

// describedConfig is a config with its synonyms in Kafka's precedence
// order; the first one gives the value and source.
type describedConfig struct {
	name     string
	typ      kmsg.ConfigType
	doc      string
	readOnly bool
	synonyms []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	value    string // in the config's own unit (a synonym may be in hours)
}

func synonym(name, value string, source kmsg.ConfigSource) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	syn.Name, syn.Value, syn.Source = name, kmsg.StringPtr(value), source
	return syn
}

// topicConfigs describes an existing topic's configs, each with its
// sources in Kafka's precedence: the topic's override
// (DYNAMIC_TOPIC_CONFIG), the cluster-wide default
// (DYNAMIC_DEFAULT_BROKER_CONFIG), the node's static value
// (STATIC_BROKER_CONFIG), Kafka's default (DEFAULT_CONFIG).
func (s *Server) topicConfigs(byName topicByName, topic string) ([]describedConfig, error) {
	if err := ValidateTopicName(topic); err != nil {
		return nil, err
	}
	if byName(topic) == nil {
		return nil, kerr.UnknownTopicOrPartition
	}
	overrides, err := s.backend.TopicConfigs(topic)
	if err != nil {
		return nil, err
	}
	return describeTopic(overrides, s.backend.ClusterConfigs(), s.staticConfigs()), nil
}

// describeTopic describes every topic config from its three levels.
func describeTopic(overrides, cluster, static map[string]string) []describedConfig {
	specs := topicconfig.Specs()
	out := make([]describedConfig, 0, len(specs))
	for _, spec := range specs {
		value, syns, _ := topicconfig.Describe(spec.Name, overrides, cluster, static)
		dc := describedConfig{name: spec.Name, typ: spec.Type, doc: spec.Doc, value: value}
		for _, syn := range syns {
			dc.synonyms = append(dc.synonyms, synonym(syn.Name, syn.Value, syn.Source))
		}
		out = append(out, dc)
	}
	return out
}

// staticConfigs are the node's settings by name.
func (s *Server) staticConfigs() map[string]string {
	node := make(map[string]string)
	for _, c := range s.backend.Configs() {
		node[c.Name] = c.Value
	}
	return node
}

// brokerConfigs describes, for the empty name, the cluster-wide dynamic
// defaults that are set; for this node's id, its settings with the
// cluster-wide defaults over them (read-only unless a cluster default may
// be set for them), then its NodeStatus figures if it has any. Another
// broker's id is INVALID_REQUEST, as in Kafka, since each broker
// describes itself.
func (s *Server) brokerConfigs(name string) ([]describedConfig, error) {
	cluster := s.backend.ClusterConfigs()
	if name == "" {
		out := make([]describedConfig, 0, len(cluster))
		for _, k := range slices.Sorted(maps.Keys(cluster)) {
			out = append(out, dynamicDefault(k, cluster[k]))
		}
		return out, nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%w: broker id must be an integer, but it is %q", kerr.InvalidRequest, name)
	}
	configs := s.backend.Configs()
	if mine := brokerID(configs); id != mine {
		return nil, fmt.Errorf("%w: unexpected broker id, expected %d or an empty name, but received %d", kerr.InvalidRequest, mine, id)
	}
	if ns, ok := s.backend.(NodeStatus); ok {
		configs = slices.Concat(configs, ns.StatusConfigs())
	}
	out := make([]describedConfig, 0, len(configs)+len(cluster))
	listed := make(map[string]bool, len(configs))
	for _, c := range configs {
		static := synonym(c.Name, c.Value, kmsg.ConfigSourceStaticBrokerConfig)
		_, dynamic := topicconfig.BrokerConfigType(c.Name)
		dc := describedConfig{name: c.Name, typ: c.Type, doc: c.Doc, readOnly: !dynamic, value: c.Value,
			synonyms: []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{static}}
		if v, ok := cluster[c.Name]; ok {
			dc.value = v
			dc.synonyms = append([]kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{
				synonym(c.Name, v, kmsg.ConfigSourceDynamicDefaultBrokerConfig)}, static)
		}
		out = append(out, dc)
		listed[c.Name] = true
	}
	for _, k := range slices.Sorted(maps.Keys(cluster)) {
		if !listed[k] {
			out = append(out, dynamicDefault(k, cluster[k]))
		}
	}
	return out, nil
}

// dynamicDefault describes one cluster-wide dynamic default.
func dynamicDefault(name, value string) describedConfig {
	typ, _ := topicconfig.BrokerConfigType(name)
	return describedConfig{name: name, typ: typ, value: value,
		synonyms: []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{
			synonym(name, value, kmsg.ConfigSourceDynamicDefaultBrokerConfig)}}
}

// brokerID is the node's broker.id config, or -1.
func brokerID(configs []ConfigEntry) int64 {
	for _, c := range configs {
		if c.Name == "broker.id" {
			if id, err := strconv.ParseInt(c.Value, 10, 32); err == nil {
				return id
			}
		}
	}
	return -1
}

// answerConfigs turns described configs into the response's, keeping only
// the names asked for (all when names is nil), in the configs' order.
func answerConfigs(configs []describedConfig, names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var want map[string]bool
	if names != nil {
		want = make(map[string]bool, len(names))
		for _, n := range names {
			want[n] = true
		}
	}
	out := []kmsg.DescribeConfigsResponseResourceConfig{}
	for _, dc := range configs {
		if want != nil && !want[dc.name] {
			continue
		}
		rc := kmsg.NewDescribeConfigsResponseResourceConfig()
		rc.Name, rc.ConfigType, rc.ReadOnly = dc.name, dc.typ, dc.readOnly
		rc.Value, rc.Source = kmsg.StringPtr(dc.value), kmsg.ConfigSourceDefaultConfig
		if len(dc.synonyms) > 0 {
			rc.Source = dc.synonyms[0].Source
		}
		rc.IsDefault = rc.Source == kmsg.ConfigSourceDefaultConfig // v0
		if synonyms {
			rc.ConfigSynonyms = dc.synonyms
		}
		if docs && dc.doc != "" {
			rc.Documentation = kmsg.StringPtr(dc.doc)
		}
		out = append(out, rc)
	}
	return out
}
