package kafkaapi

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/record"
)

func produce(t *testing.T, c *client, req *kmsg.ProduceRequest) *kmsg.ProduceResponse {
	t.Helper()
	return c.roundTrip(req).(*kmsg.ProduceResponse)
}

func partitionResult(t *testing.T, resp *kmsg.ProduceResponse, topic string, partition int32) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rt.Topic == topic && rp.Partition == partition {
				return rp
			}
		}
	}
	t.Fatalf("no result for %s/%d in %+v", topic, partition, resp.Topics)
	return kmsg.ProduceResponseTopicPartition{}
}

// A good batch is handed to the partition and answered with its base
// offset, at the lowest and highest supported versions.
func TestProduceAppendsAndAnswersOffsets(t *testing.T) {
	for _, version := range []int16{3, 5, 8, 9} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			h := startServer(t, Config{})
			ps := h.fb.addTopic("t", 2)
			ps[1].append(makeBatch(1, "x", "y")) // offsets 0-1
			ps[1].set(func(p *fakePartition) { p.start = 1 })
			c := h.dial()

			b0 := makeBatch(10, "a")
			b1 := makeBatch(10, "b", "c", "d")
			resp := produce(t, c, produceRequest(version, -1, "t", map[int32][]byte{0: b0, 1: b1}))
			r0, r1 := partitionResult(t, resp, "t", 0), partitionResult(t, resp, "t", 1)
			if r0.ErrorCode != 0 || r0.BaseOffset != 0 || r1.ErrorCode != 0 || r1.BaseOffset != 2 {
				t.Fatalf("results %+v %+v, want offsets 0 and 2", r0, r1)
			}
			if r0.LogAppendTime != -1 {
				t.Errorf("log append time %d, want -1", r0.LogAppendTime)
			}
			if version >= 5 && r1.LogStartOffset != 1 {
				t.Errorf("log start offset %d, want 1", r1.LogStartOffset)
			}
			if got := ps[1].batches(); len(got) != 2 || !bytes.Equal(got[1][record.HeaderSize:], b1[record.HeaderSize:]) {
				t.Fatalf("partition 1 holds %d batches, want the produced one second", len(got))
			}
		})
	}
}

// Produce with one bad batch answers CORRUPT_MESSAGE for that partition
// and proposes nothing for it; the server keeps serving.
func TestProduceRejectsBadBatches(t *testing.T) {
	good := makeBatch(1, "ok")
	wrongCRC := makeBatch(1, "v")
	wrongCRC[len(wrongCRC)-1] ^= 0xff // a record byte: covered by the CRC
	control := makeBatch(1, "marker")
	control[22] |= record.AttrControl
	record.FinishBatch(control) // a correct CRC: rejected for being a control batch
	for _, tc := range []struct {
		name  string
		batch []byte
	}{
		{"wrong CRC", wrongCRC},
		{"two batches", append(makeBatch(1, "a"), makeBatch(2, "b")...)},
		{"trailing bytes", append(makeBatch(1, "a"), 0)},
		{"truncated", good[:len(good)-1]},
		{"empty", nil},
		{"control batch", control},
		{"magic 1", func() []byte { b := makeBatch(1, "m"); b[16] = 1; return b }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startServer(t, Config{})
			ps := h.fb.addTopic("t", 2)
			c := h.dial()
			resp := produce(t, c, produceRequest(9, -1, "t", map[int32][]byte{0: tc.batch, 1: good}))
			bad := partitionResult(t, resp, "t", 0)
			if bad.ErrorCode != kerr.CorruptMessage.Code || bad.BaseOffset != -1 {
				t.Fatalf("bad partition: %+v, want CORRUPT_MESSAGE", bad)
			}
			if bad.ErrorMessage == nil {
				t.Errorf("v9 answer carries no error message")
			}
			if n := ps[0].produceCount(); n != 0 {
				t.Fatalf("%d proposals reached the backend for the bad batch", n)
			}
			if ok := partitionResult(t, resp, "t", 1); ok.ErrorCode != 0 || ps[1].produceCount() != 1 {
				t.Fatalf("good partition in the same request: %+v", ok)
			}
			h.requireServing()
		})
	}
}

