package kafkaapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/producerstate"
	"github.com/minikafka/minikafka-go/record"
)

// txnPartition keeps transaction state and takes markers, answered from
// the fake's producer table.
type txnPartition struct{ *fakePartition }

func (p txnPartition) LastStableOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if first, ok := p.txns.FirstUnstableOffset(); ok {
		return min(first, p.hw)
	}
	return p.hw
}

func (p txnPartition) AbortedTxns(from, to int64) []AbortedTxn {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []AbortedTxn
	for _, a := range producerstate.AbortedIn(p.txns.AbortedTxns(), from, to) {
		out = append(out, AbortedTxn{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
	}
	return out
}

func (p txnPartition) WriteTxnMarker(m TxnMarker) ProduceWait {
	p.mu.Lock()
	defer p.mu.Unlock()
	done := func(res ProduceResult, err error) ProduceWait {
		return func(context.Context) (ProduceResult, error) { return res, err }
	}
	switch v := p.txns.ValidateMarker(m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch); v.Verdict {
	case producerstate.Append:
	case producerstate.CoordinatorFenced:
		return done(ProduceResult{}, kerr.TransactionCoordinatorFenced)
	default:
		return done(ProduceResult{}, kerr.InvalidProducerEpoch)
	}
	typ := record.ControlAbort
	if m.Commit {
		typ = record.ControlCommit
	}
	b := record.AppendEndTxnMarker(nil, m.ProducerID, m.ProducerEpoch, 0, record.EndTxnMarker{Type: typ, CoordinatorEpoch: m.CoordinatorEpoch})
	fp := &fakeProduce{batch: b, done: make(chan struct{})}
	p.commitLocked(fp)
	p.txns.RecordMarker(producerstate.Marker{ProducerID: m.ProducerID, Epoch: m.ProducerEpoch, Commit: m.Commit,
		CoordinatorEpoch: m.CoordinatorEpoch, Offset: fp.res.BaseOffset})
	return done(fp.res, fp.err)
}

// makeTxnBatch is a transactional batch of producer pid.
func makeTxnBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	b := makeProducerBatch(1000, pid, epoch, seq, values...)
	binary.BigEndian.PutUint16(b[21:], binary.BigEndian.Uint16(b[21:])|record.AttrTransactional)
	record.FinishBatch(b)
	return b
}

func writeTxnMarkersRequest(version int16, pid int64, epoch int16, commit bool, topic string, partitions ...int32) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = version
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = pid, epoch, commit
	rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	rt.Topic, rt.Partitions = topic, partitions
	m.Topics = append(m.Topics, rt)
	req.Markers = append(req.Markers, m)
	return req
}

func markerErrors(resp *kmsg.WriteTxnMarkersResponse) []int16 {
	var out []int16
	for _, m := range resp.Markers {
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				out = append(out, p.ErrorCode)
			}
		}
	}
	return out
}

func isolated(req *kmsg.FetchRequest, level int8) *kmsg.FetchRequest {
	req.IsolationLevel = level
	return req
}

// txnLog fills p: a plain batch (0-1), producer 7's open transaction
// (2-3), producer 8's transaction (4) aborted at 5 through
// WriteTxnMarkers, and a plain batch (6).
func txnLog(t *testing.T, c *client, p *fakePartition) {
	t.Helper()
	p.append(makeBatch(1, "a", "b"))
	p.append(makeTxnBatch(7, 0, 0, "t7a", "t7b"))
	p.append(makeTxnBatch(8, 0, 0, "t8"))
	resp := c.roundTrip(writeTxnMarkersRequest(1, 8, 0, false, "t", 0)).(*kmsg.WriteTxnMarkersResponse)
	if errs := markerErrors(resp); len(errs) != 1 || errs[0] != 0 {
		t.Fatalf("ABORT marker: errors %v", errs)
	}
	p.append(makeBatch(2, "c"))
}

