package fsm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/producerstate"
	"github.com/minikafka/minikafka-go/record"
)

// txnBatch is batch with the transactional attribute.
func txnBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	return makeTransactional(batch(pid, epoch, seq, "k", values...))
}

// makeTransactional sets a batch's transactional bit and fixes its CRC.
func makeTransactional(b []byte) []byte {
	attrs := binary.BigEndian.Uint16(b[21:]) | uint16(record.AttrTransactional)
	binary.BigEndian.PutUint16(b[21:], attrs)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func endTxn(index uint64, pid int64, epoch int16, commit bool, coord int32) *raft.Log {
	return command(index, fsm.EncodeEndTxn(fsm.EndTxn{ProducerID: pid, ProducerEpoch: epoch,
		CoordinatorEpoch: coord, Commit: commit, LeaderTime: 5000 + int64(index)}))
}

// ab is an aborted transaction.
func ab(pid, first, last int64) producerstate.AbortedTxn {
	return producerstate.AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: last}
}

// txnState is what a read_committed reader sees of an FSM.
type txnState struct {
	hw, lso int64
	aborted []producerstate.AbortedTxn
}

func stateOf(f *fsm.FSM) txnState {
	lso := f.LastStableOffset()
	return txnState{hw: f.HighWatermark(), lso: lso, aborted: f.AbortedTxns(0, f.HighWatermark())}
}

func (s txnState) equal(o txnState) bool {
	return s.hw == o.hw && s.lso == o.lso && slices.Equal(s.aborted, o.aborted)
}

// txnScript applies, from index 1, two producers' transactions with
// markers, checking each step: the offset a step gets, its error, the
// last stable offset and the aborted index after it.
func txnScript(t *testing.T, f *fsm.FSM) uint64 {
	t.Helper()
	steps := []struct {
		entry   func(i uint64) *raft.Log
		offset  int64
		err     error
		lso     int64
		aborted []producerstate.AbortedTxn
	}{
		{entry: func(i uint64) *raft.Log { return produce(i, 1, batch(1, 0, 0, "k", "a", "b")) }, offset: 0, lso: 2},
		{entry: func(i uint64) *raft.Log { return produce(i, 1, txnBatch(1, 0, 2, "t1")) }, offset: 2, lso: 2},
		{entry: func(i uint64) *raft.Log { return produce(i, 1, txnBatch(2, 0, 0, "u1", "u2")) }, offset: 3, lso: 2},
		{entry: func(i uint64) *raft.Log { return produce(i, 1, batch(1, 0, 3, "k", "plain")) }, offset: -1, err: kerr.InvalidTxnState, lso: 2},
		{entry: func(i uint64) *raft.Log { return produce(i, 1, txnBatch(1, 0, 3, "t2")) }, offset: 5, lso: 2},
		{entry: func(i uint64) *raft.Log { return endTxn(i, 1, 0, true, 0) }, offset: 6, lso: 3},
		{entry: func(i uint64) *raft.Log { return endTxn(i, 2, 0, false, 0) }, offset: 7, lso: 8,
			aborted: []producerstate.AbortedTxn{ab(2, 3, 7)}},
		// A marker with no open transaction is still written.
		{entry: func(i uint64) *raft.Log { return endTxn(i, 2, 0, false, 0) }, offset: 8, lso: 9,
			aborted: []producerstate.AbortedTxn{ab(2, 3, 7)}},
		{entry: func(i uint64) *raft.Log { return produce(i, 1, txnBatch(2, 0, 2, "u3")) }, offset: 9, lso: 9,
			aborted: []producerstate.AbortedTxn{ab(2, 3, 7)}},
		// The coordinator bumps producer 2 to epoch 1 and aborts: the
		// zombie at epoch 0 is fenced, data and markers alike.
		{entry: func(i uint64) *raft.Log { return endTxn(i, 2, 1, false, 1) }, offset: 10, lso: 11,
			aborted: []producerstate.AbortedTxn{ab(2, 3, 7), ab(2, 9, 10)}},
		{entry: func(i uint64) *raft.Log { return produce(i, 1, txnBatch(2, 0, 3, "zombie")) }, offset: -1, err: kerr.InvalidProducerEpoch, lso: 11,
			aborted: []producerstate.AbortedTxn{ab(2, 3, 7), ab(2, 9, 10)}},
		{entry: func(i uint64) *raft.Log { return endTxn(i, 2, 0, true, 1) }, offset: -1, err: kerr.InvalidProducerEpoch, lso: 11,
			aborted: []producerstate.AbortedTxn{ab(2, 3, 7), ab(2, 9, 10)}},
		{entry: func(i uint64) *raft.Log { return endTxn(i, 2, 1, true, 0) }, offset: -1, err: kerr.TransactionCoordinatorFenced, lso: 11,
			aborted: []producerstate.AbortedTxn{ab(2, 3, 7), ab(2, 9, 10)}},
		{entry: func(i uint64) *raft.Log { return produce(i, 1, txnBatch(2, 1, 0, "v1")) }, offset: 11, lso: 11,
			aborted: []producerstate.AbortedTxn{ab(2, 3, 7), ab(2, 9, 10)}},
	}
	for i, s := range steps {
		res := result(t, f.Apply(s.entry(uint64(i+1))))
		if !errors.Is(res.Err, s.err) || res.BaseOffset != s.offset {
			t.Fatalf("step %d: offset %d, err %v; want %d, %v", i, res.BaseOffset, res.Err, s.offset, s.err)
		}
		if got := f.LastStableOffset(); got != s.lso {
			t.Fatalf("step %d: last stable offset %d, want %d (high watermark %d)", i, got, s.lso, f.HighWatermark())
		}
		if got := f.AbortedTxns(0, 100); !slices.Equal(got, s.aborted) {
			t.Fatalf("step %d: aborted %v, want %v", i, got, s.aborted)
		}
	}
	return uint64(len(steps) + 1)
}

