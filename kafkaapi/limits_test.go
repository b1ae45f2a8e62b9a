package kafkaapi

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/record"
)

// withCount rewrites a batch's record count and last offset delta to claim
// n records, and fixes its CRC so that only the count is wrong.
func withCount(b []byte, n int32) []byte {
	b = append([]byte(nil), b...)
	binary.BigEndian.PutUint32(b[23:], uint32(n-1)) // lastOffsetDelta
	binary.BigEndian.PutUint32(b[57:], uint32(n))   // recordCount
	record.FinishBatch(b)
	return b
}

func compressedBatch(t *testing.T, codec int, values ...string) []byte {
	t.Helper()
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{Timestamp: int64(i), Value: []byte(v)}
	}
	b, err := record.AppendBatch(nil, record.PlainBatch(codec), recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A batch whose header claims more or fewer records than it holds is
// answered INVALID_RECORD and never reaches the partition, compressed or
// not; a batch whose count is right still appends.
func TestProduceRejectsWrongRecordCount(t *testing.T) {
	plain := makeBatch(1, "a", "b", "c")
	gzip := compressedBatch(t, record.CompressionGzip, "a", "b", "c")
	zstd := compressedBatch(t, record.CompressionZstd, "a", "b", "c")
	// A bare 61-byte header that claims MaxInt32 records.
	huge := withCount(make([]byte, record.HeaderSize), math.MaxInt32)
	huge[16] = 2 // magic
	record.FinishBatch(huge)
	for _, tc := range []struct {
		name  string
		batch []byte
	}{
		{"header only, MaxInt32 records", huge},
		{"plain, one too many", withCount(plain, 4)},
		{"plain, one too few", withCount(plain, 2)},
		{"plain, MaxInt32", withCount(plain, math.MaxInt32)},
		{"gzip, one too many", withCount(gzip, 4)},
		{"gzip, one too few", withCount(gzip, 2)},
		{"zstd, MaxInt32", withCount(zstd, math.MaxInt32)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := record.CheckProduce(tc.batch); err != nil {
				t.Fatalf("test batch is not otherwise valid: %v", err)
			}
			h := startServer(t, Config{})
			ps := h.fb.addTopic("t", 2)
			c := h.dial()
			resp := produce(t, c, produceRequest(9, -1, "t", map[int32][]byte{0: tc.batch, 1: gzip}))
			bad := partitionResult(t, resp, "t", 0)
			if bad.ErrorCode != kerr.InvalidRecord.Code || bad.BaseOffset != -1 || bad.ErrorMessage == nil {
				t.Fatalf("bad partition: %+v, want INVALID_RECORD with a message", bad)
			}
			if n := ps[0].produceCount(); n != 0 {
				t.Fatalf("%d proposals reached the backend for the bad batch", n)
			}
			if ok := partitionResult(t, resp, "t", 1); ok.ErrorCode != 0 || ps[1].produceCount() != 1 {
				t.Fatalf("good compressed batch in the same request: %+v", ok)
			}
		})
	}
	t.Run("correct counts", func(t *testing.T) {
		h := startServer(t, Config{})
		ps := h.fb.addTopic("t", 3)
		c := h.dial()
		resp := produce(t, c, produceRequest(9, -1, "t", map[int32][]byte{0: plain, 1: gzip, 2: zstd}))
		for p := range int32(3) {
			if r := partitionResult(t, resp, "t", p); r.ErrorCode != 0 || ps[p].produceCount() != 1 {
				t.Fatalf("partition %d: %+v", p, r)
			}
		}
	})
}

// A Fetch that asks to wait MaxInt32 ms for nothing returns after
// Config.MaxFetchWait: the read below is bounded by the harness failsafe,
// which is far shorter than the asked wait.
func TestFetchMaxWaitIsCapped(t *testing.T) {
	h := startServer(t, Config{MaxFetchWait: 50 * time.Millisecond})
	h.fb.addTopic("t", 1)
	c := h.dial()
	req := fetchRequest(12, "t", 0, 1, 0)
	req.MaxWaitMillis = math.MaxInt32
	req.MaxBytes = math.MaxInt32
	req.Topics[0].Partitions[0].PartitionMaxBytes = math.MaxInt32
	rp := fetch(t, c, req).Topics[0].Partitions[0]
	if rp.ErrorCode != 0 || len(rp.RecordBatches) != 0 {
		t.Fatalf("%+v", rp)
	}
}

