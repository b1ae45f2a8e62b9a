package kafkaapi

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/record"
)

func fetch(t *testing.T, c *client, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	t.Helper()
	return c.roundTrip(req).(*kmsg.FetchResponse)
}

// countBatches counts the whole batches in a fetch answer.
func countBatches(t *testing.T, b []byte) int {
	t.Helper()
	n := 0
	for len(b) > 0 {
		_, rest, _, err := record.Next(b)
		if err != nil {
			t.Fatalf("answer holds a partial or bad batch: %v", err)
		}
		b = rest
		n++
	}
	return n
}

func TestFetchReturnsCommittedData(t *testing.T) {
	for _, version := range []int16{4, 7, 11, 12} {
		h := startServer(t, Config{})
		p := h.fb.addTopic("t", 1)[0]
		b0, b1 := makeBatch(1, "a", "b"), makeBatch(2, "c")
		p.append(b0)
		p.append(b1)
		c := h.dial()
		resp := fetch(t, c, fetchRequest(version, "t", 0, 1, 0))
		rp := resp.Topics[0].Partitions[0]
		wantStart := int64(0)
		if version < 5 {
			wantStart = -1 // not in the wire format before v5
		}
		if rp.ErrorCode != 0 || rp.HighWatermark != 3 || rp.LastStableOffset != 3 || rp.LogStartOffset != wantStart {
			t.Fatalf("v%d: %+v", version, rp)
		}
		if !bytes.Equal(rp.RecordBatches, append(append([]byte{}, b0...), b1...)) {
			t.Fatalf("v%d: records differ from the log", version)
		}
		if rp.PreferredReadReplica != -1 {
			t.Fatalf("v%d: preferred read replica %d", version, rp.PreferredReadReplica)
		}
		// From the middle of the first batch: that whole batch comes back.
		rp = fetch(t, c, fetchRequest(version, "t", 0, 1, 1)).Topics[0].Partitions[0]
		if countBatches(t, rp.RecordBatches) != 2 {
			t.Fatalf("v%d: fetch from offset 1 returned %d batches", version, countBatches(t, rp.RecordBatches))
		}
	}
}

// With nothing to read, a fetch waits MaxWaitMillis and returns empty.
func TestFetchLongPollReturnsAfterMaxWait(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("t", 1)
	c := h.dial()
	const maxWait = 150 * time.Millisecond
	start := time.Now()
	rp := fetch(t, c, fetchRequest(12, "t", maxWait, 1, 0)).Topics[0].Partitions[0]
	if waited := time.Since(start); waited < maxWait {
		t.Fatalf("returned after %v, before MaxWait %v", waited, maxWait)
	}
	if rp.ErrorCode != 0 || len(rp.RecordBatches) != 0 || rp.HighWatermark != 0 {
		t.Fatalf("%+v", rp)
	}
}

// A waiting fetch returns as soon as data arrives on any of its partitions.
func TestFetchLongPollWakesOnNewData(t *testing.T) {
	h := startServer(t, Config{})
	ps := h.fb.addTopic("t", 3)
	c := h.dial()
	before := ps[2].changedCount()
	c.send(fetchRequest(12, "t", time.Hour, 1, 0, 0, 0))
	eventually(t, "fetch waiting", func() bool { return ps[2].changedCount() > before })
	batch := makeBatch(1, "late")
	ps[2].append(batch)

	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	c.read(resp)
	rp := resp.Topics[0].Partitions[2]
	if !bytes.Equal(rp.RecordBatches, batch) || rp.HighWatermark != 1 {
		t.Fatalf("partition 2: %d bytes, high watermark %d", len(rp.RecordBatches), rp.HighWatermark)
	}
}