// acks outside -1, 0, 1 fails every partition and proposes nothing.
func TestProduceInvalidRequiredAcks(t *testing.T) {
	h := startServer(t, Config{})
	ps := h.fb.addTopic("t", 2)
	c := h.dial()
	resp := produce(t, c, produceRequest(9, 5, "t", map[int32][]byte{0: makeBatch(1, "a"), 1: makeBatch(1, "b")}))
	for p := range int32(2) {
		if r := partitionResult(t, resp, "t", p); r.ErrorCode != kerr.InvalidRequiredAcks.Code {
			t.Fatalf("partition %d: error %d, want INVALID_REQUIRED_ACKS", p, r.ErrorCode)
		}
		if n := ps[p].produceCount(); n != 0 {
			t.Fatalf("partition %d: %d proposals reached the backend", p, n)
		}
	}
	h.requireServing()
}

// acks=0 writes no response frame: the next response on the connection is
// the next request's.
func TestProduceAcksZeroWritesNoResponse(t *testing.T) {
	h := startServer(t, Config{})
	p := h.fb.addTopic("t", 1)[0]
	c := h.dial()
	c.send(produceRequest(9, 0, "t", map[int32][]byte{0: makeBatch(1, "a")}))
	if resp := c.roundTrip(apiVersionsRequest(3)).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions error %d", resp.ErrorCode)
	}
	if got := len(p.batches()); got != 1 {
		t.Fatalf("partition holds %d batches, want 1", got)
	}
}

// A failed acks=0 produce closes the connection, as Kafka does, since no
// response can tell the client.
func TestProduceAcksZeroFailureClosesConnection(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("t", 1)
	c := h.dial()
	c.send(produceRequest(9, 0, "t", map[int32][]byte{5: makeBatch(1, "a")})) // no partition 5
	c.requireClosed()
	h.requireServing()
}

// Errors from the backend reach the client as their Kafka codes.
func TestProduceBackendErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		topic   string
		setup   func(p *fakePartition)
		timeout time.Duration
		want    *kerr.Error
	}{
		{name: "unknown topic", topic: "nope", want: kerr.UnknownTopicOrPartition},
		{name: "not leader", topic: "t", setup: func(p *fakePartition) { p.leader = false }, want: kerr.NotLeaderForPartition},
		{name: "out of order", topic: "t", setup: func(p *fakePartition) { p.failNext = kerr.OutOfOrderSequenceNumber }, want: kerr.OutOfOrderSequenceNumber},
		{name: "fenced epoch", topic: "t", setup: func(p *fakePartition) { p.failNext = fmt.Errorf("fsm: %w", kerr.InvalidProducerEpoch) }, want: kerr.InvalidProducerEpoch},
		{name: "lost leadership", topic: "t", setup: func(p *fakePartition) { p.failNext = kerr.NotLeaderForPartition }, want: kerr.NotLeaderForPartition},
		{name: "other error", topic: "t", setup: func(p *fakePartition) { p.failNext = fmt.Errorf("disk on fire") }, want: kerr.UnknownServerError},
		{name: "timeout", topic: "t", setup: func(p *fakePartition) { p.hold = true }, timeout: 50 * time.Millisecond, want: kerr.RequestTimedOut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startServer(t, Config{})
			p := h.fb.addTopic("t", 1)[0]
			if tc.setup != nil {
				p.set(tc.setup)
			}
			c := h.dial()
			req := produceRequest(9, -1, tc.topic, map[int32][]byte{0: makeBatch(1, "a")})
			if tc.timeout > 0 {
				req.TimeoutMillis = int32(tc.timeout / time.Millisecond)
			}
			r := partitionResult(t, produce(t, c, req), tc.topic, 0)
			if r.ErrorCode != tc.want.Code || r.BaseOffset != -1 {
				t.Fatalf("got error %s offset %d, want %s", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset, tc.want.Message)
			}
		})
	}
}

// Batches of one connection reach a partition in request order.
func TestProduceKeepsRequestOrder(t *testing.T) {
	h := startServer(t, Config{})
	p := h.fb.addTopic("t", 1)[0]
	p.set(func(p *fakePartition) { p.hold = true })
	c := h.dial()
	const n = 20
	for i := range n {
		c.send(produceRequest(7, -1, "t", map[int32][]byte{0: makeBatch(int64(i), fmt.Sprint(i))}))
	}
	eventually(t, "all proposals queued", func() bool { return p.heldCount() == n })
	p.release()
	for i := range n {
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 7
		c.read(resp)
		if got := resp.Topics[0].Partitions[0].BaseOffset; got != int64(i) {
			t.Fatalf("response %d: base offset %d", i, got)
		}
	}
	for i, b := range p.batches() {
		h, err := record.Check(b)
		if err != nil || h.FirstTimestamp != int64(i) {
			t.Fatalf("batch %d: first timestamp %d (err %v)", i, h.FirstTimestamp, err)
		}
	}
}
