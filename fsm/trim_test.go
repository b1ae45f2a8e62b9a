package fsm_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/record"
)

func command(index uint64, data []byte) *raft.Log {
	return &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}
}

// fill applies n idempotent batches of producer pid (sequences from 0) from
// raft index from on, with values long enough to roll 4 KiB segments.
func fill(t *testing.T, f *fsm.FSM, pid int64, from uint64, n int) uint64 {
	t.Helper()
	for i := range n {
		v := fmt.Sprintf("%0500d", i)
		if r := result(t, f.Apply(produce(from, 1, batch(pid, 0, int32(i), "k", v)))); r.Err != nil {
			t.Fatalf("produce %d: %v", i, r.Err)
		}
		from++
	}
	return from
}

func trimResult(t *testing.T, v any) *fsm.TrimResult {
	t.Helper()
	r, ok := v.(*fsm.TrimResult)
	if !ok {
		t.Fatalf("apply result %T, want *fsm.TrimResult", v)
	}
	return r
}

// TestTrimSurvivesACrash: a trim moves the start, deletes whole segments
// and is durable at once: a crash right after it (no Close, no later
// checkpoint) recovers the same start, and the producer keeps its
// sequence, though its batches are gone.
func TestTrimSurvivesACrash(t *testing.T) {
	dir := t.TempDir()
	r := openReplica(t, dir)
	next := fill(t, r.f, 7, 1, 40)
	target := r.log.EndOffset() - 3
	tr := trimResult(t, r.f.Apply(command(next, fsm.EncodeTrim(target))))
	if tr.Err != nil || tr.StartOffset != target || r.log.StartOffset() != target {
		t.Fatalf("trim: %+v, log start %d; want start %d", tr, r.log.StartOffset(), target)
	}
	if n := len(r.log.Segments()); n > 2 {
		t.Fatalf("%d segments after trimming all but 3 records, want at most 2", n)
	}
	if tr := trimResult(t, r.f.Apply(command(next+1, fsm.EncodeTrim(r.log.EndOffset()+1)))); !errors.Is(tr.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("trim past the end: %v, want OFFSET_OUT_OF_RANGE", tr.Err)
	}
	r.crash()

	r = openReplica(t, dir)
	defer r.close()
	if r.log.StartOffset() != target || r.f.AppliedIndex() < next {
		t.Fatalf("after a crash: start %d, applied %d; want %d, >= %d", r.log.StartOffset(), r.f.AppliedIndex(), target, next)
	}
	if res := result(t, r.f.Apply(produce(next+2, 1, batch(7, 0, 40, "k", "after")))); res.Err != nil {
		t.Fatalf("the producer's next sequence after the trim: %v", res.Err)
	}
	if res := result(t, r.f.Apply(produce(next+3, 1, batch(7, 0, 39, "k", fmt.Sprintf("%0500d", 39))))); !res.Duplicate {
		t.Fatalf("a retry of a trimmed producer's batch: %+v, want Duplicate", res)
	}
}

// TestTrimmedSnapshotInstallsTheSameStart: a follower installing a
// snapshot taken before a trim gets the leader's trimmed log and start,
// byte for byte.
func TestTrimmedSnapshotInstallsTheSameStart(t *testing.T) {
	leader := openReplica(t, t.TempDir())
	defer leader.close()
	next := fill(t, leader.f, 3, 1, 30)
	snap, err := leader.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	next = fill(t, leader.f, 4, next, 10)
	target := leader.log.Segments()[1].Base + 1 // inside a segment
	trimResult(t, leader.f.Apply(command(next, fsm.EncodeTrim(target))))

	_, rc, err := leader.f.OpenSnapshot(io.NopCloser(bytes.NewReader(sink.Bytes())))
	if err != nil {
		t.Fatalf("OpenSnapshot after a trim: %v", err)
	}
	follower := openReplica(t, t.TempDir())
	defer follower.close()
	if err := follower.f.Restore(rc); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got := follower.log.StartOffset(); got != target {
		t.Fatalf("follower start %d, want %d", got, target)
	}
	want := leader.logBytes()
	wantEnd := follower.log.EndOffset()
	var buf bytes.Buffer
	if _, err := leader.log.CopyTo(&buf, wantEnd); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(follower.logBytes(), buf.Bytes()) || len(want) < buf.Len() {
		t.Fatal("follower's log differs from the leader's below the snapshot end")
	}
	// Trimming past the snapshot's end leaves nothing it can send.
	trimResult(t, leader.f.Apply(command(next+1, fsm.EncodeTrim(leader.log.EndOffset()))))
	if _, _, err := leader.f.OpenSnapshot(io.NopCloser(bytes.NewReader(sink.Bytes()))); !errors.Is(err, fsm.ErrSnapshotTrimmed) {
		t.Fatalf("OpenSnapshot of data trimmed away: %v, want ErrSnapshotTrimmed", err)
	}
}

