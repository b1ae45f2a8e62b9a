package groupcoord

import (
	"slices"
	"testing"

	"github.com/minikafka/minikafka-go/record"
)

// Transactional offset commits stay pending until their producer's
// marker: COMMIT makes them the group's offsets, ABORT drops them, and
// another producer's marker touches neither.
func TestViewPendingOffsetsFollowMarkers(t *testing.T) {
	v := NewView()
	commit := func(pid int64, group string, off int64) {
		t.Helper()
		r := OffsetRecord(group, "in", 0, Offset{Offset: off, LeaderEpoch: -1, CommitTimestamp: 1})
		if err := v.ApplyTxn(pid, 0, record.Record{Key: r.Key, Value: r.Value}); err != nil {
			t.Fatal(err)
		}
	}
	commit(1, "g", 10)
	commit(2, "h", 20)
	if _, ok := v.Offset("g", "in", 0); ok || !v.Pending("g", "in", 0) {
		t.Fatal("a pending offset is visible, or not pending")
	}
	v.Marker(3, true) // another producer's marker
	v.Marker(1, true)
	if o, ok := v.Offset("g", "in", 0); !ok || o.Offset != 10 || v.Pending("g", "in", 0) {
		t.Fatalf("after COMMIT: %+v %v", o, ok)
	}
	v.Marker(2, false)
	if _, ok := v.Offset("h", "in", 0); ok || v.Pending("h", "in", 0) {
		t.Fatal("an aborted offset became visible or stayed pending")
	}
	// A plain commit after a pending one wins over it at the marker.
	commit(1, "g", 11)
	plain := OffsetRecord("g", "in", 0, Offset{Offset: 12, LeaderEpoch: -1, CommitTimestamp: 2})
	if err := v.Apply(plain.Key, plain.Value); err != nil {
		t.Fatal(err)
	}
	v.Marker(1, true)
	if o, _ := v.Offset("g", "in", 0); o.Offset != 12 {
		t.Fatalf("the marker overwrote a later plain commit: %d", o.Offset)
	}
	commit(1, "g", 13)
	if err := v.Restore(NewView().AppendSnapshot(nil)); err != nil {
		t.Fatal(err)
	}
	if v.Pending("g", "in", 0) {
		t.Fatal("Restore kept pending offsets")
	}
	if err := v.ApplyTxn(1, 0, record.Record{Key: AppendGroupKey(nil, "g")}); err == nil {
		t.Fatal("a transactional group metadata record was applied")
	}
}

// PendingTxns names each producer with commits pending, by producer id:
// the newest epoch of its batches, the transactional id that
// AppendTxnBatch's header gives (none for a record without it), and its
// oldest commit's time; a marker ends the producer's entry.
func TestViewPendingTxns(t *testing.T) {
	v := NewView()
	batch, err := AppendTxnBatch(nil, Txn{TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2}, []Record{
		OffsetRecord("g", "in", 0, Offset{Offset: 1, LeaderEpoch: -1, CommitTimestamp: 100}),
		OffsetRecord("g", "in", 1, Offset{Offset: 1, LeaderEpoch: -1, CommitTimestamp: 90}),
	}, 100)
	if err != nil {
		t.Fatal(err)
	}
	h, err := record.ParseHeader(batch)
	if err != nil || h.ProducerID != 7 || h.ProducerEpoch != 2 || !h.IsTransactional() || h.BaseSequence != record.NoSequence {
		t.Fatalf("AppendTxnBatch's header: %+v, %v", h, err)
	}
	recs, err := record.AppendRecords(nil, batch)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := v.ApplyTxn(h.ProducerID, h.ProducerEpoch, r); err != nil {
			t.Fatal(err)
		}
	}
	unnamed := OffsetRecord("h", "in", 0, Offset{Offset: 5, LeaderEpoch: -1, CommitTimestamp: 50})
	if err := v.ApplyTxn(9, 0, record.Record{Key: unnamed.Key, Value: unnamed.Value}); err != nil {
		t.Fatal(err)
	}
	want := []PendingTxn{
		{ProducerID: 7, ProducerEpoch: 2, TransactionalID: "tx", Since: 90},
		{ProducerID: 9, ProducerEpoch: 0, Since: 50},
	}
	if got := v.PendingTxns(); !slices.Equal(got, want) {
		t.Fatalf("PendingTxns: %+v, want %+v", got, want)
	}
	v.Marker(7, false)
	if got := v.PendingTxns(); !slices.Equal(got, want[1:]) {
		t.Fatalf("PendingTxns after producer 7's ABORT: %+v, want %+v", got, want[1:])
	}
}
