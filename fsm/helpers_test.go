package fsm_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/record"
)

// batch builds a v2 batch with kmsg: one record per value, keyed by key.
func batch(pid int64, epoch int16, seq int32, key string, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		if key != "" {
			r.Key = []byte(key)
		}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		Magic: 2, LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp: 1000, MaxTimestamp: 1000,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq,
		NumRecords: int32(len(values)), Records: recs,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// replica is one FSM over a real log in a directory.
type replica struct {
	t   testing.TB
	dir string
	log *seglog.Log
	f   *fsm.FSM
}

func openReplica(t testing.TB, dir string) *replica {
	t.Helper()
	l, err := seglog.Open(filepath.Join(dir, "log"), seglog.Options{SegmentBytes: 4096})
	if err != nil {
		t.Fatalf("OpenLog: %v", err)
	}
	f, err := fsm.New(fsm.Config{Dir: filepath.Join(dir, "fsm")}, l)
	if err != nil {
		l.Close()
		t.Fatalf("fsm.New: %v", err)
	}
	return &replica{t: t, dir: dir, log: l, f: f}
}

// close shuts down cleanly (checkpoint).
func (r *replica) close() {
	r.t.Helper()
	if err := r.f.Close(); err != nil {
		r.t.Fatalf("fsm.Close: %v", err)
	}
	if err := r.log.Close(); err != nil {
		r.t.Fatalf("log.Close: %v", err)
	}
}

// crash drops the FSM without its checkpoint, as kill -9 would; the log's
// files are closed but everything written stays (the page cache survives a
// process kill). A cleaning under way finds the log closed and gives up;
// crash waits for that, as a killed process leaves no goroutine that could
// still remove its files under the replica opened next.
func (r *replica) crash() {
	r.t.Helper()
	if err := r.log.Close(); err != nil {
		r.t.Fatalf("log.Close: %v", err)
	}
	r.f.WaitCleanings()
}

func (r *replica) logBytes() []byte {
	r.t.Helper()
	var buf bytes.Buffer
	if _, err := r.log.CopyTo(&buf, r.log.EndOffset()); err != nil {
		r.t.Fatalf("CopyTo: %v", err)
	}
	return buf.Bytes()
}

func produce(index, term uint64, b []byte) *raft.Log {
	return &raft.Log{Index: index, Term: term, Type: raft.LogCommand, Data: fsm.EncodeProduce(b)}
}

// applyAll feeds entries one ApplyBatch call per chunk of size n.
func applyAll(f *fsm.FSM, entries []*raft.Log, n int) []any {
	var out []any
	for i := 0; i < len(entries); i += n {
		j := min(i+n, len(entries))
		out = append(out, f.ApplyBatch(entries[i:j])...)
	}
	return out
}

func result(t testing.TB, v any) *fsm.ProduceResult {
	t.Helper()
	r, ok := v.(*fsm.ProduceResult)
	if !ok {
		t.Fatalf("apply result %T (%v), want *fsm.ProduceResult", v, v)
	}
	return r
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { return nil }

func snapshotFull(t testing.TB, f *fsm.FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	defer snap.Release()
	var sink memSink
	if err := snap.Persist(&sink); err != nil || sink.cancelled {
		t.Fatalf("Persist: %v (cancelled %v)", err, sink.cancelled)
	}
	size, rc, err := f.OpenSnapshot(io.NopCloser(bytes.NewReader(sink.Bytes())))
	if err != nil {
		t.Fatalf("OpenSnapshot: %v", err)
	}
	defer rc.Close()
	full, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read full snapshot: %v", err)
	}
	if int64(len(full)) != size {
		t.Fatalf("full snapshot is %d bytes, OpenSnapshot said %d", len(full), size)
	}
	return full
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

var _ = record.HeaderSize

func openLogOnly(dir string) (*seglog.Log, error) {
	return seglog.Open(filepath.Join(dir, "log"), seglog.Options{SegmentBytes: 4096})
}
