package kafkaapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func metadataRequest(version int16, allowCreate bool, topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = version
	req.AllowAutoTopicCreation = allowCreate
	if topics == nil {
		return req // null: all topics
	}
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func metadata(t *testing.T, c *client, req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	t.Helper()
	return c.roundTrip(req).(*kmsg.MetadataResponse)
}

func TestMetadataAllTopics(t *testing.T) {
	// v0 has no null list: an empty one asks for every topic.
	for _, version := range []int16{0, 1, 4, 7, 9, 12, 13} {
		h := startServer(t, Config{})
		h.fb.addTopic("b", 1)
		ps := h.fb.addTopic("a", 2)
		ps[1].set(func(p *fakePartition) { p.leader = false; p.epoch = 9 })
		resp := metadata(t, h.dial(), metadataRequest(version, false))

		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 || resp.Brokers[0].Host != "127.0.0.1" ||
			resp.Brokers[0].Port != h.fb.broker.Port || (version >= 1 && resp.ControllerID != 1) {
			t.Fatalf("v%d: brokers %+v controller %d", version, resp.Brokers, resp.ControllerID)
		}
		if version >= 2 && (resp.ClusterID == nil || *resp.ClusterID != "fake-cluster") {
			t.Fatalf("v%d: cluster id %v", version, resp.ClusterID)
		}
		if len(resp.Topics) != 2 || *resp.Topics[0].Topic != "a" || *resp.Topics[1].Topic != "b" {
			t.Fatalf("v%d: topics %+v, want a then b", version, resp.Topics)
		}
		a := resp.Topics[0]
		if a.ErrorCode != 0 || len(a.Partitions) != 2 {
			t.Fatalf("v%d: topic a %+v", version, a)
		}
		p0, p1 := a.Partitions[0], a.Partitions[1]
		if p0.ErrorCode != 0 || p0.Leader != 1 || len(p0.Replicas) != 1 || len(p0.ISR) != 1 {
			t.Fatalf("v%d: partition 0 %+v", version, p0)
		}
		if p1.ErrorCode != kerr.LeaderNotAvailable.Code || p1.Leader != -1 {
			t.Fatalf("v%d: leaderless partition %+v, want LEADER_NOT_AVAILABLE", version, p1)
		}
		if version >= 7 && (p0.LeaderEpoch != 5 || p1.LeaderEpoch != 9) {
			t.Fatalf("v%d: leader epochs %d %d", version, p0.LeaderEpoch, p1.LeaderEpoch)
		}
		if version >= 10 && a.TopicID == ([16]byte{}) {
			t.Fatalf("v%d: no topic id", version)
		}
		// v13's top-level error (KIP-1102) is for a broker that wants the
		// client to rebootstrap, which a Kafka 4.x broker never asks.
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: top-level error %d", version, resp.ErrorCode)
		}
	}
}

func TestMetadataNamedTopics(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("known", 1)
	h.fb.addTopic("other", 1)
	c := h.dial()
	resp := metadata(t, c, metadataRequest(13, false, "missing", "known", "bad/name", "known"))
	if len(resp.Topics) != 3 {
		t.Fatalf("%d topics, want 3 (each name once, in request order)", len(resp.Topics))
	}
	want := []struct {
		name string
		code int16
	}{{"missing", kerr.UnknownTopicOrPartition.Code}, {"known", 0}, {"bad/name", kerr.InvalidTopicException.Code}}
	for i, w := range want {
		if got := resp.Topics[i]; *got.Topic != w.name || got.ErrorCode != w.code {
			t.Fatalf("topic %d: %s error %d, want %s error %d", i, *got.Topic, got.ErrorCode, w.name, w.code)
		}
	}
	if h.fb.createCount() != 0 {
		t.Fatal("a topic was created without being allowed")
	}
	// An empty list asks for no topics.
	if resp := metadata(t, c, metadataRequest(12, false, []string{}...)); len(resp.Topics) != 0 {
		t.Fatalf("empty request answered %d topics", len(resp.Topics))
	}

	// v10+: by topic id.
	all := metadata(t, c, metadataRequest(12, false))
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	byID := kmsg.NewMetadataRequestTopic()
	byID.TopicID = all.Topics[1].TopicID
	unknown := kmsg.NewMetadataRequestTopic()
	unknown.TopicID = [16]byte{9, 9}
	req.Topics = []kmsg.MetadataRequestTopic{byID, unknown}
	resp = metadata(t, c, req)
	if len(resp.Topics) != 2 || resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != *all.Topics[1].Topic ||
		resp.Topics[1].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("by id: %+v", resp.Topics)
	}
}