// MinBytes counts across all partitions: one small batch is not enough, a
// second on another partition is.
func TestFetchMinBytesAcrossPartitions(t *testing.T) {
	h := startServer(t, Config{})
	ps := h.fb.addTopic("t", 2)
	b0, b1 := makeBatch(1, "first"), makeBatch(1, "second")
	c := h.dial()
	before := ps[1].changedCount()
	c.send(fetchRequest(12, "t", time.Hour, int32(len(b0)+len(b1)), 0, 0))
	eventually(t, "fetch waiting", func() bool { return ps[1].changedCount() > before })
	ps[0].append(b0)
	// The fetch wakes, reads too little, and waits again.
	eventually(t, "fetch waiting again", func() bool { return ps[1].changedCount() > before+1 })
	ps[1].append(b1)

	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	c.read(resp)
	if got0, got1 := resp.Topics[0].Partitions[0].RecordBatches, resp.Topics[0].Partitions[1].RecordBatches; !bytes.Equal(got0, b0) || !bytes.Equal(got1, b1) {
		t.Fatalf("got %d and %d bytes, want both batches", len(got0), len(got1))
	}
}

// KIP-74: the first batch of the first non-empty partition comes back
// whole even over the limits; later partitions only within them.
func TestFetchByteLimits(t *testing.T) {
	h := startServer(t, Config{})
	ps := h.fb.addTopic("t", 2)
	big := makeBatch(1, string(make([]byte, 1000)))
	small := makeBatch(2, "s")
	ps[0].append(big)
	ps[0].append(small)
	ps[1].append(makeBatch(3, "other"))
	c := h.dial()

	req := fetchRequest(12, "t", 0, 1, 0, 0)
	req.MaxBytes = 100
	for i := range req.Topics[0].Partitions {
		req.Topics[0].Partitions[i].PartitionMaxBytes = 100
	}
	resp := fetch(t, c, req)
	p0, p1 := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
	if !bytes.Equal(p0.RecordBatches, big) {
		t.Fatalf("partition 0: %d bytes, want the whole first batch (%d)", len(p0.RecordBatches), len(big))
	}
	if len(p1.RecordBatches) != 0 || p1.HighWatermark != 1 {
		t.Fatalf("partition 1: %d bytes (high watermark %d), want none: MaxBytes is spent", len(p1.RecordBatches), p1.HighWatermark)
	}

	// PartitionMaxBytes that fits exactly the first two batches of a partition.
	req = fetchRequest(12, "t", 0, 1, 0)
	req.Topics[0].Partitions[0].PartitionMaxBytes = int32(len(big) + len(small))
	ps[0].append(makeBatch(4, "third"))
	if n := countBatches(t, fetch(t, c, req).Topics[0].Partitions[0].RecordBatches); n != 2 {
		t.Fatalf("got %d batches, want 2 within PartitionMaxBytes", n)
	}
}

// Even if the backend's Read returned uncommitted data, the answer stops
// at the high watermark.
func TestFetchOnlyBelowHighWatermark(t *testing.T) {
	h := startServer(t, Config{})
	p := h.fb.addTopic("t", 1)[0]
	first := makeBatch(1, "committed")
	p.append(first)
	p.append(makeBatch(2, "not yet"))
	p.set(func(p *fakePartition) { p.hw = 1 }) // the fake's Read does not look at hw
	rp := fetch(t, h.dial(), fetchRequest(12, "t", 0, 1, 0)).Topics[0].Partitions[0]
	if !bytes.Equal(rp.RecordBatches, first) || rp.HighWatermark != 1 {
		t.Fatalf("got %d bytes with high watermark %d, want only the first batch", len(rp.RecordBatches), rp.HighWatermark)
	}
}

// Offsets outside [log start, high watermark] fail at once, even with a
// long MaxWait.
func TestFetchOffsetOutOfRange(t *testing.T) {
	h := startServer(t, Config{})
	p := h.fb.addTopic("t", 1)[0]
	p.append(makeBatch(1, "a", "b", "c"))
	p.set(func(p *fakePartition) { p.start = 1 })
	c := h.dial()
	for _, off := range []int64{0, 4} {
		rp := fetch(t, c, fetchRequest(12, "t", time.Hour, 1, off)).Topics[0].Partitions[0]
		if rp.ErrorCode != kerr.OffsetOutOfRange.Code {
			t.Fatalf("offset %d: error %d, want OFFSET_OUT_OF_RANGE", off, rp.ErrorCode)
		}
	}
}

func TestFetchPartitionErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(p *fakePartition)
		topic string
		epoch int32
		want  *kerr.Error
	}{
		{name: "unknown topic", topic: "nope", epoch: -1, want: kerr.UnknownTopicOrPartition},
		{name: "not leader", topic: "t", epoch: -1, setup: func(p *fakePartition) { p.leader = false }, want: kerr.NotLeaderForPartition},
		{name: "newer epoch", topic: "t", epoch: 6, want: kerr.UnknownLeaderEpoch},
		{name: "older epoch", topic: "t", epoch: 4, want: kerr.FencedLeaderEpoch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startServer(t, Config{})
			p := h.fb.addTopic("t", 1)[0] // leader epoch 5
			if tc.setup != nil {
				p.set(tc.setup)
			}
			c := h.dial()
			req := fetchRequest(12, tc.topic, time.Hour, 1, 0)
			req.Topics[0].Partitions[0].CurrentLeaderEpoch = tc.epoch
			rp := fetch(t, c, req).Topics[0].Partitions[0]
			if rp.ErrorCode != tc.want.Code {
				t.Fatalf("error %s, want %s", kerr.ErrorForCode(rp.ErrorCode), tc.want.Message)
			}
		})
	}
	// The current epoch is fine.
	h := startServer(t, Config{})
	h.fb.addTopic("t", 1)[0].append(makeBatch(1, "a"))
	req := fetchRequest(12, "t", 0, 1, 0)
	req.Topics[0].Partitions[0].CurrentLeaderEpoch = 5
	if rp := fetch(t, h.dial(), req).Topics[0].Partitions[0]; rp.ErrorCode != 0 || len(rp.RecordBatches) == 0 {
		t.Fatalf("current epoch: %+v", rp)
	}
}

// Without fetch sessions: a full fetch gets session id 0 (the client stops
// asking for sessions), an incremental one FETCH_SESSION_ID_NOT_FOUND.
func TestFetchSessions(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("t", 1)[0].append(makeBatch(1, "a"))
	c := h.dial()
	for _, tc := range []struct {
		id, epoch int32
		want      int16
	}{
		{id: 0, epoch: 0, want: 0},  // "create a session"
		{id: 0, epoch: -1, want: 0}, // "no session"
		{id: 42, epoch: 0, want: 0}, // full fetch replacing a session
		{id: 42, epoch: 3, want: kerr.FetchSessionIDNotFound.Code},
		{id: 0, epoch: 1, want: kerr.FetchSessionIDNotFound.Code},
	} {
		req := fetchRequest(12, "t", time.Hour, 1, 0)
		req.SessionID, req.SessionEpoch = tc.id, tc.epoch
		resp := fetch(t, c, req)
		if resp.ErrorCode != tc.want || resp.SessionID != 0 {
			t.Fatalf("session %d epoch %d: error %d session %d, want error %d session 0", tc.id, tc.epoch, resp.ErrorCode, resp.SessionID, tc.want)
		}
		if tc.want == 0 && len(resp.Topics) != 1 {
			t.Fatalf("session %d epoch %d: %d topics", tc.id, tc.epoch, len(resp.Topics))
		}
		if tc.want != 0 && len(resp.Topics) != 0 {
			t.Fatalf("session error answered with %d topics", len(resp.Topics))
		}
	}
}

