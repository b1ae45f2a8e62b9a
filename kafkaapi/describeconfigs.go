package kafkaapi

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
		var view *ClusterView
		for i := range req.Resources {
			rr := &req.Resources[i]
			r := kmsg.NewDescribeConfigsResponseResource()
			r.ResourceType, r.ResourceName = rr.ResourceType, rr.ResourceName
			var (
				configs []describedConfig
				err     error
			)
			switch rr.ResourceType {
			case kmsg.ConfigResourceTypeTopic:
				if view == nil {
					v := s.backend.Cluster(ctx)
					view = &v
				}
				configs, err = s.topicConfigs(view, rr.ResourceName)
			case kmsg.ConfigResourceTypeBroker:
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

// topicConfigs describes an existing topic's configs: each is the node's
// value of its broker synonym (STATIC_BROKER_CONFIG) or else Kafka's
// default (DEFAULT_CONFIG).
func (s *Server) topicConfigs(view *ClusterView, topic string) ([]describedConfig, error) {
	if err := ValidateTopicName(topic); err != nil {
		return nil, err
	}
	if _, ok := indexTopics(view.Topics)[topic]; !ok {
		return nil, kerr.UnknownTopicOrPartition
	}
	node := make(map[string]string)
	for _, c := range s.backend.Configs() {
		node[c.Name] = c.Value
	}
	specs := topicconfig.Specs()
	out := make([]describedConfig, 0, len(specs))
	for _, spec := range specs {
		value, syns, _ := topicconfig.Describe(spec.Name, nil, nil, node)
		dc := describedConfig{name: spec.Name, typ: spec.Type, doc: spec.Doc, value: value}
		for _, syn := range syns {
			dc.synonyms = append(dc.synonyms, synonym(syn.Name, syn.Value, syn.Source))
		}
		out = append(out, dc)
	}
	return out, nil
}

// brokerConfigs describes this node's configs (read-only, set when it
// started) for its own broker id, and the cluster-wide dynamic defaults
// (none) for the empty name; another broker's id is INVALID_REQUEST, as
// in Kafka, since each broker describes itself.
func (s *Server) brokerConfigs(name string) ([]describedConfig, error) {
	if name == "" {
		return nil, nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%w: broker id must be an integer, but it is %q", kerr.InvalidRequest, name)
	}
	configs := s.backend.Configs()
	if mine := brokerID(configs); id != mine {
		return nil, fmt.Errorf("%w: unexpected broker id, expected %d or an empty name, but received %d", kerr.InvalidRequest, mine, id)
	}
	out := make([]describedConfig, 0, len(configs))
	for _, c := range configs {
		out = append(out, describedConfig{
			name: c.Name, typ: c.Type, doc: c.Doc, readOnly: true, value: c.Value,
			synonyms: []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{
				synonym(c.Name, c.Value, kmsg.ConfigSourceStaticBrokerConfig)},
		})
	}
	return out, nil
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
