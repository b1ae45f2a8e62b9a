package txncoord

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestEndTxnV2BumpsEpoch: EndTxn v5 bumps the epoch at every end, writes
// the markers with the bumped epoch and version 2, answers a retry with
// the old epoch as the original, allows an empty abort, and fences the
// old epoch.
func TestEndTxnV2BumpsEpoch(t *testing.T) {
	ctx := context.Background()
	view, mk := NewView(), &memMarkers{}
	c := newTestCoordinator(t, view, mk, Config{})
	pid, epoch, err := c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	parts := []TopicPartition{{"a", 0}, {"b", 1}}
	if err := c.addPartitions(ctx, "t", pid, epoch, parts, TxnVersion2); err != nil {
		t.Fatal(err)
	}
	npid, nepoch, err := c.EndTxnV2(ctx, "t", pid, epoch, true)
	if err != nil || npid != pid || nepoch != epoch+1 {
		t.Fatalf("commit: %d/%d %v, want %d/%d", npid, nepoch, err, pid, epoch+1)
	}
	m := waitState(t, view, "t", CompleteCommit)
	if m.ProducerEpoch != epoch+1 || m.TxnVersion != TxnVersion2 {
		t.Fatalf("after the commit: %+v", m)
	}
	if mk.count() != 2 || mk.written[0].ProducerEpoch != epoch+1 || mk.written[0].TxnVersion != TxnVersion2 {
		t.Fatalf("markers %+v, want epoch %d version 2", mk.written, epoch+1)
	}
	// A retry with the epoch of the ended transaction is answered as the
	// original was; an abort with it is not.
	if rp, re, err := c.EndTxnV2(ctx, "t", pid, epoch, true); err != nil || rp != pid || re != epoch+1 {
		t.Fatalf("retried commit: %d/%d %v", rp, re, err)
	}
	if _, _, err := c.EndTxnV2(ctx, "t", pid, epoch, false); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("abort with the old epoch after the commit: %v", err)
	}
	// The old epoch is fenced everywhere else.
	if err := c.addPartitions(ctx, "t", pid, epoch, parts, TxnVersion2); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("add with the old epoch: %v", err)
	}
	// An abort with nothing ongoing bumps the epoch and writes no marker.
	before := mk.count()
	if ap, ae, err := c.EndTxnV2(ctx, "t", pid, epoch+1, false); err != nil || ap != pid || ae != epoch+2 {
		t.Fatalf("empty abort: %d/%d %v", ap, ae, err)
	}
	waitState(t, view, "t", CompleteAbort)
	if mk.count() != before {
		t.Fatalf("an empty abort wrote %d markers", mk.count()-before)
	}
	if _, _, err := c.EndTxnV2(ctx, "t", pid, epoch+2, true); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("commit with nothing ongoing: %v", err)
	}
	// A late retry with an older epoch once the next transaction runs is
	// fenced.
	if err := c.addPartitions(ctx, "t", pid, epoch+2, parts, TxnVersion2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.EndTxnV2(ctx, "t", pid, epoch+1, false); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("a retry of the empty abort during the next transaction: %v, want PRODUCER_FENCED", err)
	}
	// The record carries the version: a new view of the same records
	// (another coordinator) knows it.
	if got, _ := view.Txn("t"); got.TxnVersion != TxnVersion2 {
		t.Fatalf("version %d in the view", got.TxnVersion)
	}
}

// TestEndTxnV2EpochOverflow: a bump to the last epoch writes the markers
// with it and completes under a new producer id at epoch 0, which the
// response names; a retry with the previous identity still succeeds.
func TestEndTxnV2EpochOverflow(t *testing.T) {
	ctx := context.Background()
	view, mk := NewView(), &memMarkers{}
	c := newTestCoordinator(t, view, mk, Config{})
	pid, _, err := c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	last := int16(math.MaxInt16 - 1)
	m, _ := view.Txn("t")
	m.ProducerEpoch = last
	if err := c.write(ctx, "t", m); err != nil {
		t.Fatal(err)
	}
	if err := c.addPartitions(ctx, "t", pid, last, []TopicPartition{{"a", 0}}, TxnVersion2); err != nil {
		t.Fatal(err)
	}
	npid, nepoch, err := c.EndTxnV2(ctx, "t", pid, last, true)
	if err != nil || npid == pid || nepoch != 0 {
		t.Fatalf("commit at the last epoch: %d/%d %v, want a new id at 0", npid, nepoch, err)
	}
	got := waitState(t, view, "t", CompleteCommit)
	if got.ProducerID != npid || got.ProducerEpoch != 0 || got.PrevProducerID != pid {
		t.Fatalf("after the overflow: %+v", got)
	}
	if mk.written[0].ProducerID != pid || mk.written[0].ProducerEpoch != math.MaxInt16 {
		t.Fatalf("marker %+v, want %d at %d", mk.written[0], pid, math.MaxInt16)
	}
	if rp, re, err := c.EndTxnV2(ctx, "t", pid, last, true); err != nil || rp != npid || re != 0 {
		t.Fatalf("retry after the overflow: %d/%d %v", rp, re, err)
	}
	if err := c.addPartitions(ctx, "t", npid, 0, []TopicPartition{{"a", 0}}, TxnVersion2); err != nil {
		t.Fatalf("the new producer id's next transaction: %v", err)
	}
}

// TestEndTxnV2SurvivesFailover: a new coordinator built from the records
// of one that stopped after writing PrepareCommit (markers not written)
// finishes the transaction with the bumped epoch and version 2, and the
// new producer id of an overflow.
func TestEndTxnV2SurvivesFailover(t *testing.T) {
	view := NewView()
	m := Metadata{ProducerID: 2000, ProducerEpoch: math.MaxInt16, TimeoutMillis: 60000, State: PrepareCommit,
		Partitions: []TopicPartition{{"a", 0}}, Start: 1, TxnVersion: TxnVersion2, NextProducerID: 3000}
	r := MetadataRecord("t", m)
	if err := view.Apply(r.Key, r.Value); err != nil {
		t.Fatal(err)
	}
	mk := &memMarkers{}
	newTestCoordinator(t, view, mk, Config{})
	got := waitState(t, view, "t", CompleteCommit)
	if got.ProducerID != 3000 || got.ProducerEpoch != 0 || got.PrevProducerID != 2000 || got.NextProducerID != 0 {
		t.Fatalf("completed by the new coordinator: %+v", got)
	}
	if mk.count() != 1 || mk.written[0].ProducerEpoch != math.MaxInt16 || mk.written[0].TxnVersion != TxnVersion2 {
		t.Fatalf("markers %+v", mk.written)
	}
}
