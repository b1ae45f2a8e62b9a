package fsm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/record"
)

const benchBatchBytes = 16 << 10

// benchBatch is an idempotent batch of about 16 KiB: 16 records of 1 KiB.
func benchBatch(b *testing.B, seq int32) []byte {
	recs := make([]record.Record, 16)
	for i := range recs {
		recs[i] = record.Record{Timestamp: 1, Value: bytes.Repeat([]byte{byte(i)}, benchBatchBytes/16-40)}
	}
	out, err := record.AppendBatch(nil, record.BatchOptions{ProducerID: 1, BaseSequence: seq}, recs)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkFSMApply measures applying produce commands of 16 KiB batches
// to a real on-disk log: CRC check, producer validation, offset assignment
// and the write. Compare with BenchmarkPlainFileWrite in the same run.
func BenchmarkFSMApply(b *testing.B) {
	dir := b.TempDir()
	l, err := seglog.Open(filepath.Join(dir, "log"), seglog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	f, err := fsm.New(fsm.Config{Dir: filepath.Join(dir, "fsm")}, l)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	// Sequences advance by 16 per batch; pre-build a ring of commands whose
	// sequences the loop rewrites, so building is not measured.
	proto := benchBatch(b, 0)
	b.SetBytes(int64(len(proto)))
	entry := &raft.Log{Type: raft.LogCommand, Term: 1}
	batch := []*raft.Log{entry}
	var seq int32
	var idx uint64
	cmd := fsm.EncodeProduce(proto)
	b.ResetTimer()
	for b.Loop() {
		idx++
		setSequence(cmd[1:], seq)
		seq += 16
		entry.Index, entry.Data = idx, cmd
		res := f.ApplyBatch(batch)
		if r := res[0].(*fsm.ProduceResult); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

// setSequence rewrites the base sequence and refreshes the CRC, which
// covers it.
func setSequence(batch []byte, seq int32) {
	batch[53], batch[54], batch[55], batch[56] = byte(seq>>24), byte(seq>>16), byte(seq>>8), byte(seq)
	record.FinishBatch(batch)
}

// BenchmarkPlainFileWrite is the baseline: the same bytes written to a
// plain file, one write per batch, no fsync.
func BenchmarkPlainFileWrite(b *testing.B) {
	fh, err := os.Create(filepath.Join(b.TempDir(), "plain"))
	if err != nil {
		b.Fatal(err)
	}
	defer fh.Close()
	proto := benchBatch(b, 0)
	b.SetBytes(int64(len(proto)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := fh.Write(proto); err != nil {
			b.Fatal(err)
		}
	}
}