func TestWholeBatches(t *testing.T) {
	a, b := makeBatch(1, "a"), makeBatch(2, "b")
	record.SetBaseOffset(b, 1)
	data := append(append(append([]byte{}, a...), b...), b[:10]...)
	const hw = 2
	if got := wholeBatches(data, 1<<20, true, hw); !bytes.Equal(got, data[:len(a)+len(b)]) {
		t.Fatalf("kept %d bytes, want %d", len(got), len(a)+len(b))
	}
	if got := wholeBatches(data, 1, false, hw); got != nil {
		t.Fatalf("kept %d bytes over the limit without firstData", len(got))
	}
	if got := wholeBatches(data, 1, true, hw); !bytes.Equal(got, a) {
		t.Fatalf("kept %d bytes, want the first batch", len(got))
	}
	if got := wholeBatches(data, 1<<20, true, hw-1); !bytes.Equal(got, a) {
		t.Fatalf("kept %d bytes, want only the batch below the high watermark", len(got))
	}
}

// A partition with nothing to return carries an empty record set, never a
// null one, in every version: at the high watermark, over the byte limits,
// and with an error (Kafka answers MemoryRecords.EMPTY in each case;
// librdkafka fails the whole response on a null set). The check is on the
// wire bytes, so it does not depend on how kmsg decodes a null.
func TestFetchEmptyRecordSetIsNotNull(t *testing.T) {
	for v := int16(4); v <= 12; v++ {
		h := startServer(t, Config{})
		ps := h.fb.addTopic("t", 3)
		ps[1].append(makeBatch(1, string(make([]byte, 200))))
		ps[2].append(makeBatch(1, "x"))
		req := fetchRequest(v, "t", 0, 1, 0, 0, 0)
		req.MaxBytes = 10 // partition 2 gets nothing: the first batch spent it
		unknown := kmsg.NewFetchRequestTopicPartition()
		unknown.Partition = 9
		unknown.PartitionMaxBytes = 1 << 20
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, unknown)
		c := h.dial()
		corr := c.send(req)
		got, body, err := c.readFrame()
		if err != nil || got != corr {
			t.Fatalf("v%d: read response: corr %d, %v", v, got, err)
		}
		sizes := recordSetSizes(t, v, body)
		want := []int32{0, int32(len(ps[1].batches()[0])), 0, 0}
		if !slices.Equal(sizes, want) {
			t.Fatalf("v%d: record set sizes %v, want %v (-1 is null)", v, sizes, want)
		}
	}
}

// recordSetSizes decodes a Fetch response body of one topic by hand and
// returns each partition's record set length as it is on the wire.
func recordSetSizes(t *testing.T, version int16, body []byte) []int32 {
	t.Helper()
	flexible := version >= 12
	r := kbin.Reader{Src: body}
	if flexible {
		kmsg.SkipTags(&r) // response header
	}
	r.Int32() // throttle
	if version >= 7 {
		r.Int16() // error code
		r.Int32() // session id
	}
	arrayLen := func() int32 {
		if flexible {
			return r.CompactArrayLen()
		}
		return r.ArrayLen()
	}
	if n := arrayLen(); n != 1 {
		t.Fatalf("v%d: %d topics", version, n)
	}
	if flexible {
		_ = r.CompactString()
	} else {
		_ = r.String()
	}
	var sizes []int32
	for range arrayLen() {
		r.Int32() // partition
		r.Int16() // error code
		r.Int64() // high watermark
		r.Int64() // last stable offset
		if version >= 5 {
			r.Int64() // log start offset
		}
		for range arrayLen() { // aborted transactions
			r.Int64()
			r.Int64()
		}
		if version >= 11 {
			r.Int32() // preferred read replica
		}
		var n int32
		if flexible {
			n = int32(r.Uvarint()) - 1
		} else {
			n = r.Int32()
		}
		sizes = append(sizes, n)
		if n > 0 {
			r.Span(int(n))
		}
		if flexible {
			kmsg.SkipTags(&r)
		}
	}
	if err := r.Complete(); err != nil && !flexible {
		t.Fatalf("v%d: decode: %v", version, err)
	}
	return sizes
}