// TestTransactionsInTheFSM: open, commit, abort, the last stable offset,
// the aborted index, fenced markers and a non-transactional batch inside a
// transaction, then the markers' bytes in the log.
func TestTransactionsInTheFSM(t *testing.T) {
	r := openReplica(t, t.TempDir())
	defer r.close()
	txnScript(t, r.f)
	b, err := r.log.Read(6, 1)
	if err != nil {
		t.Fatal(err)
	}
	batch, _, h, err := record.Next(b)
	if err != nil {
		t.Fatal(err)
	}
	m, err := record.ParseEndTxnMarker(batch)
	if err != nil || m.Type != record.ControlCommit || !h.IsControl() || !h.IsTransactional() ||
		h.ProducerID != 1 || h.MaxTimestamp != 5006 || h.PartitionLeaderEpoch != 1 {
		t.Fatalf("marker at 6: %+v %+v, %v", h, m, err)
	}
	if got := r.f.AbortedTxns(8, 9); len(got) != 0 {
		t.Fatalf("AbortedTxns(8, 9) = %v, want none", got)
	}
	if got := r.f.AbortedTxns(4, 5); len(got) != 1 || got[0].FirstOffset != 3 {
		t.Fatalf("AbortedTxns(4, 5) = %v, want the one from 3 to 7", got)
	}
}

// TestMarkerV2InTheFSM (KIP-890 part 2): a v2 marker with the bumped
// epoch ends the transaction and fences its epoch; a late copy of it,
// applied after the producer's next transaction began at that epoch, is
// INVALID_PRODUCER_EPOCH and leaves the next transaction open.
func TestMarkerV2InTheFSM(t *testing.T) {
	r := openReplica(t, t.TempDir())
	defer r.close()
	v2 := func(i uint64, epoch int16) *raft.Log {
		return command(i, fsm.EncodeEndTxn(fsm.EndTxn{ProducerID: 1, ProducerEpoch: epoch, Commit: true, V2: true, LeaderTime: 5000}))
	}
	steps := []struct {
		entry  *raft.Log
		offset int64
		err    error
	}{
		{produce(1, 1, txnBatch(1, 0, 0, "t1")), 0, nil},
		{v2(2, 1), 1, nil},
		{produce(3, 1, txnBatch(1, 0, 1, "zombie")), -1, kerr.InvalidProducerEpoch},
		{produce(4, 1, txnBatch(1, 1, 0, "next")), 2, nil},
		{v2(5, 1), -1, kerr.InvalidProducerEpoch},
	}
	for i, s := range steps {
		res := result(t, r.f.Apply(s.entry))
		if res.BaseOffset != s.offset || !errors.Is(res.Err, s.err) {
			t.Fatalf("step %d: offset %d err %v, want %d %v", i, res.BaseOffset, res.Err, s.offset, s.err)
		}
	}
	if lso := r.f.LastStableOffset(); lso != 2 {
		t.Fatalf("last stable offset %d, want 2 (the next transaction open)", lso)
	}
}

