package kafkaapi

import (
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type op struct {
	op    kmsg.IncrementalAlterConfigOp
	name  string
	value *string
}

func incResource(typ kmsg.ConfigResourceType, name string, ops ...op) kmsg.IncrementalAlterConfigsRequestResource {
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	for _, o := range ops {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Op, c.Name, c.Value = o.op, o.name, o.value
		r.Configs = append(r.Configs, c)
	}
	return r
}

func set(name, value string) op {
	return op{kmsg.IncrementalAlterConfigOpSet, name, kmsg.StringPtr(value)}
}
func del(name string) op { return op{kmsg.IncrementalAlterConfigOpDelete, name, nil} }
func appendOp(name, value string) op {
	return op{kmsg.IncrementalAlterConfigOpAppend, name, kmsg.StringPtr(value)}
}

func incAlter(t *testing.T, c *client, version int16, validateOnly bool, rs ...kmsg.IncrementalAlterConfigsRequestResource) []int16 {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version, req.ValidateOnly, req.Resources = version, validateOnly, rs
	resp := c.roundTrip(req).(*kmsg.IncrementalAlterConfigsResponse)
	var codes []int16
	for i, r := range resp.Resources {
		if r.ResourceName != rs[i].ResourceName || r.ResourceType != rs[i].ResourceType {
			t.Fatalf("resource %d answered as %v %q", i, r.ResourceType, r.ResourceName)
		}
		if r.ErrorCode != 0 && r.ErrorMessage == nil {
			t.Errorf("resource %d: error %d without a message", i, r.ErrorCode)
		}
		codes = append(codes, r.ErrorCode)
	}
	return codes
}

func (b *fakeBackend) topicConfigs(name string) map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.topics[name].configs)
}

func wantCodes(t *testing.T, got []int16, want ...*kerr.Error) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("codes %v, want %d answers", got, len(want))
	}
	for i, w := range want {
		code := int16(0)
		if w != nil {
			code = w.Code
		}
		if got[i] != code {
			t.Errorf("resource %d: code %d, want %v", i, got[i], w)
		}
	}
}

func TestIncrementalAlterConfigs(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("t", 1)
	c := h.dial()
	topic := kmsg.ConfigResourceTypeTopic
	for v := int16(0); v <= 1; v++ {
		wantCodes(t, incAlter(t, c, v, false, incResource(topic, "t", set("retention.ms", "1000"), set("segment.ms", "60000"))), nil)
	}
	if got := h.fb.topicConfigs("t"); !maps.Equal(got, map[string]string{"retention.ms": "1000", "segment.ms": "60000"}) {
		t.Fatalf("after SET: %v", got)
	}
	wantCodes(t, incAlter(t, c, 1, false, incResource(topic, "t", del("segment.ms"), appendOp("cleanup.policy", "compact"))), nil)
	if got := h.fb.topicConfigs("t"); !maps.Equal(got, map[string]string{"retention.ms": "1000", "cleanup.policy": "delete,compact"}) {
		t.Fatalf("after DELETE and APPEND: %v", got)
	}
	wantCodes(t, incAlter(t, c, 1, false, incResource(topic, "t",
		op{kmsg.IncrementalAlterConfigOpSubtract, "cleanup.policy", kmsg.StringPtr("delete")})), nil)
	if got := h.fb.topicConfigs("t")["cleanup.policy"]; got != "compact" {
		t.Fatalf("after SUBTRACT: %q", got)
	}

	before := h.fb.topicConfigs("t")
	wantCodes(t, incAlter(t, c, 1, false,
		incResource(topic, "t", set("retention.ms", "-5")),
		incResource(topic, "t2", set("no.such.config", "1")),
		incResource(topic, "missing", set("retention.ms", "1")),
		incResource(kmsg.ConfigResourceTypeBroker, "1", set("log.retention.ms", "1")),
		incResource(kmsg.ConfigResourceTypeBroker, "x", set("log.retention.ms", "1")),
		incResource(kmsg.ConfigResourceTypeGroupConfig, "g", set("a", "1")),
	), kerr.InvalidConfig, kerr.UnknownTopicOrPartition, kerr.UnknownTopicOrPartition, kerr.InvalidRequest, kerr.InvalidRequest, kerr.InvalidRequest)
	h.fb.addTopic("t2", 1)
	wantCodes(t, incAlter(t, c, 1, false,
		incResource(topic, "t2", set("no.such.config", "1")),
		incResource(topic, "t", appendOp("retention.ms", "1")),
		incResource(topic, "t", set("retention.ms", "1")),
	), kerr.InvalidConfig, kerr.InvalidRequest, kerr.InvalidRequest) // duplicate resource
	wantCodes(t, incAlter(t, c, 1, false, incResource(topic, "t2", set("retention.ms", "1"), del("retention.ms"))), kerr.InvalidRequest)
	wantCodes(t, incAlter(t, c, 1, false, incResource(topic, "t2", op{kmsg.IncrementalAlterConfigOpSet, "retention.ms", nil})), kerr.InvalidRequest)
	wantCodes(t, incAlter(t, c, 1, true, incResource(topic, "t", set("retention.ms", "77"))), nil)
	if got := h.fb.topicConfigs("t"); !maps.Equal(got, before) {
		t.Fatalf("failed or validate-only requests changed configs: %v, was %v", got, before)
	}
}

