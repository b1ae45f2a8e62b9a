package kafkaapi

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchPart is one partition entry of a Fetch request.
func fetchPart(p int32, offset int64) kmsg.FetchRequestTopicPartition {
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offset, 1<<20
	return rp
}

// A Fetch naming a partition more than once is answered as Kafka answers
// it (FetchRequest.fetchData puts the entries in a LinkedHashMap keyed by
// topic-partition): each partition once, where it first appears, read as
// its last entry asks; partitions next to each other of one topic share
// that topic's entry.
func TestFetchDuplicatePartitionsCollapse(t *testing.T) {
	h := startServer(t, Config{})
	tp := h.fb.addTopic("t", 2)
	h.fb.addTopic("u", 1)
	b0, b1 := makeBatch(1, "a", "b"), makeBatch(2, "c")
	tp[0].append(b0)
	tp[0].append(b1)
	c := h.dial()
	for _, version := range []int16{4, 12} {
		req := fetchRequest(version, "t", 0, 0)
		req.Topics[0].Partitions = []kmsg.FetchRequestTopicPartition{fetchPart(0, 2), fetchPart(1, 0), fetchPart(0, 0)}
		u := kmsg.NewFetchRequestTopic()
		u.Topic, u.Partitions = "u", []kmsg.FetchRequestTopicPartition{fetchPart(0, 0), fetchPart(0, 0)}
		t2 := kmsg.NewFetchRequestTopic()
		t2.Topic, t2.Partitions = "t", []kmsg.FetchRequestTopicPartition{fetchPart(0, 0), fetchPart(1, 0)}
		req.Topics = append(req.Topics, u, t2)
		resp := fetch(t, c, req)
		var got []string
		for _, rt := range resp.Topics {
			s := rt.Topic + ":"
			for _, rp := range rt.Partitions {
				s += string(rune('0' + rp.Partition))
			}
			got = append(got, s)
		}
		if len(got) != 2 || got[0] != "t:01" || got[1] != "u:0" {
			t.Fatalf("v%d: answer lays out %q, want [t:01 u:0]", version, got)
		}
		// Read from offset 0, as the last entry of t/0 asks.
		want := append(append([]byte{}, b0...), b1...)
		if rp := resp.Topics[0].Partitions[0]; rp.ErrorCode != 0 || !bytes.Equal(rp.RecordBatches, want) {
			t.Fatalf("v%d: t/0 error %d, %d bytes; want both batches", version, rp.ErrorCode, len(rp.RecordBatches))
		}
	}
}

// A Produce naming a partition more than once is answered as Kafka
// answers it (KafkaApis.handleProduceRequest keys the batches by
// topic-partition in a map, so the last one wins): the partition's last
// batch is appended, once, and the answer names each partition once, under
// one entry per topic.
func TestProduceDuplicatePartitionsCollapse(t *testing.T) {
	h := startServer(t, Config{})
	ps := h.fb.addTopic("t", 2)
	c := h.dial()
	first, second, other := makeBatch(1, "first"), makeBatch(2, "second"), makeBatch(3, "other")
	req := produceRequest(9, -1, "t", map[int32][]byte{0: first, 1: other})
	again := kmsg.NewProduceRequestTopic()
	again.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, second
	again.Partitions = append(again.Partitions, rp)
	req.Topics = append(req.Topics, again)

	resp := produce(t, c, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("answer has %d topics, the first with %d partitions; want t once with 2", len(resp.Topics), len(resp.Topics[0].Partitions))
	}
	for _, rp := range resp.Topics[0].Partitions {
		if rp.ErrorCode != 0 {
			t.Fatalf("%+v", rp)
		}
	}
	if n := ps[0].produceCount(); n != 1 {
		t.Fatalf("t/0 got %d proposals, want 1", n)
	}
	if bs := ps[0].batches(); len(bs) != 1 || !bytes.Contains(bs[0], []byte("second")) {
		t.Fatalf("t/0 holds %d batches; want the last one named", len(bs))
	}
}

// collapse leaves a request without repeats as it is, and drops a topic
// entry without partitions, as Kafka's map never holds one.
func TestCollapseKeepsPlainRequests(t *testing.T) {
	req := fetchRequest(12, "t", 0, 0, 0, 0)
	u := kmsg.NewFetchRequestTopic()
	u.Topic, u.Partitions = "u", []kmsg.FetchRequestTopicPartition{fetchPart(0, 0)}
	req.Topics = append(req.Topics, u)
	if got := collapse(req.Topics, fetchTopics); &got[0] != &req.Topics[0] {
		t.Fatal("a request without repeats was copied")
	}
	empty := kmsg.NewFetchRequestTopic()
	empty.Topic = "empty"
	req.Topics = append(req.Topics, empty)
	if got := collapse(req.Topics, fetchTopics); len(got) != 2 || got[1].Topic != "u" {
		t.Fatalf("collapse kept %d topics", len(got))
	}
}
