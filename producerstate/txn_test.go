package producerstate

import (
	"encoding/binary"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/minikafka/minikafka-go/record"
)

// txnHdr is a transactional batch header.
func txnHdr(pid int64, epoch int16, seq, count int32, offset int64) record.Header {
	h := hdr(pid, epoch, seq, count, offset)
	h.Attributes = record.AttrTransactional
	return h
}

func marker(pid int64, epoch int16, commit bool, coord int32, offset int64) Marker {
	return Marker{ProducerID: pid, Epoch: epoch, Commit: commit, CoordinatorEpoch: coord, Offset: offset, Timestamp: offset * 10}
}

// mustMark validates and records m, failing unless the verdict is Append;
// it returns whether a transaction ended.
func mustMark(t *testing.T, tab *Table, m Marker) bool {
	t.Helper()
	if r := tab.ValidateMarker(m.ProducerID, m.Epoch, m.CoordinatorEpoch); r.Verdict != Append {
		t.Fatalf("ValidateMarker(%+v) = %+v, want Append", m, r)
	}
	return tab.RecordMarker(m)
}

func firstUnstable(tab *Table) int64 {
	if off, ok := tab.FirstUnstableOffset(); ok {
		return off
	}
	return -1
}

// TestTransactionsOpenCommitAbort walks two producers' transactions
// through a partition: the first transactional batch opens one and sets
// the first unstable offset, later ones continue it, COMMIT ends it, ABORT
// ends it and indexes it, and the oldest open transaction is always the
// first unstable offset.
func TestTransactionsOpenCommitAbort(t *testing.T) {
	tab := New(DefaultWindow)
	steps := []struct {
		do       func()
		unstable int64 // FirstUnstableOffset, -1 for none
		ongoing  []OngoingTxn
		aborted  []AbortedTxn
	}{
		{do: func() { mustAppend(t, tab, hdr(1, 0, 0, 2, 0)) }, unstable: -1}, // idempotent, no transaction
		{do: func() { mustAppend(t, tab, txnHdr(1, 0, 2, 1, 2)) }, unstable: 2,
			ongoing: []OngoingTxn{{1, 2}}},
		{do: func() { mustAppend(t, tab, txnHdr(2, 0, 0, 3, 3)) }, unstable: 2,
			ongoing: []OngoingTxn{{1, 2}, {2, 3}}},
		{do: func() { mustAppend(t, tab, txnHdr(1, 0, 3, 1, 6)) }, unstable: 2, // continues, first offset stays
			ongoing: []OngoingTxn{{1, 2}, {2, 3}}},
		{do: func() {
			if !mustMark(t, tab, marker(1, 0, true, 0, 7)) {
				t.Fatal("COMMIT ended no transaction")
			}
		}, unstable: 3, ongoing: []OngoingTxn{{2, 3}}},
		{do: func() { mustMark(t, tab, marker(2, 0, false, 0, 8)) }, unstable: -1,
			aborted: []AbortedTxn{{2, 3, 8}}},
		{do: func() { mustAppend(t, tab, txnHdr(2, 0, 3, 1, 9)) }, unstable: 9, // a new transaction
			ongoing: []OngoingTxn{{2, 9}}, aborted: []AbortedTxn{{2, 3, 8}}},
		{do: func() { mustMark(t, tab, marker(2, 0, false, 0, 10)) }, unstable: -1,
			aborted: []AbortedTxn{{2, 3, 8}, {2, 9, 10}}},
	}
	for i, s := range steps {
		s.do()
		if got := firstUnstable(tab); got != s.unstable {
			t.Fatalf("step %d: first unstable offset %d, want %d", i, got, s.unstable)
		}
		if got := tab.Ongoing(); !slices.Equal(got, s.ongoing) {
			t.Fatalf("step %d: ongoing %v, want %v", i, got, s.ongoing)
		}
		if got := tab.AbortedTxns(); !slices.Equal(got, s.aborted) {
			t.Fatalf("step %d: aborted %v, want %v", i, got, s.aborted)
		}
		again, err := Decode(tab.AppendEncode(nil))
		if err != nil || !again.Equal(tab) {
			t.Fatalf("step %d: encoding round trip: %v", i, err)
		}
	}
	if e, _ := tab.Lookup(1); e.TxnFirstOffset != -1 || e.CoordinatorEpoch != 0 || e.LastTimestamp != 70 {
		t.Fatalf("producer 1 after its commit: %+v", e)
	}
}

