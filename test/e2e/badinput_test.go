package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/record"
)

// badCase is one case of the bad-input suite. run returns a note for the
// memory table.
type badCase struct {
	name string
	run  func(ctx context.Context, t *testing.T, e *badEnv) string
}

// TestBadInput sends a real 3-node cluster, started from config files,
// input a hostile or broken client could send (issue 13). Each case must
// get Kafka's error or a closed connection; after each, the known records
// must be stored byte for byte as before with the same high watermark, the
// node must still serve a produce and a fetch, and no node may have held
// more than memoryBound resident meanwhile. The peak resident memory of
// every node during each case is logged as a table at the end.
func TestBadInput(t *testing.T) {
	ctx := testContext(t, 5*time.Minute)
	e := startBadEnv(ctx, t)
	var tab memoryTable
	t.Cleanup(func() { t.Logf("peak RSS per case (VmHWM, reset before each case), MiB:\n%s", &tab) })
	e.resetPeaks(t)
	e.recordPeaks(t, &tab, "baseline (after setup)", "")

	cases := []badCase{
		{"produce claims 2^31-1 records", caseClaimedRecords},
		{"produce count/delta mismatch", caseCountDeltaMismatch},
		{"produce 100 MiB request", caseHugeRequest},
		{"produce 2 MiB record, topic max 1 MiB", caseRecordTooLarge},
		{"create 1,000,000 partitions", caseManyPartitions},
		{"create replication factor 7", caseManyReplicas},
		{"fetch max wait/bytes, with data", caseFetchHugeWithData},
		{"fetch max wait, empty partition", caseFetchHugeEmpty},
		{"raft port forged frames", caseRaftForgery},
		{"idle connections", caseIdleConnections},
	}
	for _, bc := range cases {
		e.resetPeaks(t)
		note := ""
		t.Run(bc.name, func(t *testing.T) {
			defer func() {
				switch {
				case t.Skipped():
					note = "skipped"
				case t.Failed():
					note = "FAILED " + note
				}
			}()
			note = bc.run(ctx, t, e)
			e.checkUnchanged(ctx, t)
			e.serves(ctx, t)
		})
		e.recordPeaks(t, &tab, bc.name, note)
	}
}

// Offsets of the v2 batch header fields the forgeries rewrite.
const (
	batchLastOffsetDelta = 23
	batchRecordCount     = 57
)

// forgedCountBatch is a batch of one record whose header claims count
// records and lastOffsetDelta, with a valid CRC.
func forgedCountBatch(t *testing.T, count, lastOffsetDelta int32) []byte {
	t.Helper()
	b, err := record.AppendBatch(nil, record.PlainBatch(record.CompressionNone),
		[]record.Record{{Timestamp: 1_700_000_000_000, Key: []byte("forged"), Value: []byte("one record")}})
	must(t, err)
	binary.BigEndian.PutUint32(b[batchLastOffsetDelta:], uint32(lastOffsetDelta))
	binary.BigEndian.PutUint32(b[batchRecordCount:], uint32(count))
	record.FinishBatch(b)
	h, err := record.ParseHeader(b)
	if h.NumRecords != count || h.LastOffsetDelta != lastOffsetDelta {
		t.Fatalf("forged header %+v (%v), want count %d, last offset delta %d", h, err, count, lastOffsetDelta)
	}
	return b
}

// wantProduceError fails the test unless a produce answer carries want.
func wantProduceError(t *testing.T, p kmsg.ProduceResponseTopicPartition, want *kerr.Error) string {
	t.Helper()
	got := kerr.ErrorForCode(p.ErrorCode)
	if !errors.Is(got, want) {
		t.Fatalf("answered %v (offset %d), want %v", got, p.BaseOffset, want)
	}
	return fmt.Sprintf("answered %s", want.Message)
}

// caseClaimedRecords: a consistent header (count 2^31-1, lastOffsetDelta
// 2^31-2) over one record. Kafka's record iterator runs out of bytes:
// InvalidRecordException, INVALID_RECORD.
func caseClaimedRecords(ctx context.Context, t *testing.T, e *badEnv) string {
	batch := forgedCountBatch(t, math.MaxInt32, math.MaxInt32-1)
	return wantProduceError(t, produceBatch(ctx, t, e.c, topicKnown, batch), kerr.InvalidRecord)
}

