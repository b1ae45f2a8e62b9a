package seglog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/minikafka/minikafka-go/record"
)

// benchBatchSize is the batch size the FSM appends in the target workload.
const benchBatchSize = 16 << 10

// benchBatch is a valid batch of exactly benchBatchSize bytes.
func benchBatch(tb testing.TB) []byte {
	tb.Helper()
	for v := benchBatchSize; v > 0; v-- {
		if b := newBatch(0, 1, v, 1); len(b) == benchBatchSize {
			return b
		} else if len(b) < benchBatchSize {
			break
		}
	}
	tb.Fatal("cannot size the benchmark batch")
	return nil
}

// BenchmarkLogAppend is the FSM's path: AppendAt with default options
// (128 MiB segments, rolls included), no fsync. Compare its MB/s with
// BenchmarkPlainFileWrite.
func BenchmarkLogAppend(b *testing.B) {
	batch := benchBatch(b)
	l, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	var next int64
	for b.Loop() {
		if err := l.AppendAt(batch, next, 3); err != nil {
			b.Fatal(err)
		}
		next++
	}
}

// BenchmarkLogAppendChecked is Append, which also verifies the CRC32C.
func BenchmarkLogAppendChecked(b *testing.B) {
	batch := benchBatch(b)
	l, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	var next int64
	for b.Loop() {
		record.SetBaseOffset(batch, next)
		if err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
		next++
	}
}

// BenchmarkPlainFileWrite writes the same bytes to one plain file with one
// Write call each: the baseline for BenchmarkLogAppend.
func BenchmarkPlainFileWrite(b *testing.B) {
	batch := benchBatch(b)
	f, err := os.Create(filepath.Join(b.TempDir(), "plain"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Write(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLogRead reads the log back 16 KiB at a time.
func BenchmarkLogRead(b *testing.B) {
	batch := benchBatch(b)
	l, err := Open(b.TempDir(), Options{SegmentBytes: 8 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	const n = 2048 // 32 MiB
	for i := range int64(n) {
		if err := l.AppendAt(batch, i, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	var off int64
	for b.Loop() {
		if _, err := l.Read(off, len(batch)); err != nil {
			b.Fatal(err)
		}
		off = (off + 1) % n
	}
}
