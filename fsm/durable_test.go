package fsm_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/fsm"
)

func TestReopenReplaysOnlyNewEntries(t *testing.T) {
	for _, mode := range []string{"clean close", "crash"} {
		t.Run(mode, func(t *testing.T) {
			entries := history(11, 300)
			n, m := 200, 100
			dir := t.TempDir()
			r := openReplica(t, dir)
			applyAll(r.f, entries[:n], 8)
			endAtN := r.log.EndOffset()
			if mode == "crash" {
				r.crash()
			} else {
				r.close()
			}

			r = openReplica(t, dir)
			defer r.close()
			if r.f.AppliedIndex() != uint64(n) || r.log.EndOffset() != endAtN {
				t.Fatalf("reopened at index %d end %d, want %d and %d", r.f.AppliedIndex(), r.log.EndOffset(), n, endAtN)
			}
			res := applyAll(r.f, entries, 8) // raft replays 1..N+M
			for i := range n {
				if res[i] != nil {
					t.Fatalf("replayed entry %d was applied again: %+v", i+1, res[i])
				}
			}
			// A fresh replica fed only entries N+1..N+M after the first N
			// must hold the same bytes: so the reopened one appended only M.
			ref := openReplica(t, t.TempDir())
			defer ref.close()
			applyAll(ref.f, entries[:n], 8)
			applyAll(ref.f, entries[n:n+m], 8)
			if !bytes.Equal(r.logBytes(), ref.logBytes()) || !r.f.Producers().Equal(ref.f.Producers()) {
				t.Fatal("reopened replica differs from one that applied each entry once")
			}
		})
	}
}

// After a power loss the journal may be gone: recovery falls back to the
// checkpoint, cuts the log back to it and raft's replay rebuilds the rest
// byte for byte.
func TestLostJournalFallsBackToCheckpoint(t *testing.T) {
	entries := history(3, 240)
	dir := t.TempDir()
	r := openReplica(t, dir)
	applyAll(r.f, entries[:80], 10)
	snapshotFull(t, r.f) // Persist writes a checkpoint at index 80
	applyAll(r.f, entries[80:160], 10)
	want := r.logBytes()
	r.crash()
	if err := os.Remove(filepath.Join(dir, "fsm", "applied.journal")); err != nil {
		t.Fatal(err)
	}

	r = openReplica(t, dir)
	defer r.close()
	if r.f.AppliedIndex() != 80 {
		t.Fatalf("recovered at index %d, want the checkpoint's 80", r.f.AppliedIndex())
	}
	applyAll(r.f, entries[:160], 10)
	if !bytes.Equal(r.logBytes(), want) {
		t.Fatal("replay after losing the journal did not rebuild the same log")
	}
}

