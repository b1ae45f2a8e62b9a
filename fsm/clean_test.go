package fsm_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/partition/compact"
	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/record"
)

// tombstone is a plain batch of one record of key with a null value.
func tombstone(key string) []byte {
	r := kmsg.Record{Key: []byte(key), Value: nil}
	r.Length = int32(len(r.AppendTo(nil)) - 1)
	b := kmsg.RecordBatch{Magic: 2, FirstTimestamp: 1000, MaxTimestamp: 1000, ProducerID: -1, ProducerEpoch: -1,
		FirstSequence: -1, NumRecords: 1, Records: r.AppendTo(nil)}
	out := b.AppendTo(nil)
	record.FinishBatch(out)
	return out
}

// openSized is a replica whose segments hold segmentBytes.
func openSized(t *testing.T, segmentBytes int64) *replica {
	t.Helper()
	r := openReplicaIn(t, t.TempDir(), segmentBytes, nil)
	t.Cleanup(func() { r.f.Close(); r.log.Close() })
	return r
}

// versions are the produce entries, from index 1, of n versions of keys
// keys ("v0" of "k000", "k001", ..., then "v1" of each, ...).
func versions(n, keys int) []*raft.Log {
	var entries []*raft.Log
	for v := range n {
		for k := range keys {
			entries = appendEntry(entries, fsm.EncodeProduce(batch(-1, -1, -1, fmt.Sprintf("k%03d", k), fmt.Sprintf("v%d", v))))
		}
	}
	return entries
}

// appendEntry appends a command entry at the next index.
func appendEntry(entries []*raft.Log, data []byte) []*raft.Log {
	return append(entries, &raft.Log{Index: uint64(len(entries) + 1), Term: 1, Type: raft.LogCommand, Data: data})
}

// records reads back every record of the replica's log.
func (r *replica) records() []record.Record {
	r.t.Helper()
	var out []record.Record
	for rest := r.logBytes(); len(rest) > 0; {
		b, next, h, err := record.Next(rest)
		if err != nil {
			r.t.Fatal(err)
		}
		if !h.IsControl() {
			if out, err = record.AppendRecords(out, b); err != nil {
				r.t.Fatal(err)
			}
		}
		rest = next
	}
	return out
}

// Two replicas with different segment sizes apply the same produces and
// cleanings: after each cleaning both hold the same bytes, the latest
// version of each of 200 keys, the 20 tombstones until delete.retention.ms
// after the cleaning that first reached them; the log end never moves.
func TestCleanIsTheSameOnEveryReplica(t *testing.T) {
	a, b := openSized(t, 4096), openSized(t, 1500)
	var entries []*raft.Log
	idx := uint64(0)
	add := func(data []byte) {
		idx++
		entries = append(entries, &raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: data})
	}
	for v := range 10 {
		for k := range 200 {
			add(fsm.EncodeProduce(batch(-1, -1, -1, fmt.Sprintf("k%03d", k), fmt.Sprintf("v%d", v))))
		}
	}
	for k := range 20 {
		add(fsm.EncodeProduce(tombstone(fmt.Sprintf("k%03d", k*10))))
	}
	end := int64(2020)
	for _, c := range []struct {
		now        int64
		tombstones int
	}{{1000, 20}, {1499, 20}, {1500, 0}} {
		add(fsm.EncodeClean(end, c.now, 500, 0, 0))
		for _, r := range []*replica{a, b} {
			applyAll(r.f, entries, 7)
			r.f.WaitCleanings()
			if runs, _ := r.f.Cleanings(); runs == 0 {
				t.Fatalf("now %d: no cleaning ran", c.now)
			}
		}
		entries = nil
		if !bytes.Equal(a.logBytes(), b.logBytes()) {
			t.Fatalf("now %d: the replicas differ after cleaning", c.now)
		}
		live, dead := 0, 0
		for _, rec := range a.records() {
			switch {
			case rec.Value == nil:
				dead++
			case string(rec.Value) != "v9":
				t.Fatalf("now %d: key %s kept %s", c.now, rec.Key, rec.Value)
			default:
				live++
			}
		}
		if live != 180 || dead != c.tombstones || a.log.EndOffset() != end || a.log.StartOffset() != 0 {
			t.Fatalf("now %d: %d live, %d tombstones, log [%d, %d); want 180, %d, [0, %d)",
				c.now, live, dead, a.log.StartOffset(), a.log.EndOffset(), c.tombstones, end)
		}
	}
}