// TestMarkerRules: Kafka's checks on a marker and what it does to the
// producer's entry.
func TestMarkerRules(t *testing.T) {
	tab := New(DefaultWindow)
	mustAppend(t, tab, txnHdr(1, 3, 0, 1, 0))
	if r := tab.ValidateMarker(1, 2, 0); r.Verdict != Fenced || r.Epoch != 3 {
		t.Fatalf("older epoch: %+v, want Fenced at epoch 3", r)
	}
	if r := tab.ValidateMarker(9, -1, 0); r.Verdict != Fenced {
		t.Fatalf("negative epoch: %+v, want Fenced", r)
	}
	mustMark(t, tab, marker(1, 3, false, 5, 1))
	if r := tab.ValidateMarker(1, 3, 4); r.Verdict != CoordinatorFenced || r.CoordinatorEpoch != 5 {
		t.Fatalf("older coordinator epoch: %+v, want CoordinatorFenced at 5", r)
	}
	// A marker with no open transaction is written and ends nothing.
	if mustMark(t, tab, marker(1, 3, true, 5, 2)) {
		t.Fatal("a marker without an open transaction ended one")
	}
	if got := tab.AbortedTxns(); len(got) != 1 {
		t.Fatalf("aborted %v after an empty marker", got)
	}
	// A marker with a new epoch (the coordinator's abort after a new
	// InitProducerId) takes the epoch and empties the window: the old
	// epoch is fenced and the new one starts at sequence 0.
	mustMark(t, tab, marker(1, 4, false, 5, 3))
	if r := tab.Validate(txnHdr(1, 3, 1, 1, 4)); r.Verdict != Fenced {
		t.Fatalf("zombie batch: %+v, want Fenced", r)
	}
	if r := tab.Validate(txnHdr(1, 4, 1, 1, 4)); r.Verdict != OutOfOrder || r.Expected != 0 {
		t.Fatalf("new epoch at sequence 1: %+v, want OutOfOrder expecting 0", r)
	}
	mustAppend(t, tab, txnHdr(1, 4, 0, 1, 4))
	// An unknown producer's marker makes an entry that fences older epochs.
	mustMark(t, tab, marker(7, 2, false, 0, 5))
	if e, ok := tab.Lookup(7); !ok || e.Epoch != 2 || len(e.Batches) != 0 || e.TxnFirstOffset != -1 {
		t.Fatalf("producer 7 after a marker: %+v, %v", e, ok)
	}
	if r := tab.Validate(txnHdr(7, 1, 0, 1, 6)); r.Verdict != Fenced {
		t.Fatalf("producer 7 at an older epoch: %+v, want Fenced", r)
	}
	again, err := Decode(tab.AppendEncode(nil))
	if err != nil || !again.Equal(tab) {
		t.Fatalf("encoding round trip with an empty window: %v", err)
	}
}

// TestNonTransactionalBatchInOpenTransaction: Kafka refuses it with
// INVALID_TXN_STATE; an exact retry is still a duplicate.
func TestNonTransactionalBatchInOpenTransaction(t *testing.T) {
	tab := New(DefaultWindow)
	mustAppend(t, tab, txnHdr(1, 0, 0, 1, 0))
	if r := tab.Validate(hdr(1, 0, 1, 1, 1)); r.Verdict != TxnStateInvalid {
		t.Fatalf("idempotent batch in a transaction: %+v, want TxnStateInvalid", r)
	}
	if r := tab.Validate(hdr(1, 0, 0, 1, 1)); r.Verdict != Duplicate {
		t.Fatalf("retry: %+v, want Duplicate", r)
	}
	mustMark(t, tab, marker(1, 0, true, 0, 1))
	mustAppend(t, tab, hdr(1, 0, 1, 1, 2))
}

// TestExpireKeepsOpenTransactions: as Kafka, a producer with an open
// transaction never expires, however idle.
func TestExpireKeepsOpenTransactions(t *testing.T) {
	tab := New(DefaultWindow)
	h := txnHdr(1, 0, 0, 1, 0)
	h.MaxTimestamp = 100
	mustAppend(t, tab, h)
	mustAppend(t, tab, at(2, 0, 1, 100))
	if n := tab.Expire(10_000, 1000); n != 1 || tab.Len() != 1 {
		t.Fatalf("Expire removed %d, %d left; want producer 2 only", n, tab.Len())
	}
	tab.RecordMarker(Marker{ProducerID: 1, Commit: true, Offset: 2, Timestamp: 200})
	if n := tab.Expire(10_000, 1000); n != 1 {
		t.Fatalf("after its commit producer 1 did not expire (%d)", n)
	}
}

