package fsm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/partition/seglog"
)

// faultReplica is a log and FSM on a FaultyFS over a MemFS.
type faultReplica struct {
	ff  *vfs.FaultyFS
	log *seglog.Log
	f   *fsm.FSM
}

func openFaultReplica(t *testing.T, ff *vfs.FaultyFS) *faultReplica {
	t.Helper()
	opts := crashLogOpts(ff, 0)
	opts.FlushBytes = -1
	l, err := seglog.Open(crashLogDir, opts)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsm.New(fsm.Config{Dir: crashFSMDir, FS: ff}, l)
	if err != nil {
		t.Fatal(err)
	}
	return &faultReplica{ff: ff, log: l, f: f}
}

// applyInBackground applies entries in chunks on a goroutine of its own,
// as raft's FSM goroutine would; the returned channel closes when done.
func applyInBackground(f *fsm.FSM, entries []*raft.Log) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < len(entries); i += 5 {
			f.ApplyBatch(entries[i:min(i+5, len(entries))])
		}
	}()
	return done
}

// waitStorageErr waits until the FSM reports a storage failure.
func waitStorageErr(t *testing.T, f *fsm.FSM) error {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if err := f.StorageErr(); err != nil {
			return err
		}
	}
	t.Fatal("the FSM never reported the storage failure")
	return nil
}

// A full disk stops the applies at the failing entry, which is retried;
// committed data stays readable; once space returns the entry and the
// rest apply and the log is byte-identical to one that never failed.
func TestDiskFullRetriesUntilSpaceReturns(t *testing.T) {
	entries := history(5, 200)
	ref := crashReference(t, entries, nil)
	r := openFaultReplica(t, vfs.Faulty(vfs.NewStrictMem()))
	r.f.ApplyBatch(entries[:80])
	r.ff.Fail(vfs.OpWrite|vfs.OpCreate, syscall.ENOSPC)
	done := applyInBackground(r.f, entries[80:])
	if err := waitStorageErr(t, r.f); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("StorageErr %v, want ENOSPC", err)
	}
	stuck := r.f.AppliedIndex()
	hw := r.f.HighWatermark()
	if got, err := r.log.Read(0, 1<<20); err != nil || !bytes.Equal(got, ref.full[:len(got)]) || int64(len(got)) == 0 {
		t.Fatalf("reading committed data while the disk is full: %d bytes, %v", len(got), err)
	}
	time.Sleep(20 * time.Millisecond) // a few retries
	if r.f.AppliedIndex() != stuck || r.f.HighWatermark() != hw || hw != ref.endAt[stuck] {
		t.Fatalf("applies moved while the disk was full: index %d->%d, hw %d->%d (want %d)",
			stuck, r.f.AppliedIndex(), hw, r.f.HighWatermark(), ref.endAt[stuck])
	}
	r.ff.Heal()
	<-done
	if err := r.f.StorageErr(); err != nil {
		t.Fatalf("StorageErr after healing: %v", err)
	}
	checkSameAsReference(t, r, ref)
	if err := errors.Join(r.f.Close(), r.log.Close()); err != nil {
		t.Fatal(err)
	}
	r = openFaultReplica(t, r.ff)
	checkSameAsReference(t, r, ref)
	if err := errors.Join(r.f.Close(), r.log.Close()); err != nil {
		t.Fatal(err)
	}
}

// Stop ends a retry without applying its entry; the next start replays it
// and ends where a replica that never failed does.
func TestStopDuringDiskFullReplaysAtNextStart(t *testing.T) {
	entries := history(6, 200)
	ref := crashReference(t, entries, nil)
	r := openFaultReplica(t, vfs.Faulty(vfs.NewStrictMem()))
	r.f.ApplyBatch(entries[:60])
	r.ff.Fail(vfs.OpWrite|vfs.OpCreate, syscall.ENOSPC)
	done := applyInBackground(r.f, entries[60:])
	waitStorageErr(t, r.f)
	r.f.Stop()
	<-done
	stuck := r.f.AppliedIndex()
	if stuck >= uint64(len(entries)) || r.log.EndOffset() != ref.endAt[stuck] {
		t.Fatalf("stopped at index %d with log end %d, want an unapplied entry and end %d", stuck, r.log.EndOffset(), ref.endAt[stuck])
	}
	// Raft counts the refused entries as handled: a snapshot now would be
	// labelled past them and let raft drop them.
	if _, err := r.f.Snapshot(); !errors.Is(err, fsm.ErrClosed) {
		t.Fatalf("Snapshot after a stopped retry = %v, want ErrClosed", err)
	}
	r.f.Close() // may fail: the checkpoint needs space
	r.log.Close()
	r.ff.Heal()
	r = openFaultReplica(t, r.ff)
	if r.f.AppliedIndex() > stuck {
		t.Fatalf("reopened at index %d, past the unapplied entry %d", r.f.AppliedIndex(), stuck+1)
	}
	r.f.ApplyBatch(entries)
	checkSameAsReference(t, r, ref)
	if err := errors.Join(r.f.Close(), r.log.Close()); err != nil {
		t.Fatal(err)
	}
}