// caseCountDeltaMismatch: count 2^31-1 with lastOffsetDelta 0. Kafka's
// LogValidator.validateBatch: "Inconsistent batch offset range ... and
// count of records", an InvalidRecordException: INVALID_RECORD.
func caseCountDeltaMismatch(ctx context.Context, t *testing.T, e *badEnv) string {
	batch := forgedCountBatch(t, math.MaxInt32, 0)
	return wantProduceError(t, produceBatch(ctx, t, e.c, topicKnown, batch), kerr.InvalidRecord)
}

// Offsets of the v2 batch header fields a hand-made batch fills in.
const (
	batchLength     = 8
	batchCRC        = 17
	batchAttributes = 21
)

// hugeProduceRequest is a Produce v8 request of one batch holding one
// record with a zero value of size bytes, as pieces to write in order: the
// value is never copied (copies of 100 MiB are slow under the race
// detector).
func hugeProduceRequest(t *testing.T, topic string, size int) net.Buffers {
	t.Helper()
	value := make([]byte, size)
	head := []byte{0}                    // attributes
	head = binary.AppendVarint(head, 0)  // timestamp delta
	head = binary.AppendVarint(head, 0)  // offset delta
	head = binary.AppendVarint(head, -1) // null key
	head = binary.AppendVarint(head, int64(size))
	tail := binary.AppendVarint(nil, 0) // no headers
	rec := binary.AppendVarint(nil, int64(len(head)+size+len(tail)))
	rec = append(rec, head...)
	// The batch header of one record, with the length and CRC of this one.
	small, err := record.AppendBatch(nil, record.PlainBatch(record.CompressionNone), []record.Record{{Timestamp: 1_700_000_000_000}})
	must(t, err)
	hdr := small[:record.HeaderSize:record.HeaderSize]
	batchLen := record.HeaderSize + len(rec) + size + len(tail)
	binary.BigEndian.PutUint32(hdr[batchLength:], uint32(batchLen-record.LogOverhead))
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	crc := crc32.Checksum(hdr[batchAttributes:], castagnoli)
	for _, b := range [][]byte{rec, value, tail} {
		crc = crc32.Update(crc, castagnoli, b)
	}
	binary.BigEndian.PutUint32(hdr[batchCRC:], crc)

	// The request with empty records ends with their int32 length: put
	// the batch's there, and fix the frame's size.
	req := produceRequest(topic, []byte{})
	req.SetVersion(8)
	b := kmsg.NewRequestFormatter(kmsg.FormatterClientID("e2e")).AppendRequest(nil, req, 1)
	if !bytes.HasSuffix(b, []byte{0, 0, 0, 0}) {
		t.Fatalf("produce v8 request does not end with its records: %x", b)
	}
	b = binary.BigEndian.AppendUint32(b[:len(b)-4], uint32(batchLen))
	binary.BigEndian.PutUint32(b, uint32(len(b)-4+batchLen))
	return net.Buffers{b, hdr, rec, value, tail}
}

// caseHugeRequest: one 100 MiB record to topicLimited. The request frame
// is over socket.request.max.bytes (100 MiB), so the node closes the
// connection after reading the frame's size, without reading or storing
// the body.
func caseHugeRequest(ctx context.Context, t *testing.T, e *badEnv) string {
	req := hugeProduceRequest(t, topicLimited, 100<<20)
	l, err := e.c.Leader(ctx, topicLimited, 0)
	must(t, err)
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", e.c.Node(l.Node).KafkaAddr)
	must(t, err)
	defer nc.Close()
	must(t, nc.SetDeadline(time.Now().Add(time.Minute)))
	size := binary.BigEndian.Uint32(req[0])
	if _, err = req.WriteTo(nc); err == nil {
		var b [64]byte
		var n int
		if n, err = nc.Read(b[:]); err == nil {
			t.Fatalf("a request of %s was answered: %x...", mib(int64(size)), b[:n])
		}
	}
	if !closedByPeer(err) {
		t.Fatalf("a request of %s: %v, want the connection closed by the node", mib(int64(size)), err)
	}
	return fmt.Sprintf("request of %s: connection closed", mib(int64(size)))
}