// TestFetchReadCommittedStopsAtLastStableOffset: read_committed returns
// data only below the last stable offset, with the aborted transactions
// of the returned range; read_uncommitted returns everything, with the
// last stable offset and a null aborted list; a COMMIT moves the stable
// offset to the high watermark.
func TestFetchReadCommittedStopsAtLastStableOffset(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.set(func(b *fakeBackend) { b.txnParts = true })
	p := h.fb.addTopic("t", 1)[0]
	c := h.dial()
	txnLog(t, c, p)
	batches := p.batches()

	rp := fetch(t, c, isolated(fetchRequest(12, "t", 0, 1, 0), readCommitted)).Topics[0].Partitions[0]
	if rp.ErrorCode != 0 || rp.HighWatermark != 7 || rp.LastStableOffset != 2 || !bytes.Equal(rp.RecordBatches, batches[0]) {
		t.Fatalf("read_committed with 7's transaction open: %+v", rp)
	}
	if rp.AbortedTransactions == nil || len(rp.AbortedTransactions) != 0 {
		t.Fatalf("read_committed aborted list %v, want empty, not null", rp.AbortedTransactions)
	}
	rp = fetch(t, c, isolated(fetchRequest(12, "t", 0, 1, 2), readCommitted)).Topics[0].Partitions[0]
	if rp.ErrorCode != 0 || len(rp.RecordBatches) != 0 {
		t.Fatalf("read_committed at the last stable offset: error %d, %d bytes", rp.ErrorCode, len(rp.RecordBatches))
	}
	for _, v := range []int16{4, 12} {
		rp = fetch(t, c, fetchRequest(v, "t", 0, 1, 0)).Topics[0].Partitions[0]
		if rp.LastStableOffset != 2 || rp.AbortedTransactions != nil || countBatches(t, rp.RecordBatches) != 5 {
			t.Fatalf("v%d read_uncommitted: lso %d, aborted %v, %d batches", v, rp.LastStableOffset, rp.AbortedTransactions, countBatches(t, rp.RecordBatches))
		}
	}

	resp := c.roundTrip(writeTxnMarkersRequest(0, 7, 0, true, "t", 0)).(*kmsg.WriteTxnMarkersResponse)
	if errs := markerErrors(resp); len(errs) != 1 || errs[0] != 0 {
		t.Fatalf("COMMIT marker: errors %v", errs)
	}
	for _, v := range []int16{4, 12} {
		rp = fetch(t, c, isolated(fetchRequest(v, "t", 0, 1, 0), readCommitted)).Topics[0].Partitions[0]
		want := []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 8, FirstOffset: 4}}
		if rp.LastStableOffset != 8 || rp.HighWatermark != 8 || countBatches(t, rp.RecordBatches) != 6 ||
			fmt.Sprint(rp.AbortedTransactions) != fmt.Sprint(want) {
			t.Fatalf("v%d read_committed after the COMMIT: lso %d, %d batches, aborted %+v", v, rp.LastStableOffset, countBatches(t, rp.RecordBatches), rp.AbortedTransactions)
		}
	}
	// From past producer 8's ABORT marker the abort is not listed.
	rp = fetch(t, c, isolated(fetchRequest(12, "t", 0, 1, 6), readCommitted)).Topics[0].Partitions[0]
	if len(rp.AbortedTransactions) != 0 || countBatches(t, rp.RecordBatches) != 2 {
		t.Fatalf("read_committed from 6: aborted %v, %d batches", rp.AbortedTransactions, countBatches(t, rp.RecordBatches))
	}
}

// TestFetchReadCommittedWakesOnMarker: a read_committed fetch waiting at
// the last stable offset returns when a marker moves it.
func TestFetchReadCommittedWakesOnMarker(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.set(func(b *fakeBackend) { b.txnParts = true })
	p := h.fb.addTopic("t", 1)[0]
	p.append(makeTxnBatch(7, 0, 0, "x"))
	c := h.dial()
	done := make(chan *kmsg.FetchResponse, 1)
	go func() {
		done <- fetch(t, c, isolated(fetchRequest(12, "t", failsafe, 1, 0), readCommitted))
	}()
	time.Sleep(20 * time.Millisecond)
	w := txnPartition{p}.WriteTxnMarker(TxnMarker{ProducerID: 7, Commit: true})
	if _, err := w(t.Context()); err != nil {
		t.Fatal(err)
	}
	rp := (<-done).Topics[0].Partitions[0]
	if rp.LastStableOffset != 2 || countBatches(t, rp.RecordBatches) != 2 {
		t.Fatalf("woken fetch: lso %d, %d batches", rp.LastStableOffset, countBatches(t, rp.RecordBatches))
	}
}