func checkSameAsReference(t *testing.T, r *faultReplica, ref *crashRef) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := r.log.CopyTo(&buf, r.log.EndOffset()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), ref.full) || !r.f.Producers().Equal(ref.tables[ref.last()]) {
		t.Fatalf("log (%d bytes) or producer table differs from the reference (%d bytes)", buf.Len(), len(ref.full))
	}
	if r.f.AppliedIndex() != uint64(len(ref.entries)) {
		t.Fatalf("applied index %d, want %d", r.f.AppliedIndex(), len(ref.entries))
	}
}

// cleaningEntries are produces of 5 keys in 40 batches and a cleaning up
// to the active segment's base (no roll, so the cleaning's own writes are
// the swap's), then more produces; the FSM's checkpoint already covers
// the range (a Persist just before), so applying the command writes
// nothing either.
func cleaningEntries(r *faultReplica) (before, after []*raft.Log) {
	var idx uint64
	add := func(out []*raft.Log, data []byte) []*raft.Log {
		idx++
		return append(out, &raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: data})
	}
	for i := range 40 {
		before = add(before, fsm.EncodeProduce(batch(-1, -1, -1, fmt.Sprintf("k%d", i%5), fmt.Sprint(i))))
	}
	r.f.ApplyBatch(before)
	segs := r.log.Segments()
	after = add(after, fsm.EncodeClean(segs[len(segs)-1].Base, 1000, 500, 0, 0))
	for i := range 5 {
		after = add(after, fsm.EncodeProduce(batch(-1, -1, -1, "late", fmt.Sprint(i))))
	}
	return before, after
}

// cleaningReference applies cleaningEntries to a replica whose disk never
// fills and returns it, the entries and its log's bytes after them.
func cleaningReference(t *testing.T) (ref *faultReplica, before, after []*raft.Log, want []byte) {
	t.Helper()
	ref = openFaultReplica(t, vfs.Faulty(vfs.NewStrictMem()))
	before, after = cleaningEntries(ref)
	ref.f.ApplyBatch(after)
	ref.f.WaitCleanings()
	return ref, before, after, logBytes(t, ref.log)
}

// fullDiskReplica applies before to a new replica, checkpoints it, and
// fills its disk.
func fullDiskReplica(t *testing.T, before []*raft.Log) *faultReplica {
	t.Helper()
	r := openFaultReplica(t, vfs.Faulty(vfs.NewStrictMem()))
	r.f.ApplyBatch(before)
	persist(t, r.f)
	r.ff.Fail(vfs.OpWrite|vfs.OpCreate, syscall.ENOSPC)
	return r
}

// A cleaning whose swap fails for want of space is retried, not skipped
// (skipped, this replica's bytes would differ from the others'), and ends
// with the bytes of a replica whose disk never filled.
func TestCleaningRetriesUntilSpaceReturns(t *testing.T) {
	ref, before, after, want := cleaningReference(t)
	r := fullDiskReplica(t, before)
	r.f.ApplyBatch(after[:1])
	time.Sleep(30 * time.Millisecond) // a few retries
	if runs, _ := r.f.Cleanings(); runs != 0 {
		t.Fatalf("%d cleanings done on a full disk", runs)
	}
	r.ff.Heal()
	r.f.WaitCleanings()
	r.f.ApplyBatch(after[1:])
	if got := logBytes(t, r.log); !bytes.Equal(got, want) {
		t.Fatalf("after the disk came back the log (%d bytes) differs from the reference (%d)", len(got), len(want))
	}
	closeReplicas(t, ref, r)
}