// A replica that crashes while a cleaning is queued or running (its log
// closed under it) replays the cleaning's command after recovery, and
// ends with the same bytes as one that never crashed: the applied-index
// journal does not pass a cleaning that is not done.
func TestCleaningSurvivesACrash(t *testing.T) {
	entries := versions(10, 300)
	entries = appendEntry(entries, fsm.EncodeClean(3000, 1000, 500, 0, 0))
	for k := range 5 {
		entries = appendEntry(entries, fsm.EncodeProduce(batch(-1, -1, -1, fmt.Sprintf("late%d", k), "x")))
	}
	ref := openSized(t, 4096)
	applyAll(ref.f, entries, 64)
	ref.f.WaitCleanings()
	want := ref.logBytes()

	replayed := 0
	for range 10 {
		dir := t.TempDir()
		r := openReplicaSized(t, dir, 4096)
		applyAll(r.f, entries, 64)
		r.crash() // the cleaning may be queued, running or done
		r = openReplicaSized(t, dir, 4096)
		if applied := r.f.AppliedIndex(); applied < uint64(len(entries)) {
			replayed++
			applyAll(r.f, entries[applied:], 64)
		}
		r.f.WaitCleanings()
		if !bytes.Equal(r.logBytes(), want) {
			t.Fatalf("after a crash and replay the log differs from the reference (%d vs %d bytes)", len(r.logBytes()), len(want))
		}
		r.close()
	}
	t.Logf("%d of 10 recoveries replayed entries", replayed)
}

// openReplicaSized opens the replica in dir with segments of segmentBytes.
func openReplicaSized(t *testing.T, dir string, segmentBytes int64) *replica {
	t.Helper()
	return openReplicaIn(t, dir, segmentBytes, nil)
}

// openReplicaIn opens the replica in dir with segments of segmentBytes,
// its cleanings waiting for a slot of slots (nil: none).
func openReplicaIn(t *testing.T, dir string, segmentBytes int64, slots chan struct{}) *replica {
	t.Helper()
	l, err := seglog.Open(filepath.Join(dir, "log"), seglog.Options{SegmentBytes: segmentBytes})
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsm.New(fsm.Config{Dir: filepath.Join(dir, "fsm"), CleanSlots: slots}, l)
	if err != nil {
		t.Fatal(err)
	}
	return &replica{t: t, dir: dir, log: l, f: f}
}

// A marker removed by a cleaning is one that recovery must not need: a
// replica whose newest checkpoint predates the marker (its transaction
// open then) and that crashes after the cleaning rebuilds its producer
// state from that checkpoint and the stored batch headers after it. So a
// cleaning first checkpoints the state it starts from, or the rebuilt
// state would hold the transaction open and the last stable offset stuck.
func TestMarkerRemovalSurvivesACrash(t *testing.T) {
	dir := t.TempDir()
	r := openReplicaSized(t, dir, 4096)
	var idx uint64
	next := func() uint64 { idx++; return idx }
	r.f.ApplyBatch([]*raft.Log{produce(next(), 1, txnBatch(7, 0, 0, "open"))})
	snap, err := r.f.Snapshot() // the checkpoint sees the transaction open
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Persist(&memSink{}); err != nil {
		t.Fatal(err)
	}
	r.f.ApplyBatch([]*raft.Log{
		endTxn(next(), 7, 0, true, 1),
		produce(next(), 1, batch(-1, -1, -1, "k", "newer")), // supersedes the transaction's record
	})
	end := r.log.EndOffset()
	for _, now := range []int64{1000, 2000} { // the second is past the marker's horizon
		r.f.ApplyBatch([]*raft.Log{command(next(), fsm.EncodeClean(end, now, 500, 0, 0))})
		r.f.WaitCleanings()
	}
	if _, st := r.f.Cleanings(); st.MarkersRemoved != 1 {
		t.Fatalf("%d markers removed, want 1", st.MarkersRemoved)
	}
	if r.f.LastStableOffset() != end {
		t.Fatalf("last stable offset %d before the crash, want %d", r.f.LastStableOffset(), end)
	}
	r.crash()
	r = openReplicaSized(t, dir, 4096)
	defer r.close()
	if r.f.LastStableOffset() != end || r.f.HighWatermark() != end {
		t.Fatalf("after the crash: last stable offset %d, high watermark %d; want both %d (no transaction open)",
			r.f.LastStableOffset(), r.f.HighWatermark(), end)
	}
}

// A cleaning waits for a slot of Config.CleanSlots (the node's bound on
// cleanings at once, each holding its range in memory), runs once one is
// free, and gives the slot back.
func TestCleaningWaitsForASlot(t *testing.T) {
	slots := make(chan struct{}, 1)
	r := cleaningWaitingForASlot(t, slots)
	defer r.close()
	time.Sleep(50 * time.Millisecond)
	if runs, _ := r.f.Cleanings(); runs != 0 {
		t.Fatalf("%d cleanings ran while the only slot was taken", runs)
	}
	<-slots
	r.f.WaitCleanings()
	if runs, _ := r.f.Cleanings(); runs != 1 || len(slots) != 0 {
		t.Fatalf("after the slot was freed: %d cleanings, %d slots held; want 1, 0", runs, len(slots))
	}
}

