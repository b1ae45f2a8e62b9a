package seglog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/logging"
	"github.com/minikafka/minikafka-go/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newBatch builds a valid v2 batch with franz-go's kmsg types: records
// records at base, each value valueLen bytes derived from the offset, and
// both timestamps set to ts.
func newBatch(base int64, records, valueLen int, ts int64) []byte {
	var recs []byte
	for i := range records {
		off := base + int64(i)
		r := kmsg.Record{
			OffsetDelta: int32(i),
			Key:         fmt.Appendf(nil, "key-%d", off),
			Value:       bytes.Repeat([]byte{byte(off)}, valueLen),
		}
		body := r.AppendTo(nil)[1:] // drop the placeholder length varint
		r.Length = int32(len(body))
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		FirstOffset:          base,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(records - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(records),
		Records:              recs,
	}
	out := b.AppendTo(nil)
	record.FinishBatch(out)
	return out
}

// history is a deterministic run of batches starting at some offset.
type history struct {
	batches [][]byte
	bases   []int64 // base offset of each batch
	ts      []int64 // max timestamp of each batch
}

// makeHistory builds n batches from offset start with sizes, record counts
// and (non-monotonic) timestamps drawn from a PRNG seeded with seed.
func makeHistory(n int, start int64, seed uint64) *history {
	rng := rand.New(rand.NewPCG(seed, 0x6c6f67))
	h := &history{}
	next := start
	for i := range n {
		records := 1 + rng.IntN(4)
		ts := int64(1000 + 10*i - rng.IntN(40)) // mostly rising, sometimes not
		b := newBatch(next, records, rng.IntN(200), ts)
		h.batches = append(h.batches, b)
		h.bases = append(h.bases, next)
		h.ts = append(h.ts, ts)
		next += int64(records)
	}
	return h
}

// end is the offset after batch i-1 (the log end after i batches).
func (h *history) end(i int) int64 {
	if i == 0 {
		return h.bases[0]
	}
	hd, _ := record.ParseHeader(h.batches[i-1])
	return hd.NextOffset()
}

// concat joins batches [i, j).
func (h *history) concat(i, j int) []byte { return slices.Concat(h.batches[i:j]...) }

// indexOf returns the batch holding offset.
func (h *history) indexOf(offset int64) int {
	i, found := slices.BinarySearch(h.bases, offset)
	if found {
		return i
	}
	return i - 1
}

// smallOpts makes many segments and index entries.
func smallOpts() Options {
	return Options{SegmentBytes: 2000, IndexIntervalBytes: 300, Logger: logging.Discard()}
}

// openLog opens dir and closes the log at the end of the test (a log the
// test closed itself is fine).
func openLog(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

func appendAll(t testing.TB, l *Log, batches [][]byte) {
	t.Helper()
	for i, b := range batches {
		if err := l.Append(b); err != nil {
			t.Fatalf("Append batch %d: %v", i, err)
		}
	}
}

// readAll reads from offset to the log end in steps of maxBytes.
func readAll(t testing.TB, l *Log, from int64, maxBytes int) []byte {
	t.Helper()
	var out []byte
	for next := from; ; {
		b, err := l.Read(next, maxBytes)
		if err != nil {
			t.Fatalf("Read(%d): %v", next, err)
		}
		if b == nil {
			return out
		}
		hs := checkBatches(t, b)
		if next < hs[0].BaseOffset || next >= hs[0].NextOffset() {
			t.Fatalf("Read(%d) starts with batch [%d, %d)", next, hs[0].BaseOffset, hs[0].NextOffset())
		}
		out = append(out, b...)
		next = hs[len(hs)-1].NextOffset()
	}
}

// checkBatches splits b into batches and fails unless each is whole and
// valid and their offsets are contiguous.
func checkBatches(t testing.TB, b []byte) []record.Header {
	t.Helper()
	hs, err := splitChecked(b)
	if err != nil {
		t.Fatalf("partial or invalid batches: %v", err)
	}
	return hs
}

// segmentFiles lists the .log files in dir in order.
func segmentFiles(t testing.TB, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+logSuffix))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(m)
	return m
}

// dirBytes sums the sizes of the .log files in dir.
func dirBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	for _, p := range segmentFiles(t, dir) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// copyDir copies the regular files of src into a new temporary directory.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		in, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// lastSegment returns the last segment file of dir and the history batches
// it holds ([first, len)), found by its base offset.
func lastSegment(t testing.TB, dir string, h *history) (string, int) {
	t.Helper()
	files := segmentFiles(t, dir)
	path := files[len(files)-1]
	base, ok := parseSegmentName(filepath.Base(path), logSuffix)
	if !ok {
		t.Fatalf("bad segment name %s", path)
	}
	i, found := slices.BinarySearch(h.bases, base)
	if !found {
		t.Fatalf("segment %s does not start at a batch", path)
	}
	return path, i
}

// splitChecked is checkBatches for goroutines other than the test's.
func splitChecked(b []byte) ([]record.Header, error) {
	var hs []record.Header
	for len(b) > 0 {
		batch, rest, h, err := record.Next(b)
		if err != nil {
			return nil, err
		}
		if _, err := record.Check(batch); err != nil {
			return nil, err
		}
		if n := len(hs); n > 0 && hs[n-1].NextOffset() != h.BaseOffset {
			return nil, fmt.Errorf("batch at %d follows batch ending at %d", h.BaseOffset, hs[n-1].NextOffset())
		}
		hs = append(hs, h)
		b = rest
	}
	return hs, nil
}

// syncHookFS is a file system whose files call sync in place of their
// own Sync, so that a test can observe, fail or hold every file fsync.
type syncHookFS struct {
	vfs.FS
	sync func(vfs.File) error
}

func (s syncHookFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := s.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return syncHookFile{f, s.sync}, nil
}

type syncHookFile struct {
	vfs.File
	sync func(vfs.File) error
}

func (f syncHookFile) Sync() error { return f.sync(f.File) }