// TestAbortedIndexQueriesAndTrim: AbortedIn lists the transactions that
// overlap a fetched range; TrimAborted drops those wholly below a new log
// start without touching a slice handed out before.
func TestAbortedIndexQueriesAndTrim(t *testing.T) {
	tab := New(DefaultWindow)
	for i, tx := range []struct{ first, last int64 }{{0, 4}, {2, 10}, {11, 12}, {13, 20}} {
		pid := int64(i + 1)
		mustAppend(t, tab, txnHdr(pid, 0, 0, 1, tx.first))
		tab.RecordMarker(marker(pid, 0, false, 0, tx.last))
	}
	index := tab.AbortedTxns()
	tests := []struct {
		from, to int64
		pids     []int64
	}{
		{0, 1, []int64{1}},
		{0, 3, []int64{1, 2}},
		{5, 11, []int64{2}},
		{5, 12, []int64{2, 3}},
		{12, 13, []int64{3}},
		{21, 30, nil},
		{0, 100, []int64{1, 2, 3, 4}},
	}
	for _, tt := range tests {
		var pids []int64
		for _, a := range AbortedIn(index, tt.from, tt.to) {
			pids = append(pids, a.ProducerID)
		}
		if !slices.Equal(pids, tt.pids) {
			t.Errorf("AbortedIn [%d, %d) = %v, want %v", tt.from, tt.to, pids, tt.pids)
		}
	}
	before := slices.Clone(index)
	tab.TrimAborted(11)
	if got := tab.AbortedTxns(); !slices.Equal(got, before[2:]) {
		t.Fatalf("after trim to 11: %v", got)
	}
	if !slices.Equal(index, before) {
		t.Fatal("TrimAborted changed a slice handed out before")
	}
}

// TestDecodeFormat2HasNoTransactions: a table written before transactions
// decodes with none open or aborted, and is re-encoded as format 3.
func TestDecodeFormat2HasNoTransactions(t *testing.T) {
	b := []byte{formatVersionV2, 0, 5, 0, 0, 0, 1}
	b = binary.BigEndian.AppendUint64(b, 7) // producer 7
	b = append(b, 0, 1, 0, 1)               // epoch 1, one batch
	b = binary.BigEndian.AppendUint64(b, 500)
	b = binary.BigEndian.AppendUint32(b, 0) // first sequence
	b = binary.BigEndian.AppendUint32(b, 0) // last sequence
	b = binary.BigEndian.AppendUint64(b, 42)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	tab, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode(format 2): %v", err)
	}
	e, ok := tab.Lookup(7)
	if !ok || e.Epoch != 1 || e.LastTimestamp != 500 || e.TxnFirstOffset != -1 || e.CoordinatorEpoch != -1 {
		t.Fatalf("producer 7 = %+v, %v", e, ok)
	}
	if _, open := tab.FirstUnstableOffset(); open || len(tab.AbortedTxns()) != 0 || !tab.Timed() {
		t.Fatal("a format-2 table has transactions or no timestamps")
	}
	if enc := tab.AppendEncode(nil); enc[0] != formatVersion {
		t.Fatalf("re-encoded as version %d", enc[0])
	}
}

// TestMarkerV2 (KIP-890 part 2): a marker with the bumped epoch ends the
// transaction of the epoch below and fences that epoch; the producer's
// next transaction runs at the marker's epoch from sequence 0, and a late
// copy of the marker does not end it, while a copy with nothing open is
// written.
func TestMarkerV2(t *testing.T) {
	tab := New(DefaultWindow)
	mustAppend(t, tab, txnHdr(1, 4, 0, 2, 0))
	if r := tab.ValidateMarkerV2(1, 5, 0); r.Verdict != Append {
		t.Fatalf("bumped marker: %+v", r)
	}
	if !tab.RecordMarker(marker(1, 5, true, 0, 2)) {
		t.Fatal("the bumped marker ended no transaction")
	}
	if r := tab.Validate(txnHdr(1, 4, 2, 1, 3)); r.Verdict != Fenced {
		t.Fatalf("a batch of the old epoch after the marker: %v, want Fenced", r.Verdict)
	}
	if r := tab.ValidateMarkerV2(1, 5, 0); r.Verdict != Append {
		t.Fatalf("a copy of the marker with nothing open: %+v, want Append", r)
	}
	mustAppend(t, tab, txnHdr(1, 5, 0, 1, 3)) // the next transaction, at the bumped epoch
	if r := tab.ValidateMarkerV2(1, 5, 0); r.Verdict != Fenced {
		t.Fatalf("a late copy of the marker over the next transaction: %+v, want Fenced", r)
	}
	if r := tab.ValidateMarker(1, 5, 0); r.Verdict != Append {
		t.Fatalf("a v1 marker of the same epoch: %+v, want Append", r)
	}
	if r := tab.ValidateMarkerV2(1, 6, 0); r.Verdict != Append {
		t.Fatalf("the next transaction's marker: %+v", r)
	}
}