// caseRecordTooLarge: one 2 MiB record to topicLimited, whose
// max.message.bytes is 1 MiB: MESSAGE_TOO_LARGE.
func caseRecordTooLarge(ctx context.Context, t *testing.T, e *badEnv) string {
	batch, err := record.AppendBatch(nil, record.PlainBatch(record.CompressionNone),
		[]record.Record{{Timestamp: 1_700_000_000_000, Value: make([]byte, 2<<20)}})
	must(t, err)
	return wantProduceError(t, produceBatch(ctx, t, e.c, topicLimited, batch), kerr.MessageTooLarge)
}

// createTopic sends one CreateTopics request for one topic to the
// controller and returns the topic's error.
func (e *badEnv) createTopic(ctx context.Context, t *testing.T, name string, partitions int32, rf int16) error {
	t.Helper()
	md, err := e.c.Metadata(ctx, 1)
	must(t, err)
	if md.ControllerID < 1 || int(md.ControllerID) > NodeCount {
		t.Fatalf("no controller in metadata: %d", md.ControllerID)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 10_000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = name
	rt.NumPartitions = partitions
	rt.ReplicationFactor = rf
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := Request(rctx, e.c.Node(int(md.ControllerID)).KafkaAddr, req)
	must(t, err)
	ct := resp.(*kmsg.CreateTopicsResponse)
	if len(ct.Topics) != 1 || ct.Topics[0].Topic != name {
		t.Fatalf("malformed CreateTopics answer %+v", ct)
	}
	return kerr.ErrorForCode(ct.Topics[0].ErrorCode)
}

// wantNotCreated fails the test if any node lists a topic it did not list
// before.
func (e *badEnv) wantNotCreated(ctx context.Context, t *testing.T, before []string) {
	t.Helper()
	slices.Sort(before)
	for id := 1; id <= NodeCount; id++ {
		now := e.topicNames(ctx, t, id)
		slices.Sort(now)
		if !slices.Equal(now, before) {
			t.Fatalf("node %d lists topics %v, before %v", id, now, before)
		}
	}
}

// caseManyPartitions: CreateTopics of 1,000,000 partitions. Kafka's
// controller refuses an excessively large batch operation
// (POLICY_VIOLATION); INVALID_PARTITIONS would be Kafka's too.
func caseManyPartitions(ctx context.Context, t *testing.T, e *badEnv) string {
	before := e.topicNames(ctx, t, 1)
	err := e.createTopic(ctx, t, "million", 1_000_000, 3)
	if !errors.Is(err, kerr.PolicyViolation) && !errors.Is(err, kerr.InvalidPartitions) {
		t.Fatalf("1,000,000 partitions: %v, want POLICY_VIOLATION or INVALID_PARTITIONS", err)
	}
	e.wantNotCreated(ctx, t, before)
	return fmt.Sprintf("answered %v", err)
}

// caseManyReplicas: replication factor 7 on 3 nodes:
// INVALID_REPLICATION_FACTOR.
func caseManyReplicas(ctx context.Context, t *testing.T, e *badEnv) string {
	before := e.topicNames(ctx, t, 1)
	err := e.createTopic(ctx, t, "seven", 1, 7)
	if !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Fatalf("replication factor 7 on 3 nodes: %v, want INVALID_REPLICATION_FACTOR", err)
	}
	e.wantNotCreated(ctx, t, before)
	return fmt.Sprintf("answered %v", err)
}

// fetchCap is the node's fetch.max.bytes (kafkaapi.DefaultFetchMaxBytes).
const fetchCap = 55 << 20

// caseFetchHugeWithData: a Fetch of topicKnown asking to wait 2^31-1 ms
// for up to 2 GiB. There is data, so the answer comes at once, with at
// most fetchCap bytes: the known records.
func caseFetchHugeWithData(ctx context.Context, t *testing.T, e *badEnv) string {
	l, err := e.c.Leader(ctx, topicKnown, 0)
	must(t, err)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	resp, err := Request(rctx, e.c.Node(l.Node).KafkaAddr, fetchRequest(topicKnown, 0, math.MaxInt32, math.MaxInt32, math.MaxInt32))
	if err != nil {
		t.Fatalf("fetch with MaxWaitMillis and MaxBytes 2^31-1 not answered in 10s: %v", err)
	}
	took := time.Since(start)
	p, err := fetchPartition(resp)
	must(t, err)
	if len(p.RecordBatches) > fetchCap {
		t.Fatalf("fetch answered %d bytes, over the %d cap", len(p.RecordBatches), fetchCap)
	}
	if !bytes.Equal(p.RecordBatches, e.stored[topicKnown].batches) {
		t.Fatalf("fetch answered %d bytes, not the %d stored", len(p.RecordBatches), len(e.stored[topicKnown].batches))
	}
	note := fmt.Sprintf("answered in %v, %d bytes", took.Round(time.Millisecond), len(p.RecordBatches))
	if longRun() {
		note += "; " + fetchOverCap(ctx, t, e)
	}
	return note
}