// TestExpireProducersUsesTheCommandsClock: producers idle beyond the ttl as
// of the command's time are forgotten; the FSM reads no clock of its own.
func TestExpireProducersUsesTheCommandsClock(t *testing.T) {
	r := openReplica(t, t.TempDir())
	defer r.close()
	next := fill(t, r.f, 1, 1, 1) // timestamps 1000
	res := r.f.Apply(command(next, fsm.EncodeExpireProducers(1500, 1000)))
	if e, ok := res.(*fsm.ExpireResult); !ok || e.Removed != 0 || e.Producers != 1 {
		t.Fatalf("expire at 1500 with ttl 1000: %+v, want nothing removed", res)
	}
	res = r.f.Apply(command(next+1, fsm.EncodeExpireProducers(2001, 1000)))
	if e, ok := res.(*fsm.ExpireResult); !ok || e.Removed != 1 || e.Producers != 0 {
		t.Fatalf("expire at 2001 with ttl 1000: %+v, want producer 1 removed", res)
	}
	if _, ok := r.f.Producers().Lookup(1); ok {
		t.Fatal("producer 1 still known")
	}
}

// TestLogAppendTimeStampsTheLeaderTime: a CmdProduceAt with
// FlagLogAppendTime stores the batch with the LogAppendTime attribute and
// the command's time, CRC valid; without the flag the batch is unchanged.
func TestLogAppendTimeStampsTheLeaderTime(t *testing.T) {
	r := openReplica(t, t.TempDir())
	defer r.close()
	b := batch(-1, -1, -1, "k", "v")
	res := result(t, r.f.Apply(command(1, fsm.EncodeProduceAt(b, 123456, fsm.FlagLogAppendTime))))
	if res.Err != nil || res.LogAppendTime != 123456 {
		t.Fatalf("produce with LogAppendTime: %+v", res)
	}
	if res := result(t, r.f.Apply(command(2, fsm.EncodeProduceAt(b, 999, 0)))); res.Err != nil || res.LogAppendTime != -1 {
		t.Fatalf("produce without the flag: %+v", res)
	}
	stored := r.logBytes()
	h1, err := record.Check(stored[:len(b)])
	if err != nil {
		t.Fatalf("stamped batch: %v", err)
	}
	if h1.Attributes&record.AttrTimestampType == 0 || h1.MaxTimestamp != 123456 {
		t.Fatalf("stamped batch header %+v", h1)
	}
	h2, err := record.Check(stored[len(b):])
	if err != nil || h2.Attributes&record.AttrTimestampType != 0 || h2.MaxTimestamp != 1000 {
		t.Fatalf("unstamped batch header %+v, %v", h2, err)
	}
}