// TestListOffsetsIsolation: read_committed's latest offset is the last
// stable offset, and a timestamp lookup finds nothing at or past it.
func TestListOffsetsIsolation(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.set(func(b *fakeBackend) { b.txnParts = true })
	p := h.fb.addTopic("t", 1)[0]
	p.append(makeBatch(100, "a"))             // offset 0, timestamp 100
	p.append(makeTxnBatch(7, 0, 0, "t", "u")) // offsets 1-2, timestamps 1000-1001
	c := h.dial()
	for _, tt := range []struct {
		level    int8
		ts       int64
		want     int64
		wantTime int64
	}{
		{readUncommitted, -1, 3, -1},
		{readCommitted, -1, 1, -1},
		{readUncommitted, 500, 1, 1000},
		{readCommitted, 500, -1, -1},
		{readCommitted, 50, 0, 100},
		{readCommitted, -2, 0, -1},
	} {
		req := listOffsetsRequest(7, "t", -1, tt.ts)
		req.IsolationLevel = tt.level
		rp := c.roundTrip(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		if rp.ErrorCode != 0 || rp.Offset != tt.want || rp.Timestamp != tt.wantTime {
			t.Errorf("isolation %d, timestamp %d: offset %d timestamp %d error %d, want %d %d",
				tt.level, tt.ts, rp.Offset, rp.Timestamp, rp.ErrorCode, tt.want, tt.wantTime)
		}
	}
}

// TestWriteTxnMarkersErrors: per partition, Kafka's errors: an unknown
// partition, a follower, a replica that cannot write markers, a stale
// producer epoch and a stale coordinator epoch.
func TestWriteTxnMarkersErrors(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.set(func(b *fakeBackend) { b.txnParts = true })
	parts := h.fb.addTopic("t", 2)
	parts[0].append(makeTxnBatch(7, 3, 0, "x"))
	parts[1].set(func(p *fakePartition) { p.leader = false })
	c := h.dial()
	resp := c.roundTrip(writeTxnMarkersRequest(1, 7, 3, true, "t", 0, 1, 2)).(*kmsg.WriteTxnMarkersResponse)
	want := []int16{0, kerr.NotLeaderForPartition.Code, kerr.UnknownTopicOrPartition.Code}
	if got := markerErrors(resp); fmt.Sprint(got) != fmt.Sprint(want) || resp.Markers[0].ProducerID != 7 {
		t.Fatalf("errors %v, want %v", got, want)
	}
	resp = c.roundTrip(writeTxnMarkersRequest(1, 7, 2, false, "t", 0)).(*kmsg.WriteTxnMarkersResponse)
	if got := markerErrors(resp); got[0] != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("stale epoch: %v, want INVALID_PRODUCER_EPOCH", got)
	}
	req := writeTxnMarkersRequest(1, 7, 3, false, "t", 0)
	req.Markers[0].CoordinatorEpoch = 4
	c.roundTrip(req)
	req.Markers[0].CoordinatorEpoch = 3
	if got := markerErrors(c.roundTrip(req).(*kmsg.WriteTxnMarkersResponse)); got[0] != kerr.TransactionCoordinatorFenced.Code {
		t.Fatalf("stale coordinator: %v, want TRANSACTION_COORDINATOR_FENCED", got)
	}
	h.fb.set(func(b *fakeBackend) { b.txnParts = false })
	if got := markerErrors(c.roundTrip(writeTxnMarkersRequest(0, 7, 3, true, "t", 0)).(*kmsg.WriteTxnMarkersResponse)); got[0] != kerr.UnsupportedForMessageFormat.Code {
		t.Fatalf("no marker capability: %v", got)
	}
}
