package kafkaapi

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteTopic of the fake backend forgets the topic.
func (b *fakeBackend) DeleteTopic(_ context.Context, topic string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.topics[topic]; !ok {
		return kerr.UnknownTopicOrPartition
	}
	delete(b.topics, topic)
	return nil
}

// DeleteTopics answers each topic in order, by name up to v5 and by name
// or id in v6, with Kafka's errors for unknown names and ids and for a
// topic named twice.
func TestDeleteTopics(t *testing.T) {
	h := startServer(t, Config{})
	for _, name := range []string{"a", "b", "c", "d"} {
		h.fb.addTopic(name, 1)
	}
	c := h.dial()
	for v, name := range map[int16]string{0: "a", 5: "b"} {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version, req.TopicNames = v, []string{name, "missing"}
		resp := c.roundTrip(req).(*kmsg.DeleteTopicsResponse)
		if len(resp.Topics) != 2 || resp.Topics[0].ErrorCode != 0 || *resp.Topics[0].Topic != name ||
			resp.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("v%d: %+v", v, resp.Topics)
		}
	}
	cid := h.fb.topics["c"].id
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	req.Topics = []kmsg.DeleteTopicsRequestTopic{{TopicID: cid}, {TopicID: [16]byte{9}}, {Topic: kmsg.StringPtr("d")}, {Topic: kmsg.StringPtr("d")}}
	resp := c.roundTrip(req).(*kmsg.DeleteTopicsResponse)
	want := []int16{0, kerr.UnknownTopicID.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
	for i, w := range want {
		if resp.Topics[i].ErrorCode != w {
			t.Errorf("v6 topic %d: code %d, want %d", i, resp.Topics[i].ErrorCode, w)
		}
	}
	if resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != "c" || resp.Topics[0].TopicID != cid {
		t.Errorf("v6 by id: answered %v %x", resp.Topics[0].Topic, resp.Topics[0].TopicID)
	}
	if len(h.fb.topics) != 1 || h.fb.topics["d"] == nil {
		t.Fatalf("topics left: %v, want only d", h.fb.topics)
	}
}
