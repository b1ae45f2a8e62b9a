package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConfigSource is where a config's value comes from, in Kafka's
// precedence (kmsg.ConfigSource values).
type ConfigSource = kmsg.ConfigSource

// Config sources a topic config may have.
const (
	SourceTopic          = kmsg.ConfigSourceDynamicTopicConfig         // the topic's own override
	SourceClusterDefault = kmsg.ConfigSourceDynamicDefaultBrokerConfig // a cluster-wide dynamic default
	SourceStaticBroker   = kmsg.ConfigSourceStaticBrokerConfig         // the broker's config file
	SourceDefault        = kmsg.ConfigSourceDefaultConfig              // Kafka's default
)

// TopicConfig is one config of a topic as the broker resolves it.
type TopicConfig struct {
	Name     string
	Value    string
	Source   ConfigSource
	ReadOnly bool
}

// DescribeTopicConfigs returns every config of a topic, sorted by name,
// with its value and source. A topic that does not exist gives
// ErrUnknownTopicOrPartition.
func (a *Admin) DescribeTopicConfigs(ctx context.Context, topic string) ([]TopicConfig, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	req.Resources = append(req.Resources, r)
	var out []TopicConfig
	err := a.askAny(ctx, req, func(resp kmsg.Response) error {
		rs := resp.(*kmsg.DescribeConfigsResponse).Resources
		if len(rs) != 1 {
			return fmt.Errorf("client: DescribeConfigs answered %d resources", len(rs))
		}
		if err := kafkaErr(rs[0].ErrorCode, rs[0].ErrorMessage); err != nil {
			return err
		}
		out = out[:0]
		for _, c := range rs[0].Configs {
			tc := TopicConfig{Name: c.Name, Source: c.Source, ReadOnly: c.ReadOnly}
			if c.Value != nil {
				tc.Value = *c.Value
			}
			out = append(out, tc)
		}
		return nil
	})
	slices.SortFunc(out, func(x, y TopicConfig) int { return strings.Compare(x.Name, y.Name) })
	return out, err
}

// DescribeBrokerConfigs returns the configs broker node reports of itself
// (Kafka's DescribeConfigs of a broker resource, which each broker answers
// for itself), by name.
func (a *Admin) DescribeBrokerConfigs(ctx context.Context, node int32) (map[string]string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(node))
	req.Resources = append(req.Resources, r)
	rctx, cancel := context.WithTimeout(ctx, a.cfg.requestTimeout)
	defer cancel()
	resp, err := a.cl.request(rctx, node, req, 0)
	if errors.Is(err, errUnknownBroker) { // learn the brokers' addresses
		if err = a.cl.waitRefresh(rctx); err == nil {
			resp, err = a.cl.request(rctx, node, req, 0)
		}
	}
	if err != nil {
		return nil, err
	}
	rs := resp.(*kmsg.DescribeConfigsResponse).Resources
	if len(rs) != 1 {
		return nil, fmt.Errorf("client: DescribeConfigs answered %d resources", len(rs))
	}
	if err := kafkaErr(rs[0].ErrorCode, rs[0].ErrorMessage); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rs[0].Configs))
	for _, c := range rs[0].Configs {
		if c.Value != nil {
			out[c.Name] = *c.Value
		}
	}
	return out, nil
}

// AlterTopicConfigs changes a topic's configs incrementally (Kafka's
// IncrementalAlterConfigs): set gives new values, del removes overrides
// (the topic then follows the cluster's default). Other configs keep
// their values. An unknown name or a bad value gives
// ErrInvalidTopicConfig, with the broker's reason in the message, and
// changes nothing; a name in both set and del gives ErrInvalidRequest.
func (a *Admin) AlterTopicConfigs(ctx context.Context, topic string, set map[string]string, del []string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	for _, k := range slices.Sorted(maps.Keys(set)) {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Op, c.Name, c.Value = kmsg.IncrementalAlterConfigOpSet, k, kmsg.StringPtr(set[k])
		r.Configs = append(r.Configs, c)
	}
	for _, k := range del {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Op, c.Name = kmsg.IncrementalAlterConfigOpDelete, k
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	return a.askAny(ctx, req, func(resp kmsg.Response) error {
		rs := resp.(*kmsg.IncrementalAlterConfigsResponse).Resources
		if len(rs) != 1 {
			return fmt.Errorf("client: IncrementalAlterConfigs answered %d resources", len(rs))
		}
		return kafkaErr(rs[0].ErrorCode, rs[0].ErrorMessage)
	})
}