func TestAlterConfigsReplaces(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("t", 1)
	c := h.dial()
	wantCodes(t, incAlter(t, c, 1, false, incResource(kmsg.ConfigResourceTypeTopic, "t", set("retention.ms", "1000"))), nil)
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.Version = v
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		cfg := kmsg.NewAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = "segment.bytes", kmsg.StringPtr("1048576")
		r.Configs = append(r.Configs, cfg)
		bad := r
		bad.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "segment.bytes", Value: kmsg.StringPtr("10")}}
		bad.ResourceName = "t"
		req.Resources = []kmsg.AlterConfigsRequestResource{r}
		resp := c.roundTrip(req).(*kmsg.AlterConfigsResponse)
		if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("v%d: %+v", v, resp.Resources)
		}
		if got := h.fb.topicConfigs("t"); !maps.Equal(got, map[string]string{"segment.bytes": "1048576"}) {
			t.Fatalf("v%d: AlterConfigs did not replace: %v", v, got)
		}
		req.Resources = []kmsg.AlterConfigsRequestResource{bad}
		resp = c.roundTrip(req).(*kmsg.AlterConfigsResponse)
		if resp.Resources[0].ErrorCode != kerr.InvalidConfig.Code {
			t.Fatalf("v%d: segment.bytes=10: %+v", v, resp.Resources[0])
		}
	}
}

// A cluster-wide default (broker resource "") shows in topics' configs
// as DYNAMIC_DEFAULT_BROKER_CONFIG, under a topic override.
func TestClusterDefaultsDescribed(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("t", 1)
	c := h.dial()
	wantCodes(t, incAlter(t, c, 1, false,
		incResource(kmsg.ConfigResourceTypeBroker, "", set("log.retention.hours", "2"), set("log.segment.bytes", "2097152")),
		incResource(kmsg.ConfigResourceTypeTopic, "t", set("segment.bytes", "4194304")),
	), nil, nil)
	wantCodes(t, incAlter(t, c, 1, false, incResource(kmsg.ConfigResourceTypeBroker, "", set("retention.ms", "1"))), kerr.InvalidConfig)

	resp := c.roundTrip(describeConfigsRequest(4, true, false,
		configResource(kmsg.ConfigResourceTypeTopic, "t"),
		configResource(kmsg.ConfigResourceTypeBroker, ""),
		configResource(kmsg.ConfigResourceTypeBroker, "1"),
	)).(*kmsg.DescribeConfigsResponse)
	ret := findConfig(t, resp.Resources[0], "retention.ms")
	if *ret.Value != "7200000" || ret.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || ret.ReadOnly ||
		ret.ConfigSynonyms[0].Name != "log.retention.hours" {
		t.Fatalf("retention.ms %+v", ret)
	}
	seg := findConfig(t, resp.Resources[0], "segment.bytes")
	want := []kmsg.ConfigSource{kmsg.ConfigSourceDynamicTopicConfig, kmsg.ConfigSourceDynamicDefaultBrokerConfig,
		kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigSourceDefaultConfig}
	if *seg.Value != "4194304" || len(seg.ConfigSynonyms) != len(want) {
		t.Fatalf("segment.bytes %+v", seg)
	}
	for i, w := range want {
		if seg.ConfigSynonyms[i].Source != w {
			t.Errorf("segment.bytes synonym %d: %+v, want source %v", i, seg.ConfigSynonyms[i], w)
		}
	}
	dflt := resp.Resources[1]
	if len(dflt.Configs) != 2 || dflt.Configs[0].Name != "log.retention.hours" ||
		dflt.Configs[0].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || dflt.Configs[0].ReadOnly {
		t.Fatalf("cluster defaults %+v", dflt.Configs)
	}
	self := resp.Resources[2]
	ls := findConfig(t, self, "log.segment.bytes")
	if *ls.Value != "2097152" || ls.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || ls.ReadOnly || len(ls.ConfigSynonyms) != 2 {
		t.Fatalf("own broker's log.segment.bytes %+v", ls)
	}
	if findConfig(t, self, "log.retention.hours").Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatal("own broker does not list a dynamic default it has no static value for")
	}
}

func TestCreateTopicsConfigs(t *testing.T) {
	h := startServer(t, Config{})
	c := h.dial()
	req := createTopicsRequest(7, false, topicAsk{"good", 1, 1}, topicAsk{"bad", 1, 1}, topicAsk{"unknown", 1, 1}, topicAsk{"null", 1, 1})
	addConfig := func(i int, name string, value *string) {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = name, value
		req.Topics[i].Configs = append(req.Topics[i].Configs, cfg)
	}
	addConfig(0, "retention.ms", kmsg.StringPtr("1000"))
	addConfig(1, "retention.ms", kmsg.StringPtr("soon"))
	addConfig(2, "retentions.ms", kmsg.StringPtr("1"))
	addConfig(3, "retention.ms", nil)
	resp := c.roundTrip(req).(*kmsg.CreateTopicsResponse)
	for i, want := range []*kerr.Error{nil, kerr.InvalidConfig, kerr.InvalidConfig, kerr.InvalidConfig} {
		st := resp.Topics[i]
		if want == nil && st.ErrorCode != 0 || want != nil && st.ErrorCode != want.Code {
			t.Errorf("%s: code %d message %v, want %v", st.Topic, st.ErrorCode, st.ErrorMessage, want)
		}
	}
	if got := h.fb.topicConfigs("good"); got["retention.ms"] != "1000" || h.fb.hasTopic("bad") {
		t.Fatalf("stored %v; bad created %v", got, h.fb.hasTopic("bad"))
	}
	var ret *kmsg.CreateTopicsResponseTopicConfig
	for i, cfg := range resp.Topics[0].Configs {
		if cfg.Name == "retention.ms" {
			ret = &resp.Topics[0].Configs[i]
		}
	}
	if ret == nil || *ret.Value != "1000" || ret.Source != int8(kmsg.ConfigSourceDynamicTopicConfig) {
		t.Fatalf("v7 answer's retention.ms: %+v", ret)
	}
}
