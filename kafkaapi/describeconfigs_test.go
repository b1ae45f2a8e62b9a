package kafkaapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/topicconfig"
)

func describeConfigsRequest(version int16, synonyms, docs bool, resources ...kmsg.DescribeConfigsRequestResource) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = version
	req.IncludeSynonyms, req.IncludeDocumentation = synonyms, docs
	req.Resources = resources
	return req
}

func configResource(typ kmsg.ConfigResourceType, name string, names ...string) kmsg.DescribeConfigsRequestResource {
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, names
	return r
}

func findConfig(t *testing.T, r kmsg.DescribeConfigsResponseResource, name string) kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	for _, c := range r.Configs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("%s %q: no config %s among %d", r.ResourceType, r.ResourceName, name, len(r.Configs))
	return kmsg.DescribeConfigsResponseResourceConfig{}
}

// A topic answers every Kafka topic config: the node's value where it sets
// the broker synonym (segment.bytes from log.segment.bytes), Kafka's
// default elsewhere, with sources, types, synonyms and documentation when
// asked, in every version.
func TestDescribeTopicConfigs(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("t", 1)
	c := h.dial()
	for v := int16(0); v <= 4; v++ {
		resp := c.roundTrip(describeConfigsRequest(v, true, true, configResource(kmsg.ConfigResourceTypeTopic, "t"))).(*kmsg.DescribeConfigsResponse)
		r := resp.Resources[0]
		if r.ErrorCode != 0 || r.ResourceName != "t" || r.ResourceType != kmsg.ConfigResourceTypeTopic || len(r.Configs) != len(topicconfig.Specs()) {
			t.Fatalf("v%d: error %d, %s %q, %d configs", v, r.ErrorCode, r.ResourceType, r.ResourceName, len(r.Configs))
		}
		seg := findConfig(t, r, "segment.bytes")
		ret := findConfig(t, r, "cleanup.policy")
		if *seg.Value != "1048576" || *ret.Value != "delete" || seg.ReadOnly || seg.IsSensitive {
			t.Fatalf("v%d: segment.bytes %+v, cleanup.policy %+v", v, seg, ret)
		}
		switch {
		case v == 0:
			if seg.IsDefault || !ret.IsDefault {
				t.Fatalf("v0: is-default segment.bytes %v cleanup.policy %v", seg.IsDefault, ret.IsDefault)
			}
		case seg.Source != kmsg.ConfigSourceStaticBrokerConfig || ret.Source != kmsg.ConfigSourceDefaultConfig:
			t.Fatalf("v%d: sources %v %v", v, seg.Source, ret.Source)
		case len(seg.ConfigSynonyms) != 2 || seg.ConfigSynonyms[0].Name != "log.segment.bytes" ||
			seg.ConfigSynonyms[1].Source != kmsg.ConfigSourceDefaultConfig || *seg.ConfigSynonyms[1].Value != "1073741824":
			t.Fatalf("v%d: segment.bytes synonyms %+v", v, seg.ConfigSynonyms)
		}
		if v >= 3 && (seg.ConfigType != kmsg.ConfigTypeInt || seg.Documentation == nil) {
			t.Fatalf("v%d: type %v documentation %v", v, seg.ConfigType, seg.Documentation)
		}
	}
	// Without synonyms or documentation asked for, none; a name filter
	// keeps those names only; unknown names are left out.
	resp := c.roundTrip(describeConfigsRequest(4, false, false,
		configResource(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "no.such.config"))).(*kmsg.DescribeConfigsResponse)
	r := resp.Resources[0]
	if len(r.Configs) != 1 || r.Configs[0].Name != "retention.ms" || r.Configs[0].ConfigSynonyms != nil || r.Configs[0].Documentation != nil {
		t.Fatalf("filtered: %+v", r.Configs)
	}
}

