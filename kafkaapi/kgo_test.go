package kafkaapi

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/record"
)

// franz-go, a stock Kafka client, produces idempotently (its default) to
// the server and consumes everything back: the protocol, the negotiated
// versions (kgo starts ApiVersions at v5 and must downgrade), Metadata,
// InitProducerId, Produce, ListOffsets and long-polling Fetch all work end
// to end, and per-partition order holds.
func TestKgoProducesAndConsumes(t *testing.T) {
	h := startServer(t, Config{})
	ps := h.fb.addTopic("events", 3)
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()

	// The consumer starts first: its fetches wait on empty partitions and
	// must wake when data arrives (FetchMaxWait is far longer than the
	// test takes).
	consumer, err := kgo.NewClient(
		kgo.SeedBrokers(h.addr),
		kgo.ConsumeTopics("events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(time.Minute),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	// Its first fetch is waiting on the empty partitions before anything
	// is produced.
	eventually(t, "consumer long-polling", func() bool {
		for _, p := range ps {
			if p.changedCount() == 0 {
				return false
			}
		}
		return true
	})

	producer, err := kgo.NewClient(
		kgo.SeedBrokers(h.addr),
		kgo.DefaultProduceTopic("events"),
		kgo.ProducerLinger(0),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()

	const n = 300
	type at struct {
		partition int32
		offset    int64
	}
	produced := make(map[string]at, n)
	for round := range 3 { // several requests per partition
		var recs []*kgo.Record
		for i := range n / 3 {
			id := round*(n/3) + i
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "key-%d", id%17), Value: fmt.Appendf(nil, "value-%d", id)})
		}
		for _, r := range producer.ProduceSync(ctx, recs...) {
			if r.Err != nil {
				t.Fatalf("produce: %v", r.Err)
			}
			produced[string(r.Record.Value)] = at{r.Record.Partition, r.Record.Offset}
		}
	}

	consumed := make(map[string]at, n)
	next := make(map[int32]int64) // expected next offset per partition
	for len(consumed) < n {
		fetches := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(consumed), n, err)
		}
		for _, fe := range fetches.Errors() {
			t.Fatalf("fetch error on %s/%d: %v", fe.Topic, fe.Partition, fe.Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			consumed[string(r.Value)] = at{r.Partition, r.Offset}
		})
	}
	for v, p := range produced {
		if consumed[v] != p {
			t.Fatalf("%s produced at %+v, consumed at %+v", v, p, consumed[v])
		}
	}

	// The producer was idempotent: one producer id, consecutive sequences.
	for i, p := range ps {
		seq := int32(0)
		for _, b := range p.batches() {
			hdr, err := record.Check(b)
			if err != nil {
				t.Fatalf("partition %d: %v", i, err)
			}
			if hdr.ProducerID != 1000 || hdr.BaseSequence != seq {
				t.Fatalf("partition %d: producer %d sequence %d, want 1000 and %d", i, hdr.ProducerID, hdr.BaseSequence, seq)
			}
			seq += hdr.NumRecords
		}
	}
}
