package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// describedOn asks one node for a topic config's value and source.
func describedOn(cl *kgo.Client, node int32, topic, name string) (string, kmsg.ConfigSource, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{name}
	req.Resources = append(req.Resources, r)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kr, err := cl.Broker(int(node)).Request(ctx, req)
	if err != nil {
		return "", 0, fmt.Errorf("node %d: describe %s %s: %w", node, topic, name, err)
	}
	resp := kr.(*kmsg.DescribeConfigsResponse)
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 || len(resp.Resources[0].Configs) != 1 {
		return "", 0, fmt.Errorf("node %d: describe %s %s: %+v", node, topic, name, resp.Resources)
	}
	c := resp.Resources[0].Configs[0]
	return *c.Value, c.Source, nil
}

// everyNodeSays waits until every node describes name as value from src.
// A failed DescribeConfigs counts as not yet: the client may not know a
// restarted node until its next metadata refresh.
func everyNodeSays(t *testing.T, cl *kgo.Client, topic, name, value string, src kmsg.ConfigSource) {
	t.Helper()
	for node := int32(1); node <= 3; node++ {
		deadline := time.Now().Add(10 * time.Second)
		for {
			v, s, err := describedOn(cl, node, topic, name)
			if err == nil && v == value && s == src {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d: %s=%s from %v not within 10s: last %q from %v, err %v", node, name, value, src, v, s, err)
			}
			time.Sleep(25 * time.Millisecond)
		}
	}
}

// Topic configs through kadm on three nodes: created with the topic,
// described with their sources, changed incrementally and whole, defaulted
// cluster-wide, and refused when invalid; every node sees each change,
// in DescribeConfigs and in Node.TopicConfig.
func TestTopicConfigsOnThreeNodes(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"retention.ms": kmsg.StringPtr("3600000")}, "cfg"); err != nil {
		t.Fatal(err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("cfg", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe: %v %v", err, rc.Err)
	}
	for _, cfg := range rc.Configs {
		if cfg.Key == "retention.ms" && (*cfg.Value != "3600000" || cfg.Source != kmsg.ConfigSourceDynamicTopicConfig) {
			t.Fatalf("retention.ms %+v", cfg)
		}
	}
	everyNodeSays(t, cl, "cfg", "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)

	// IncrementalAlterConfigs: SET and DELETE.
	alter(t, ctx, adm.AlterTopicConfigs, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "segment.ms", Value: kmsg.StringPtr("60000")},
		{Op: kadm.DeleteConfig, Name: "retention.ms"},
	}, "cfg")
	everyNodeSays(t, cl, "cfg", "segment.ms", "60000", kmsg.ConfigSourceDynamicTopicConfig)
	everyNodeSays(t, cl, "cfg", "retention.ms", "604800000", kmsg.ConfigSourceStaticBrokerConfig)
	for _, n := range c.Running() {
		if tc := n.TopicConfig("cfg"); tc.SegmentMs != 60000 || tc.RetentionMs != 604_800_000 {
			t.Fatalf("TopicConfig %+v", tc)
		}
	}

	// AlterConfigs replaces the whole set.
	alter(t, ctx, adm.AlterTopicConfigsState, []kadm.AlterConfig{{Name: "retention.bytes", Value: kmsg.StringPtr("1048576")}}, "cfg")
	everyNodeSays(t, cl, "cfg", "retention.bytes", "1048576", kmsg.ConfigSourceDynamicTopicConfig)
	everyNodeSays(t, cl, "cfg", "segment.ms", "604800000", kmsg.ConfigSourceDefaultConfig)

	// A cluster-wide default (broker resource "") reaches the topic.
	alter(t, ctx, adm.AlterBrokerConfigs, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: kmsg.StringPtr("7200000")}})
	everyNodeSays(t, cl, "cfg", "retention.ms", "7200000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	for _, n := range c.Running() {
		eventually(t, 5*time.Second, "TopicConfig sees the cluster default", func() bool { return n.TopicConfig("cfg").RetentionMs == 7200000 })
	}

	// Invalid values and names: INVALID_CONFIG, nothing stored.
	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.bytes", Value: kmsg.StringPtr("-9")}}, "cfg")
	if err != nil || len(resps) != 1 || !errors.Is(resps[0].Err, kerr.InvalidConfig) {
		t.Fatalf("retention.bytes=-9: %v %+v", err, resps)
	}
	_, err = adm.CreateTopic(ctx, 1, 1, map[string]*string{"no.such.config": kmsg.StringPtr("1")}, "bad")
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("create with an unknown config: %v", err)
	}
	everyNodeSays(t, cl, "cfg", "retention.bytes", "1048576", kmsg.ConfigSourceDynamicTopicConfig)
	if tds, _ := adm.ListTopics(ctx, "bad"); tds.Has("bad") {
		t.Fatal("topic bad was created")
	}
}

// alter runs one kadm alteration and fails on any error. A broker
// alteration (no names) goes to the cluster-wide defaults.
func alter[N any](t *testing.T, ctx context.Context, fn func(context.Context, []kadm.AlterConfig, ...N) (kadm.AlterConfigsResponses, error), configs []kadm.AlterConfig, names ...N) {
	t.Helper()
	resps, err := fn(ctx, configs, names...)
	if err == nil {
		for _, r := range resps {
			if r.Err != nil {
				err = errors.Join(err, r.Err, errors.New(r.ErrMessage))
			}
		}
	}
	if err != nil {
		t.Fatalf("alter %+v: %v", configs, err)
	}
}