// fetchOverCap stores more than fetchCap in a topic of its own, in 1 MiB
// batches, and checks that the same Fetch answers at most fetchCap bytes
// of whole batches from offset 0.
func fetchOverCap(ctx context.Context, t *testing.T, e *badEnv) string {
	const topic, batches = "big", fetchCap/(1<<20) + 5
	adm, err := client.NewAdmin(client.Brokers(e.c.Seeds()...), client.RequestTimeout(10*time.Second))
	must(t, err)
	defer adm.Close()
	must(t, adm.CreateTopic(ctx, topic, 1, 3, nil))
	must(t, e.c.WaitReady(ctx, topic))
	value := make([]byte, 1<<20-128)
	for i := range batches {
		batch, err := record.AppendBatch(nil, record.PlainBatch(record.CompressionNone),
			[]record.Record{{Timestamp: 1_700_000_000_000, Value: value}})
		must(t, err)
		if p := produceBatch(ctx, t, e.c, topic, batch); p.ErrorCode != 0 || p.BaseOffset != int64(i) {
			t.Fatalf("%s: batch %d: offset %d, %v", topic, i, p.BaseOffset, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	l, err := e.c.Leader(ctx, topic, 0)
	must(t, err)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := Request(rctx, e.c.Node(l.Node).KafkaAddr, fetchRequest(topic, 0, math.MaxInt32, math.MaxInt32, math.MaxInt32))
	must(t, err)
	p, err := fetchPartition(resp)
	must(t, err)
	n := 0
	for b := p.RecordBatches; len(b) > 0; n++ {
		_, rest, h, err := record.Next(b)
		must(t, err)
		if h.BaseOffset != int64(n) {
			t.Fatalf("%s: batch %d at offset %d", topic, n, h.BaseOffset)
		}
		b = rest
	}
	if len(p.RecordBatches) > fetchCap || n == 0 {
		t.Fatalf("%s: a fetch of 2 GiB answered %d bytes in %d batches; want at most %d", topic, len(p.RecordBatches), n, fetchCap)
	}
	return fmt.Sprintf("over %d MiB stored, %d batches (%s) answered", batches, n, mib(int64(len(p.RecordBatches))))
}

// maxFetchWait is the node's bound on a Fetch's wait
// (kafkaapi.DefaultMaxFetchWait; the node has no config key for it).
const maxFetchWait = 30 * time.Second

// caseFetchHugeEmpty: the same Fetch of topicEmpty, which has no data: it
// waits, but not 24 days. The short run checks that it is still waiting
// after a second; the long run (MINIKAFKA_E2E_LONG=1) that it is answered,
// empty, after maxFetchWait.
func caseFetchHugeEmpty(ctx context.Context, t *testing.T, e *badEnv) string {
	l, err := e.c.Leader(ctx, topicEmpty, 0)
	must(t, err)
	conn, err := Dial(ctx, e.c.Node(l.Node).KafkaAddr)
	must(t, err)
	defer conn.Close()
	must(t, conn.Send(fetchRequest(topicEmpty, 0, math.MaxInt32, math.MaxInt32, math.MaxInt32)))
	start := time.Now()
	if !longRun() {
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		resp, err := conn.Receive(wctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("fetch of an empty partition answered within a second: %+v, %v; want it waiting", resp, err)
		}
		return "still waiting after 1s (the 30s bound is checked by make e2e)"
	}
	wctx, cancel := context.WithTimeout(ctx, maxFetchWait+10*time.Second)
	defer cancel()
	resp, err := conn.Receive(wctx)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("fetch of an empty partition not answered after %v: %v", took, err)
	}
	p, err := fetchPartition(resp)
	must(t, err)
	if len(p.RecordBatches) != 0 || took < maxFetchWait-time.Second {
		t.Fatalf("fetch of an empty partition answered after %v with %d bytes; want none after %v", took, len(p.RecordBatches), maxFetchWait)
	}
	return fmt.Sprintf("answered empty after %v", took.Round(time.Millisecond))
}