// TestTransactionsSurviveRestartCrashAndSnapshot: the transaction state
// (open transactions, last stable offset, aborted index, producer epochs)
// is the same after a clean restart, after a crash (rebuilt from the
// log's markers), and in a replica restored from a snapshot.
func TestTransactionsSurviveRestartCrashAndSnapshot(t *testing.T) {
	dir := t.TempDir()
	r := openReplica(t, dir)
	next := txnScript(t, r.f)
	want, wantTable := stateOf(r.f), r.f.Producers()
	full := snapshotFull(t, r.f)
	// One more transaction after the snapshot's checkpoint, replayed from
	// the log after a crash.
	r.f.Apply(produce(next, 1, txnBatch(3, 0, 0, "w1")))
	r.f.Apply(endTxn(next+1, 3, 0, false, 0))
	r.f.Apply(produce(next+2, 1, txnBatch(1, 0, 4, "t3")))
	after, afterTable := stateOf(r.f), r.f.Producers()
	r.crash()

	r = openReplica(t, dir)
	if got := stateOf(r.f); !got.equal(after) || !r.f.Producers().Equal(afterTable) {
		t.Fatalf("after a crash: %+v, want %+v", got, after)
	}
	r.close()
	r = openReplica(t, dir)
	if got := stateOf(r.f); !got.equal(after) || !r.f.Producers().Equal(afterTable) {
		t.Fatalf("after a clean restart: %+v, want %+v", got, after)
	}
	r.close()

	other := openReplica(t, t.TempDir())
	defer other.close()
	if err := other.f.Restore(io.NopCloser(bytes.NewReader(full))); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(other.f); !got.equal(want) || !other.f.Producers().Equal(wantTable) {
		t.Fatalf("restored from a snapshot: %+v, want %+v", got, want)
	}
}

// TestTrimDropsAbortedBelowTheStart: a trim past an aborted transaction's
// marker drops it from the index; the last stable offset never falls
// below the log start.
func TestTrimDropsAbortedBelowTheStart(t *testing.T) {
	r := openReplica(t, t.TempDir())
	defer r.close()
	next := txnScript(t, r.f)
	if res := trimResult(t, r.f.Apply(command(next, fsm.EncodeTrim(8)))); res.Err != nil {
		t.Fatal(res.Err)
	}
	want := []producerstate.AbortedTxn{ab(2, 9, 10)}
	if got := r.f.AbortedTxns(0, 100); !slices.Equal(got, want) {
		t.Fatalf("after trim to 8: aborted %v, want %v", got, want)
	}
	// Producer 2's transaction opened at 11; trimming past it keeps it
	// open, and the stable offset is the start.
	r.f.Apply(produce(next+1, 1, batch(5, 0, 0, "k", "x", "y")))
	if res := trimResult(t, r.f.Apply(command(next+2, fsm.EncodeTrim(13)))); res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := r.f.LastStableOffset(); got != 13 {
		t.Fatalf("last stable offset %d after trimming past an open transaction, want the start 13", got)
	}
}

// TestFormat2CheckpointLoads: a checkpoint written before transactions
// (producer table format 2) loads: the producers keep their state, no
// transaction is open, and transactions work from there.
func TestFormat2CheckpointLoads(t *testing.T) {
	dir := t.TempDir()
	r := openReplica(t, dir)
	next := fill(t, r.f, 9, 1, 3)
	r.close()
	if err := fsm.DowngradeCheckpointV2(filepath.Join(dir, "fsm")); err != nil {
		t.Fatal(err)
	}
	r = openReplica(t, dir)
	defer r.close()
	e, ok := r.f.Producers().Lookup(9)
	if !ok || len(e.Batches) != 3 || e.TxnFirstOffset != -1 || r.f.LastStableOffset() != 3 {
		t.Fatalf("producer 9 after a format-2 checkpoint: %+v, %v; lso %d", e, ok, r.f.LastStableOffset())
	}
	if res := result(t, r.f.Apply(produce(next, 1, txnBatch(9, 0, 3, "t")))); res.Err != nil || r.f.LastStableOffset() != 3 {
		t.Fatalf("transactional batch after the upgrade: %+v, lso %d", res, r.f.LastStableOffset())
	}
}

// TestEndTxnCommandCodec: the marker command round-trips (with the
// transactions v2 flag) and rejects the wrong length or a bad flags byte.
func TestEndTxnCommandCodec(t *testing.T) {
	cmd := fsm.EncodeEndTxn(fsm.EndTxn{ProducerID: 7, ProducerEpoch: 2, CoordinatorEpoch: 3, Commit: true, LeaderTime: 9})
	if typ, _, err := fsm.DecodeCommand(cmd); err != nil || typ != fsm.CmdEndTxn || typ.String() != "end-txn" {
		t.Fatalf("DecodeCommand = %v, %v", typ, err)
	}
	v2 := fsm.EncodeEndTxn(fsm.EndTxn{ProducerID: 7, ProducerEpoch: 2, V2: true, LeaderTime: 9})
	if _, _, err := fsm.DecodeCommand(v2); err != nil || v2[15] != 2 {
		t.Fatalf("DecodeCommand(v2 abort) = %v, flags %d", err, v2[15])
	}
	bad := slices.Clone(cmd)
	bad[15] = 4
	for _, c := range [][]byte{cmd[:10], append(slices.Clone(cmd), 0), bad} {
		if _, _, err := fsm.DecodeCommand(c); !errors.Is(err, fsm.ErrShortCommand) {
			t.Errorf("DecodeCommand(%x) = %v, want ErrShortCommand", c, err)
		}
	}
}