func TestDescribeBrokerConfigs(t *testing.T) {
	h := startServer(t, Config{})
	c := h.dial()
	resp := c.roundTrip(describeConfigsRequest(4, true, false,
		configResource(kmsg.ConfigResourceTypeBroker, "1"),
		configResource(kmsg.ConfigResourceTypeBroker, ""),
		configResource(kmsg.ConfigResourceTypeBroker, "2"),
		configResource(kmsg.ConfigResourceTypeBroker, "one"),
	)).(*kmsg.DescribeConfigsResponse)
	self := resp.Resources[0]
	if self.ErrorCode != 0 || len(self.Configs) != 3 {
		t.Fatalf("own broker: %+v", self)
	}
	id := findConfig(t, self, "broker.id")
	if *id.Value != "1" || !id.ReadOnly || id.Source != kmsg.ConfigSourceStaticBrokerConfig || len(id.ConfigSynonyms) != 1 {
		t.Fatalf("broker.id %+v", id)
	}
	if dflt := resp.Resources[1]; dflt.ErrorCode != 0 || len(dflt.Configs) != 0 {
		t.Fatalf("cluster default: %+v, want no dynamic configs", dflt)
	}
	for _, r := range resp.Resources[2:] {
		if r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || len(r.Configs) != 0 {
			t.Fatalf("broker %q: %+v, want INVALID_REQUEST", r.ResourceName, r)
		}
	}
}

// statusBackend has figures of its state to report (NodeStatus).
type statusBackend struct {
	*fakeBackend
	ratios string // guarded by fakeBackend.mu
}

func (b *statusBackend) StatusConfigs() []ConfigEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	return []ConfigEntry{{Name: "minikafka.log.cleaner.dirty.ratios", Value: b.ratios, Type: kmsg.ConfigTypeList}}
}

// A backend's NodeStatus figures follow its configs in DescribeConfigs of
// the broker, read-only and read at each request; a topic's configs leave
// them out.
func TestDescribeBrokerStatus(t *testing.T) {
	sb := &statusBackend{ratios: "kv:0=0.250"}
	h := startServerWith(t, Config{}, func(fb *fakeBackend) Backend { sb.fakeBackend = fb; return sb })
	h.fb.addTopic("kv", 1)
	c := h.dial()
	describe := func() kmsg.DescribeConfigsResponseResource {
		return c.roundTrip(describeConfigsRequest(4, false, false,
			configResource(kmsg.ConfigResourceTypeBroker, "1"))).(*kmsg.DescribeConfigsResponse).Resources[0]
	}
	self := describe()
	if got := findConfig(t, self, "minikafka.log.cleaner.dirty.ratios"); *got.Value != "kv:0=0.250" || !got.ReadOnly ||
		self.Configs[len(self.Configs)-1].Name != got.Name {
		t.Fatalf("status figure %+v, want kv:0=0.250, read-only, last of %d", got, len(self.Configs))
	}
	sb.mu.Lock()
	sb.ratios = "kv:0=0.000"
	sb.mu.Unlock()
	if got := findConfig(t, describe(), "minikafka.log.cleaner.dirty.ratios"); *got.Value != "kv:0=0.000" {
		t.Fatalf("status figure %q after it changed, want kv:0=0.000", *got.Value)
	}
	topic := c.roundTrip(describeConfigsRequest(4, false, false,
		configResource(kmsg.ConfigResourceTypeTopic, "kv"))).(*kmsg.DescribeConfigsResponse).Resources[0]
	for _, cfg := range topic.Configs {
		if cfg.Name == "minikafka.log.cleaner.dirty.ratios" {
			t.Fatal("a topic's configs list the node's status figure")
		}
	}
}

func TestDescribeConfigsErrors(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("t", 1)
	resp := h.dial().roundTrip(describeConfigsRequest(4, false, false,
		configResource(kmsg.ConfigResourceTypeTopic, "missing"),
		configResource(kmsg.ConfigResourceTypeTopic, "bad/name"),
		configResource(kmsg.ConfigResourceTypeBrokerLogger, "1"),
		configResource(kmsg.ConfigResourceTypeTopic, "t"),
	)).(*kmsg.DescribeConfigsResponse)
	for i, want := range []*kerr.Error{kerr.UnknownTopicOrPartition, kerr.InvalidTopicException, kerr.InvalidRequest, nil} {
		r := resp.Resources[i]
		code := int16(0)
		if want != nil {
			code = want.Code
		}
		if r.ErrorCode != code || (want != nil && len(r.Configs) != 0) || (want == nil && len(r.Configs) == 0) {
			t.Errorf("resource %d (%q): error %d with %d configs, want %d", i, r.ResourceName, r.ErrorCode, len(r.Configs), code)
		}
	}
}