// Discard while a cleaning waits for a slot held by another replica's:
// Discard stops the FSM first, so the cleaning gives up without running
// and Discard returns instead of waiting for the slot; no checkpoint is
// written and the log's bytes stay as they were.
func TestDiscardGivesUpAWaitingCleaning(t *testing.T) {
	slots := make(chan struct{}, 1)
	r := cleaningWaitingForASlot(t, slots)
	defer r.log.Close()
	f, dir := r.f, r.dir
	before, cpsBefore := r.logBytes(), checkpointFiles(t, dir)

	done := make(chan error, 1)
	go func() { done <- f.Discard() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Discard: %v", err)
		}
	case <-time.After(10 * time.Second):
		<-slots // let the cleaning go, so that the test can end
		t.Fatal("Discard waited for the slot the queued cleaning wanted")
	}
	if _, st := f.Cleanings(); st != (compact.Stats{}) || !bytes.Equal(r.logBytes(), before) {
		t.Fatalf("the queued cleaning ran after Discard: %+v", st)
	}
	if cps := checkpointFiles(t, dir); cps != cpsBefore {
		t.Fatalf("Discard wrote a checkpoint: before %q, after %q", cpsBefore, cps)
	}
}

// cleaningWaitingForASlot is a replica whose FSM has CleanSlots slots and
// a cleaning queued behind "another replica's", which holds the only one.
func cleaningWaitingForASlot(t *testing.T, slots chan struct{}) *replica {
	t.Helper()
	r := openReplicaIn(t, t.TempDir(), 4096, slots)
	var entries []*raft.Log
	for i := range 300 {
		entries = append(entries, produce(uint64(i+1), 1, batch(-1, -1, -1, fmt.Sprintf("k%d", i%10), "v")))
	}
	r.f.ApplyBatch(entries)
	slots <- struct{}{} // another replica's cleaning holds the only slot
	r.f.ApplyBatch([]*raft.Log{command(301, fsm.EncodeClean(r.log.EndOffset(), 1000, 500, 0, 0))})
	return r
}

// checkpointFiles is the names and contents of the FSM's checkpoint files
// under dir (the clean command wrote one when it was applied).
func checkpointFiles(t *testing.T, dir string) string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "fsm", "checkpoint*"))
	var out []byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(append(out, n...), 0), b...)
	}
	return string(out)
}

// A cleaning's memory does not grow with the log: it streams the
// segments, batch by batch, into the cleaned file. Before, it held the
// whole sealed log and its cleaned copy (twice the log); a fuzzed node
// reached 335 MiB in one cleaning. Measured as bytes allocated while the
// cleaning runs (runtime.MemStats.TotalAlloc), over a 24 MiB log.
func TestCleaningMemoryIsBounded(t *testing.T) {
	r := openSized(t, 1<<20)
	value := string(bytes.Repeat([]byte("v"), 4000))
	var entries []*raft.Log
	for i := range 6000 { // 24 MiB: 3,000 keys, each written twice
		entries = append(entries, produce(uint64(i+1), 1, batch(-1, -1, -1, fmt.Sprintf("k%04d", i%3000), value)))
	}
	applyAll(r.f, entries, 50)
	logSize := r.log.Size()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	applyAll(r.f, []*raft.Log{{Index: 6001, Term: 1, Type: raft.LogCommand, Data: fsm.EncodeClean(6000, 1000, 500, 0, 0)}}, 1)
	r.f.WaitCleanings()
	runtime.ReadMemStats(&after)
	if runs, st := r.f.Cleanings(); runs != 1 || st.RecordsOut != 3000 {
		t.Fatalf("%d cleanings kept %d records, want 1 keeping 3000", runs, st.RecordsOut)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("cleaning a %d-byte log allocated %d bytes", logSize, alloc)
	if alloc > uint64(logSize)/4 {
		t.Fatalf("cleaning a %d-byte log allocated %d bytes, want at most a quarter of it", logSize, alloc)
	}
}

// A cleaning of a log whose start was trimmed into a segment leaves the
// batches below the start as they are and cleans the rest, the same on
// replicas whose segments differ.
func TestCleaningBelowATrimmedStart(t *testing.T) {
	a, b := openSized(t, 4096), openSized(t, 1500)
	entries := appendEntry(versions(10, 100), fsm.EncodeTrim(333))
	entries = appendEntry(entries, fsm.EncodeClean(1000, 1000, 500, 0, 0))
	for _, r := range []*replica{a, b} {
		applyAll(r.f, entries, 9)
		r.f.WaitCleanings()
		if runs, st := r.f.Cleanings(); runs != 1 || st.RecordsOut != 100 {
			t.Fatalf("%d cleanings kept %d records, want 1 keeping 100", runs, st.RecordsOut)
		}
		if r.log.StartOffset() != 333 || r.log.EndOffset() != 1000 {
			t.Fatalf("log [%d, %d), want [333, 1000)", r.log.StartOffset(), r.log.EndOffset())
		}
	}
	// From the start on (below it, each replica's first segment keeps
	// what its own layout held).
	from := func(r *replica) (out []string) {
		for _, rec := range r.records() {
			if rec.Offset >= 333 {
				out = append(out, fmt.Sprintf("%d %s %s", rec.Offset, rec.Key, rec.Value))
			}
		}
		return out
	}
	got := from(a)
	if !slices.Equal(got, from(b)) || len(got) != 100 {
		t.Fatalf("the replicas differ after cleaning, or kept %d records, want 100", len(got))
	}
	for i, rec := range got {
		if want := fmt.Sprintf("%d k%03d v9", 900+i, i); rec != want {
			t.Fatalf("kept %q, want %q", rec, want)
		}
	}
}