// MaxBytes and PartitionMaxBytes of MaxInt32 are cut to
// Config.FetchMaxBytes (beyond the first batch, KIP-74).
func TestFetchMaxBytesIsCapped(t *testing.T) {
	const capBytes = 1024
	h := startServer(t, Config{FetchMaxBytes: capBytes})
	p := h.fb.addTopic("t", 1)[0]
	batch := makeBatch(1, strings.Repeat("v", 300))
	for range 10 {
		p.append(append([]byte(nil), batch...))
	}
	c := h.dial()
	req := fetchRequest(12, "t", 0, 1, 0)
	req.MaxWaitMillis = math.MaxInt32
	req.MaxBytes = math.MaxInt32
	req.Topics[0].Partitions[0].PartitionMaxBytes = math.MaxInt32
	rp := fetch(t, c, req).Topics[0].Partitions[0]
	if rp.ErrorCode != 0 {
		t.Fatalf("error %d", rp.ErrorCode)
	}
	if got, want := countBatches(t, rp.RecordBatches), capBytes/len(batch); got != want || len(rp.RecordBatches) > capBytes {
		t.Fatalf("%d batches (%d bytes), want %d within %d bytes", got, len(rp.RecordBatches), want, capBytes)
	}
}

// A CreateTopics asking for a million partitions is answered
// POLICY_VIOLATION (Kafka's controller: an excessively large batch
// operation) without asking the backend; so is a request whose
// topics together pass the cap, from the topic that passes it.
func TestCreateTopicsPartitionCap(t *testing.T) {
	h := startServer(t, Config{})
	c := h.dial()
	resp := c.roundTrip(createTopicsRequest(7, false, topicAsk{"huge", 1_000_000, 1})).(*kmsg.CreateTopicsResponse)
	if got := resp.Topics[0]; got.ErrorCode != kerr.PolicyViolation.Code || got.ErrorMessage == nil {
		t.Fatalf("huge: error %d message %v, want POLICY_VIOLATION with a message", got.ErrorCode, got.ErrorMessage)
	}
	if n := h.fb.createCount(); n != 0 {
		t.Fatalf("backend called %d times", n)
	}

	h = startServer(t, Config{MaxCreatePartitions: 10})
	c = h.dial()
	resp = c.roundTrip(createTopicsRequest(7, true,
		topicAsk{"six", 6, 1},
		topicAsk{"five", 5, 1},
		topicAsk{"four", 4, 1},
	)).(*kmsg.CreateTopicsResponse)
	for i, want := range []int16{0, kerr.PolicyViolation.Code, 0} {
		if got := resp.Topics[i].ErrorCode; got != want {
			t.Errorf("%s: error %d, want %d", resp.Topics[i].Topic, got, want)
		}
	}
	if m := resp.Topics[1].ErrorMessage; m == nil || !strings.Contains(*m, "at most 10 in all (4 left") {
		t.Errorf("five: message %v, want one naming the limit of 10 and the 4 left", m)
	}
	if n := h.fb.createCount(); n != 2 {
		t.Fatalf("backend called %d times, want 2", n)
	}
}

// A replication factor above the live brokers is refused before the
// backend is asked.
func TestCreateTopicsReplicationFactorAboveBrokers(t *testing.T) {
	h := startServer(t, Config{})
	resp := h.dial().roundTrip(createTopicsRequest(7, false, topicAsk{"rf3", 1, 3})).(*kmsg.CreateTopicsResponse)
	if got := resp.Topics[0]; got.ErrorCode != kerr.InvalidReplicationFactor.Code || got.ErrorMessage == nil {
		t.Fatalf("error %d message %v, want INVALID_REPLICATION_FACTOR", got.ErrorCode, got.ErrorMessage)
	}
	if n := h.fb.createCount(); n != 0 {
		t.Fatalf("backend called %d times", n)
	}
}

func TestConfigLimits(t *testing.T) {
	c, err := Config{}.withDefaults()
	if err != nil || c.MaxFetchWait != DefaultMaxFetchWait || c.FetchMaxBytes != DefaultFetchMaxBytes || c.MaxCreatePartitions != DefaultMaxCreatePartitions {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	for _, bad := range []Config{
		{MaxFetchWait: -time.Second},
		{FetchMaxBytes: -1},
		{FetchMaxBytes: 1023},
		{MaxCreatePartitions: -1},
	} {
		if _, err := bad.withDefaults(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: %v, want ErrInvalidConfig", bad, err)
		}
	}
}
