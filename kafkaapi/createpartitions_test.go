package kafkaapi

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreatePartitions of the fake backend grows a topic by fake partitions;
// it refuses what the broker would (not larger, unknown topic).
func (b *fakeBackend) CreatePartitions(_ context.Context, topic string, count int32, validateOnly bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.topics[topic]
	switch {
	case !ok:
		return kerr.UnknownTopicOrPartition
	case int(count) <= len(t.partitions):
		return fmt.Errorf("%w: not larger", kerr.InvalidPartitions)
	case validateOnly:
		return nil
	}
	for len(t.partitions) < int(count) {
		t.partitions = append(t.partitions, newFakePartition())
	}
	return nil
}

// Each topic of a CreatePartitions gets its own answer, in request order;
// the server refuses duplicates and manual assignments itself; validate
// only changes nothing.
func TestCreatePartitions(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("a", 1)
	h.fb.addTopic("b", 2)
	c := h.dial()
	topic := func(name string, count int32, assign bool) kmsg.CreatePartitionsRequestTopic {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, count
		if assign {
			rt.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{1}}}
		}
		return rt
	}
	for v := int16(0); v <= 3; v++ {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version, req.ValidateOnly = v, true
		req.Topics = []kmsg.CreatePartitionsRequestTopic{topic("a", 3, false)}
		resp := c.roundTrip(req).(*kmsg.CreatePartitionsResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("v%d validate only: %+v", v, resp.Topics)
		}
	}
	if n := len(h.fb.topics["a"].partitions); n != 1 {
		t.Fatalf("validate only grew the topic to %d partitions", n)
	}
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version = 3
	req.Topics = []kmsg.CreatePartitionsRequestTopic{topic("a", 3, false), topic("b", 2, false), topic("x", 2, false),
		topic("d", 2, false), topic("d", 3, false), topic("e", 5, true)}
	resp := c.roundTrip(req).(*kmsg.CreatePartitionsResponse)
	want := []*kerr.Error{nil, kerr.InvalidPartitions, kerr.UnknownTopicOrPartition, kerr.InvalidRequest, kerr.InvalidRequest, kerr.InvalidReplicaAssignment}
	for i, w := range want {
		got := resp.Topics[i]
		if got.Topic != req.Topics[i].Topic || (w == nil) != (got.ErrorCode == 0) || (w != nil && (got.ErrorCode != w.Code || got.ErrorMessage == nil)) {
			t.Errorf("topic %d %q: code %d message %v, want %v", i, req.Topics[i].Topic, got.ErrorCode, got.ErrorMessage, w)
		}
	}
	if n := len(h.fb.topics["a"].partitions); n != 3 {
		t.Fatalf("topic a has %d partitions, want 3", n)
	}
}