func TestTornJournalAndLogTail(t *testing.T) {
	entries := history(5, 120)
	dir := t.TempDir()
	r := openReplica(t, dir)
	applyAll(r.f, entries, 4)
	want := r.logBytes()
	wantTable := r.f.Producers()
	r.crash()
	// A torn journal record at the end is ignored.
	j, err := os.OpenFile(filepath.Join(dir, "fsm", "applied.journal"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	j.Write([]byte{1, 2, 3})
	j.Close()

	r = openReplica(t, dir)
	if r.f.AppliedIndex() != uint64(len(entries)) || !bytes.Equal(r.logBytes(), want) || !r.f.Producers().Equal(wantTable) {
		t.Fatalf("recovered at %d, want %d with the same log and table", r.f.AppliedIndex(), len(entries))
	}
	r.close()
}

func TestLogShorterThanCheckpointIsAnError(t *testing.T) {
	dir := t.TempDir()
	r := openReplica(t, dir)
	applyAll(r.f, history(1, 50), 5)
	r.close()
	if err := os.RemoveAll(filepath.Join(dir, "log")); err != nil {
		t.Fatal(err)
	}
	l, err := openLogOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := fsm.New(fsm.Config{Dir: filepath.Join(dir, "fsm")}, l); !errors.Is(err, fsm.ErrCorruptState) {
		t.Fatalf("New over a lost log = %v, want ErrCorruptState", err)
	}
}

func TestSnapshotRestoreEqualsOriginal(t *testing.T) {
	entries := history(21, 400)
	src := openReplica(t, t.TempDir())
	defer src.close()
	applyAll(src.f, entries[:300], 16)
	full := snapshotFull(t, src.f)

	dst := openReplica(t, t.TempDir())
	defer func() { dst.close() }()      // dst is reopened below
	applyAll(dst.f, history(99, 40), 4) // state that Restore must discard
	if err := dst.f.Restore(io.NopCloser(bytes.NewReader(full))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if dst.f.AppliedIndex() != src.f.AppliedIndex() || dst.f.HighWatermark() != src.f.HighWatermark() {
		t.Fatalf("restored index %d hw %d, want %d %d", dst.f.AppliedIndex(), dst.f.HighWatermark(), src.f.AppliedIndex(), src.f.HighWatermark())
	}
	if !bytes.Equal(dst.logBytes(), src.logBytes()) || !dst.f.Producers().Equal(src.f.Producers()) {
		t.Fatal("restored FSM differs from the original")
	}
	// Both go on identically, and the restored one survives a reopen.
	ra := applyAll(src.f, entries[300:], 16)
	rb := applyAll(dst.f, entries[300:], 3)
	for i := range ra {
		if (ra[i] == nil) != (rb[i] == nil) || (ra[i] != nil && result(t, ra[i]).BaseOffset != result(t, rb[i]).BaseOffset) {
			t.Fatalf("entry %d after restore: %v vs %v", 301+i, ra[i], rb[i])
		}
	}
	dst.crash()
	dst = openReplica(t, dst.dir)
	if !bytes.Equal(dst.logBytes(), src.logBytes()) || !dst.f.Producers().Equal(src.f.Producers()) {
		t.Fatal("restored FSM differs from the original after reopen")
	}
}

func TestCorruptSnapshotRejected(t *testing.T) {
	src := openReplica(t, t.TempDir())
	defer src.close()
	applyAll(src.f, history(2, 50), 5)
	full := snapshotFull(t, src.f)
	for _, cut := range []int{0, 10, 60, len(full) - 1} {
		dst := openReplica(t, t.TempDir())
		err := dst.f.Restore(io.NopCloser(bytes.NewReader(full[:cut])))
		dst.close()
		if err == nil {
			t.Fatalf("Restore accepted a snapshot cut at %d of %d bytes", cut, len(full))
		}
	}
	bad := append([]byte(nil), full...)
	bad[20] ^= 0xff
	dst := openReplica(t, t.TempDir())
	defer dst.close()
	if err := dst.f.Restore(io.NopCloser(bytes.NewReader(bad))); !errors.Is(err, fsm.ErrSnapshotCorrupt) {
		t.Fatalf("Restore of a flipped header = %v, want ErrSnapshotCorrupt", err)
	}
}

// The seed's hands-on lab, at the FSM level.
func TestSeedLab(t *testing.T) {
	dir := t.TempDir()
	r := openReplica(t, dir)
	keyed := batch(-1, -1, -1, "same", "0", "1", "2")
	retry := batch(77, 0, 0, "id", "once")
	res := r.f.ApplyBatch([]*raft.Log{produce(1, 1, keyed), produce(2, 1, retry), produce(3, 1, retry)})
	if got := result(t, res[0]); got.BaseOffset != 0 || got.Err != nil {
		t.Fatalf("keyed batch: %+v, want offsets 0-2", got)
	}
	if got := result(t, res[1]); got.BaseOffset != 3 || got.Err != nil {
		t.Fatalf("hand-built batch: %+v, want offset 3", got)
	}
	if got := result(t, res[2]); got.BaseOffset != 3 || !got.Duplicate || r.log.EndOffset() != 4 {
		t.Fatalf("exact retry: %+v with log end %d, want 3 and 4", got, r.log.EndOffset())
	}
	r.close()

	r = openReplica(t, dir)
	defer r.close()
	got := result(t, r.f.Apply(produce(4, 2, retry)))
	if got.BaseOffset != 3 || !got.Duplicate || r.log.EndOffset() != 4 {
		t.Fatalf("retry after reopen: %+v with log end %d, want 3 and 4", got, r.log.EndOffset())
	}
}

// A Restore that fails part way leaves a log that is neither state: no
// snapshot may be stored of it until a Restore completes, or a restart
// would trust raft's snapshot over a state that has no checkpoint.
func TestSnapshotRefusedAfterAFailedRestore(t *testing.T) {
	src := openReplica(t, t.TempDir())
	defer src.close()
	applyAll(src.f, history(3, 120), 8)
	full := snapshotFull(t, src.f)

	dst := openReplica(t, t.TempDir())
	defer dst.close()
	if err := dst.f.Restore(io.NopCloser(bytes.NewReader(full[:len(full)/2]))); err == nil {
		t.Fatal("Restore of half a snapshot succeeded")
	}
	snap, err := dst.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err == nil || !sink.cancelled {
		t.Fatalf("Persist after a failed Restore = %v (cancelled %v), want a refusal", err, sink.cancelled)
	}
	if err := dst.f.Restore(io.NopCloser(bytes.NewReader(full))); err != nil {
		t.Fatalf("second Restore: %v", err)
	}
	if !bytes.Equal(snapshotFull(t, dst.f), full) {
		t.Fatal("after a completed Restore the snapshot differs from the source's")
	}
}

// RestoreIfBehind goes by the snapshot's own index: a full snapshot ahead
// is restored, one not ahead is left, and the node's own reference
// snapshot ahead of its state is an error, never a stream of the log into
// itself.
func TestRestoreIfBehind(t *testing.T) {
	src := openReplica(t, t.TempDir())
	defer src.close()
	entries := history(5, 200)
	applyAll(src.f, entries[:100], 10)
	early := snapshotFull(t, src.f)
	snap, err := src.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var ref memSink
	if err := snap.Persist(&ref); err != nil {
		t.Fatal(err)
	}
	applyAll(src.f, entries[100:], 10)
	late := snapshotFull(t, src.f)

	dst := openReplica(t, t.TempDir())
	defer dst.close()
	if ok, err := dst.f.RestoreIfBehind(io.NopCloser(bytes.NewReader(late))); !ok || err != nil {
		t.Fatalf("RestoreIfBehind(newer full) = %v, %v; want a restore", ok, err)
	}
	if dst.f.AppliedIndex() != src.f.AppliedIndex() {
		t.Fatalf("restored to index %d, want %d", dst.f.AppliedIndex(), src.f.AppliedIndex())
	}
	if ok, err := dst.f.RestoreIfBehind(io.NopCloser(bytes.NewReader(early))); ok || err != nil {
		t.Fatalf("RestoreIfBehind(older full) = %v, %v; want nothing done", ok, err)
	}

	behind := openReplica(t, t.TempDir())
	defer behind.close()
	applyAll(behind.f, entries[:50], 10)
	if _, err := behind.f.RestoreIfBehind(io.NopCloser(bytes.NewReader(ref.Bytes()))); !errors.Is(err, fsm.ErrCorruptState) {
		t.Fatalf("RestoreIfBehind(reference ahead) = %v, want ErrCorruptState", err)
	}
}
