package kafkaapi

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type topicAsk struct {
	name       string
	partitions int32
	rf         int16
}

func createTopicsRequest(version int16, validateOnly bool, topics ...topicAsk) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = version
	req.ValidateOnly = validateOnly
	req.TimeoutMillis = 5000
	for _, a := range topics {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = a.name, a.partitions, a.rf
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func TestCreateTopics(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("exists", 1)
	c := h.dial()
	resp := c.roundTrip(createTopicsRequest(7, false,
		topicAsk{"three", 3, 1},
		topicAsk{"defaults", -1, -1},
		topicAsk{"exists", 1, 1},
		topicAsk{"zero-parts", 0, 1},
		topicAsk{"neg-parts", -2, 1},
		topicAsk{"zero-rf", 1, 0},
		topicAsk{"too-many-replicas", 1, 3},
		topicAsk{"bad name!", 1, 1},
		topicAsk{strings.Repeat("x", 250), 1, 1},
		topicAsk{"..", 1, 1},
		topicAsk{"twice", 1, 1},
		topicAsk{"twice", 1, 1},
	)).(*kmsg.CreateTopicsResponse)
	want := []struct {
		code  int16
		parts int32
		rf    int16
	}{
		{0, 3, 1},
		{0, 2, 1}, // the backend's defaults, resolved
		{kerr.TopicAlreadyExists.Code, -1, -1},
		{kerr.InvalidPartitions.Code, -1, -1},
		{kerr.InvalidPartitions.Code, -1, -1},
		{kerr.InvalidReplicationFactor.Code, -1, -1},
		{kerr.InvalidReplicationFactor.Code, -1, -1},
		{kerr.InvalidTopicException.Code, -1, -1},
		{kerr.InvalidTopicException.Code, -1, -1},
		{kerr.InvalidTopicException.Code, -1, -1},
		{kerr.InvalidRequest.Code, -1, -1},
		{kerr.InvalidRequest.Code, -1, -1},
	}
	if len(resp.Topics) != len(want) {
		t.Fatalf("%d answers, want %d", len(resp.Topics), len(want))
	}
	for i, w := range want {
		got := resp.Topics[i]
		if got.ErrorCode != w.code || got.NumPartitions != w.parts || got.ReplicationFactor != w.rf {
			t.Errorf("%q: error %d partitions %d rf %d, want %d %d %d", got.Topic, got.ErrorCode, got.NumPartitions, got.ReplicationFactor, w.code, w.parts, w.rf)
		}
		if (got.ErrorCode != 0) != (got.ErrorMessage != nil) {
			t.Errorf("%q: error message %v with error %d", got.Topic, got.ErrorMessage, got.ErrorCode)
		}
	}
	if resp.Topics[0].TopicID == ([16]byte{}) {
		t.Error("v7 answer without a topic id")
	}
	if !h.fb.hasTopic("three") || !h.fb.hasTopic("defaults") || h.fb.hasTopic("twice") || h.fb.hasTopic("zero-rf") {
		t.Error("backend topics do not match the answers")
	}
}

func TestCreateTopicsValidateOnlyCreatesNothing(t *testing.T) {
	h := startServer(t, Config{})
	resp := h.dial().roundTrip(createTopicsRequest(1, true, topicAsk{"maybe", 4, 1})).(*kmsg.CreateTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 || h.fb.hasTopic("maybe") || h.fb.createCount() != 1 {
		t.Fatalf("error %d, created %v, calls %d", resp.Topics[0].ErrorCode, h.fb.hasTopic("maybe"), h.fb.createCount())
	}
}

func TestCreateTopicsOldVersions(t *testing.T) {
	h := startServer(t, Config{})
	c := h.dial()
	for v := int16(0); v <= 7; v++ {
		name := "v" + string(rune('0'+v))
		resp := c.roundTrip(createTopicsRequest(v, false, topicAsk{name, 1, 1})).(*kmsg.CreateTopicsResponse)
		if resp.Topics[0].ErrorCode != 0 || !h.fb.hasTopic(name) {
			t.Fatalf("v%d: error %d", v, resp.Topics[0].ErrorCode)
		}
	}
}

func TestValidateTopicName(t *testing.T) {
	for _, ok := range []string{"a", "A.b_c-9", strings.Repeat("z", 249), "..."} {
		if err := ValidateTopicName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", strings.Repeat("z", 250), "a b", "a/b", "ü", "a\x00"} {
		err := ValidateTopicName(bad)
		var ine *InvalidTopicNameError
		if !errors.As(err, &ine) || ine.Name != bad || ErrorCode(err) != kerr.InvalidTopicException.Code {
			t.Errorf("%q: %v, want an InvalidTopicNameError", bad, err)
		}
	}
}