// A cleaning given up at Stop (the disk still full) is abandoned: Close
// writes no checkpoint past it and the journal stays before it, so the
// next start replays its command and ends with the reference's bytes.
func TestCleaningGivenUpAtStopIsReplayed(t *testing.T) {
	ref, before, after, want := cleaningReference(t)
	r := fullDiskReplica(t, before)
	r.f.ApplyBatch(after[:1])
	r.f.Stop()
	r.f.WaitCleanings()
	if err := r.f.Close(); err != nil {
		t.Fatalf("Close after a cleaning was given up: %v", err)
	}
	r.log.Close()
	r.ff.Heal()
	r = openFaultReplica(t, r.ff)
	if applied := r.f.AppliedIndex(); applied >= after[0].Index {
		t.Fatalf("reopened at index %d, past the cleaning given up at %d", applied, after[0].Index)
	}
	r.f.ApplyBatch(append(append([]*raft.Log(nil), before...), after...))
	r.f.WaitCleanings()
	if got := logBytes(t, r.log); !bytes.Equal(got, want) {
		t.Fatalf("after the replay the log (%d bytes) differs from the reference (%d)", len(got), len(want))
	}
	closeReplicas(t, ref, r)
}

func logBytes(t *testing.T, l *seglog.Log) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := l.CopyTo(&buf, l.EndOffset()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// persist writes a checkpoint of f's state, as a snapshot does.
func persist(t *testing.T, f *fsm.FSM) {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Persist(&memSink{}); err != nil {
		t.Fatal(err)
	}
}

// After a cleaning is given up at Stop, the ones queued behind it are
// dropped too, even if the disk came back: run out of order, a later one
// would set the delete horizon of a tombstone the given-up one had to set
// first, and the replica's bytes would differ from the others' after the
// replay.
func TestCleaningsAfterOneGivenUpAreReplayedInOrder(t *testing.T) {
	var idx uint64
	add := func(out []*raft.Log, data []byte) []*raft.Log {
		idx++
		return append(out, &raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: data})
	}
	before := add(nil, fsm.EncodeProduce(tombstone("k0")))
	for i := range 40 {
		before = add(before, fsm.EncodeProduce(batch(-1, -1, -1, fmt.Sprintf("k%d", 1+i%5), fmt.Sprint(i))))
	}
	ref := openFaultReplica(t, vfs.Faulty(vfs.NewStrictMem()))
	ref.f.ApplyBatch(before)
	segs := ref.log.Segments()
	upTo := segs[len(segs)-1].Base
	cleans := add(nil, fsm.EncodeClean(upTo, 1000, 500, 0, 0))
	cleans = add(cleans, fsm.EncodeClean(upTo, 1200, 500, 0, 0))
	ref.f.ApplyBatch(cleans)
	ref.f.WaitCleanings()
	want := logBytes(t, ref.log)

	r := openFaultReplica(t, vfs.Faulty(vfs.NewStrictMem()))
	r.f.ApplyBatch(before)
	persist(t, r.f)
	r.ff.Fail(vfs.OpWrite|vfs.OpCreate, syscall.ENOSPC)
	r.f.ApplyBatch(cleans)
	time.Sleep(5 * time.Millisecond) // the first is retrying
	r.f.Stop()
	r.ff.Heal() // the second would now succeed
	r.f.WaitCleanings()
	if err := errors.Join(r.f.Close(), r.log.Close()); err != nil {
		t.Fatal(err)
	}
	r = openFaultReplica(t, r.ff)
	r.f.ApplyBatch(append(append([]*raft.Log(nil), before...), cleans...))
	r.f.WaitCleanings()
	if got := logBytes(t, r.log); !bytes.Equal(got, want) {
		t.Fatalf("after the replay the log (%d bytes) differs from the reference (%d)", len(got), len(want))
	}
	closeReplicas(t, ref, r)
}

// ActiveProducers (DescribeProducers) gives up when its context ends while
// an apply holds the producer table, as one does while it retries a write
// on a full disk; it answers once the apply is done.
func TestActiveProducersDuringDiskFull(t *testing.T) {
	entries := history(6, 200)
	r := openFaultReplica(t, vfs.Faulty(vfs.NewStrictMem()))
	r.f.ApplyBatch(entries[:60])
	r.ff.Fail(vfs.OpWrite|vfs.OpCreate, syscall.ENOSPC)
	done := applyInBackground(r.f, entries[60:])
	waitStorageErr(t, r.f)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := r.f.ActiveProducers(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ActiveProducers while an apply retries on a full disk = %v, want the context's deadline", err)
	}
	r.ff.Heal()
	<-done
	got, err := r.f.ActiveProducers(context.Background())
	if err != nil || len(got) == 0 {
		t.Fatalf("ActiveProducers after the disk came back: %d producers, %v", len(got), err)
	}
	if err := errors.Join(r.f.Close(), r.log.Close()); err != nil {
		t.Fatal(err)
	}
}

// closeReplicas closes each replica's FSM and log.
func closeReplicas(t *testing.T, rs ...*faultReplica) {
	t.Helper()
	for _, x := range rs {
		if err := errors.Join(x.f.Close(), x.log.Close()); err != nil {
			t.Fatal(err)
		}
	}
}