// TestProducerLimitRefusesNewProducers: with MaxProducers 2 a third
// producer gets POLICY_VIOLATION and nothing is appended.
func TestProducerLimitRefusesNewProducers(t *testing.T) {
	dir := t.TempDir()
	l, err := seglog.Open(filepath.Join(dir, "log"), seglog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f, err := fsm.New(fsm.Config{Dir: filepath.Join(dir, "fsm"), MaxProducers: 2}, l)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for pid := int64(1); pid <= 2; pid++ {
		if res := result(t, f.Apply(produce(uint64(pid), 1, batch(pid, 0, 0, "k", "v")))); res.Err != nil {
			t.Fatalf("producer %d: %v", pid, res.Err)
		}
	}
	end := l.EndOffset()
	res := result(t, f.Apply(produce(3, 1, batch(3, 0, 0, "k", "v"))))
	if !errors.Is(res.Err, kerr.PolicyViolation) || l.EndOffset() != end {
		t.Fatalf("third producer: %v, log end %d -> %d; want POLICY_VIOLATION and nothing appended", res.Err, end, l.EndOffset())
	}
	if res := result(t, f.Apply(produce(4, 1, batch(1, 0, 1, "k", "v")))); res.Err != nil {
		t.Fatalf("a known producer while full: %v", res.Err)
	}
}

// TestExpiryIsNotLostAtACrash: a restart that resumes from the journal past
// an expiry (a crash of the process, no Close) does not bring the expired
// producers back, which would make this replica differ from the others.
func TestExpiryIsNotLostAtACrash(t *testing.T) {
	dir := t.TempDir()
	r := openReplica(t, dir)
	next := fill(t, r.f, 1, 1, 2) // producer 1, timestamps 1000
	if e, ok := r.f.Apply(command(next, fsm.EncodeExpireProducers(5000, 1000))).(*fsm.ExpireResult); !ok || e.Removed != 1 {
		t.Fatalf("expire: %+v, want producer 1 removed", e)
	}
	if res := result(t, r.f.Apply(produce(next+1, 1, batch(2, 0, 0, "k", "v")))); res.Err != nil {
		t.Fatal(res.Err)
	}
	want := r.f.Producers()
	r.crash()

	r = openReplica(t, dir)
	defer r.close()
	if r.f.AppliedIndex() != next+1 {
		t.Fatalf("recovered at index %d, want %d (from the journal)", r.f.AppliedIndex(), next+1)
	}
	if _, ok := r.f.Producers().Lookup(1); ok || !r.f.Producers().Equal(want) {
		t.Fatal("after a crash the producer table differs from before it: the expiry was lost")
	}
}

// TestMalformedCommandsAreRefused: a trim, expiry or produce-at entry of
// the wrong length decodes to ErrShortCommand, and its apply changes
// nothing (a corrupt entry, answered CORRUPT_MESSAGE).
func TestMalformedCommandsAreRefused(t *testing.T) {
	for _, cmd := range [][]byte{
		fsm.EncodeTrim(5)[:5],
		append(fsm.EncodeTrim(5), 0),
		fsm.EncodeExpireProducers(1, 2)[:9],
		fsm.EncodeProduceAt(nil, 1, 0)[:4],
	} {
		if _, _, err := fsm.DecodeCommand(cmd); !errors.Is(err, fsm.ErrShortCommand) {
			t.Errorf("DecodeCommand(%x) = %v, want ErrShortCommand", cmd, err)
		}
	}
	r := openReplica(t, t.TempDir())
	defer r.close()
	end := r.log.EndOffset()
	res := result(t, r.f.Apply(command(1, fsm.EncodeTrim(5)[:5])))
	if !errors.Is(res.Err, kerr.CorruptMessage) || r.log.EndOffset() != end || r.log.StartOffset() != 0 {
		t.Fatalf("apply of a short trim: %+v", res)
	}
}

// TestFormat1CheckpointRebuildsTimestamps: a checkpoint whose producer
// table predates last timestamps is rebuilt from the log at recovery, so
// the producers carry their batches' timestamps and expiry acts on them.
func TestFormat1CheckpointRebuildsTimestamps(t *testing.T) {
	dir := t.TempDir()
	r := openReplica(t, dir)
	next := fill(t, r.f, 9, 1, 3) // batch timestamps 1000
	r.close()
	if err := fsm.DowngradeCheckpoint(filepath.Join(dir, "fsm")); err != nil {
		t.Fatal(err)
	}
	r = openReplica(t, dir)
	defer r.close()
	e, ok := r.f.Producers().Lookup(9)
	if !ok || e.LastTimestamp != 1000 || len(e.Batches) != 3 {
		t.Fatalf("producer 9 after a format-1 checkpoint: %+v, %v; want last timestamp 1000 and 3 batches", e, ok)
	}
	res := r.f.Apply(command(next, fsm.EncodeExpireProducers(2001, 1000)))
	if ex, ok := res.(*fsm.ExpireResult); !ok || ex.Removed != 1 {
		t.Fatalf("expiry after the rebuild: %+v, want producer 9 removed", res)
	}
}