func TestMetadataAutoCreate(t *testing.T) {
	for _, tc := range []struct {
		name          string
		backendAllows bool
		version       int16
		requestAllows bool
		wantCreated   bool
	}{
		{"both allow", true, 12, true, true},
		{"request forbids", true, 12, false, false},
		{"backend forbids", false, 12, true, false},
		{"v3 has no flag: allowed", true, 3, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startServer(t, Config{})
			h.fb.set(func(b *fakeBackend) { b.autoCreate = tc.backendAllows })
			resp := metadata(t, h.dial(), metadataRequest(tc.version, tc.requestAllows, "fresh"))
			if h.fb.hasTopic("fresh") != tc.wantCreated {
				t.Fatalf("created = %v, want %v", h.fb.hasTopic("fresh"), tc.wantCreated)
			}
			got := resp.Topics[0]
			if tc.wantCreated {
				// The fake has leaders at once, so the answer is the topic.
				if got.ErrorCode != 0 || len(got.Partitions) != 2 {
					t.Fatalf("created topic answered %+v", got)
				}
			} else if got.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("error %d, want UNKNOWN_TOPIC_OR_PARTITION", got.ErrorCode)
			}
		})
	}
}

// An auto-created topic whose creation fails reports the backend's error;
// one that exists but has no leader yet answers LEADER_NOT_AVAILABLE.
func TestMetadataAutoCreateErrors(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.set(func(b *fakeBackend) { b.autoCreate = true; b.createErr = kerr.NotController })
	resp := metadata(t, h.dial(), metadataRequest(12, true, "fresh"))
	if got := resp.Topics[0].ErrorCode; got != kerr.NotController.Code {
		t.Fatalf("error %d, want NOT_CONTROLLER", got)
	}
	// Created, but with no partitions to show yet.
	h.fb.set(func(b *fakeBackend) { b.createErr = nil; b.defaultParts = 0 })
	resp = metadata(t, h.dial(), metadataRequest(12, true, "later"))
	if got := resp.Topics[0].ErrorCode; got != kerr.LeaderNotAvailable.Code {
		t.Fatalf("error %d, want LEADER_NOT_AVAILABLE", got)
	}
}

// In v0 a list of names asks for those topics only.
func TestMetadataV0NamedTopics(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("known", 1)
	h.fb.addTopic("other", 1)
	resp := metadata(t, h.dial(), metadataRequest(0, false, "known"))
	if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "known" || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("topics %+v, want only known", resp.Topics)
	}
}

// The acceptance case of issue 12: a client that pipelines ApiVersions v0
// and Metadata v0 in one write gets both answers, in order.
func TestPipelinedAPIVersionsAndMetadataV0(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("t", 1)
	c := h.dial()
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("rdkafka"))
	raw := f.AppendRequest(nil, apiVersionsRequest(0), 1)
	raw = append(raw, f.AppendRequest(nil, metadataRequest(0, false), 2)...)
	c.write(raw)
	av := kmsg.NewPtrApiVersionsResponse()
	if corr := c.read(av); corr != 1 || av.ErrorCode != 0 || !sameKeys(av.ApiKeys, wantAPIs) {
		t.Fatalf("ApiVersions v0: corr %d error %d", corr, av.ErrorCode)
	}
	md := kmsg.NewPtrMetadataResponse()
	if corr := c.read(md); corr != 2 || len(md.Topics) != 1 || *md.Topics[0].Topic != "t" || len(md.Brokers) != 1 {
		t.Fatalf("Metadata v0: corr %d, %+v", corr, md)
	}
}
