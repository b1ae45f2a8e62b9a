package seglog

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/logging"
)

// behindOpts waits up to bound bytes and, by default, an hour: only the
// bound or a method that needs the batches on file writes them out.
func behindOpts(fsys vfs.FS, bound int64) Options {
	return Options{WriteBehindBytes: bound, WriteBehindDelay: time.Hour, FS: fsys, Logger: logging.Discard()}
}

// appendAtEpochs appends h's batches with AppendAt at their offsets in
// epoch 7, as the FSM does; each AppendAt reuses the log's scratch head.
func appendAtEpochs(t *testing.T, l *Log, h *history, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := l.AppendAt(h.batches[i], h.bases[i], 7); err != nil {
			t.Fatalf("AppendAt batch %d: %v", i, err)
		}
	}
}

// fileBytes is the size of the only segment file of the log in dir.
func fileBytes(t *testing.T, fsys vfs.FS, dir string) int64 {
	t.Helper()
	f, err := fsys.OpenFile(dir+"/"+segmentName(0, ".log"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// checkEpochBatches checks that b holds h's batches [0, n) with epoch 7.
func checkEpochBatches(t *testing.T, b []byte, h *history, n int) {
	t.Helper()
	hs := checkBatches(t, b)
	if len(hs) != n {
		t.Fatalf("read %d batches, want %d", len(hs), n)
	}
	for i, got := range hs {
		if got.BaseOffset != h.bases[i] || got.PartitionLeaderEpoch != 7 {
			t.Fatalf("batch %d: base %d epoch %d, want %d and 7", i, got.BaseOffset, got.PartitionLeaderEpoch, h.bases[i])
		}
	}
}

// Batches wait in memory until a reader needs them, then all go out, each
// with its own rewritten head.
func TestWriteBehindReadWritesOut(t *testing.T) {
	fsys := vfs.NewStrictMem()
	l := openLog(t, "/p", behindOpts(fsys, 1<<20))
	h := makeHistory(10, 0, 1)
	appendAtEpochs(t, l, h, 0, 10)
	total := int64(len(h.concat(0, 10)))
	if l.EndOffset() != h.end(10) || l.Size() != total {
		t.Fatalf("EndOffset %d Size %d, want %d and %d", l.EndOffset(), l.Size(), h.end(10), total)
	}
	if n := fileBytes(t, fsys, "/p"); n != 0 {
		t.Fatalf("%d bytes on file before any reader, want 0", n)
	}
	b, err := l.Read(h.bases[3], 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if hs := checkBatches(t, b); len(hs) != 7 || hs[0].BaseOffset != h.bases[3] {
		t.Fatalf("Read from batch 3 gave %d batches from %d", len(hs), hs[0].BaseOffset)
	}
	if n := fileBytes(t, fsys, "/p"); n != total {
		t.Fatalf("%d bytes on file after a read, want %d", n, total)
	}
	checkEpochBatches(t, readAll(t, l, 0, 1<<20), h, 10)
}

// The bound writes out what waits in one go; before it nothing is written.
func TestWriteBehindBound(t *testing.T) {
	fsys := vfs.NewStrictMem()
	h := makeHistory(3, 0, 2)
	bound := int64(len(h.concat(0, 3)))
	l := openLog(t, "/p", behindOpts(fsys, bound))
	appendAtEpochs(t, l, h, 0, 2)
	if n := fileBytes(t, fsys, "/p"); n != 0 {
		t.Fatalf("%d bytes on file under the bound, want 0", n)
	}
	appendAtEpochs(t, l, h, 2, 3)
	if n := fileBytes(t, fsys, "/p"); n != bound {
		t.Fatalf("%d bytes on file at the bound, want %d", n, bound)
	}
}

// A batch waits at most WriteBehindDelay: the flusher writes it out.
func TestWriteBehindDelay(t *testing.T) {
	fsys := vfs.NewStrictMem()
	opts := behindOpts(fsys, 1<<20)
	opts.WriteBehindDelay = 10 * time.Millisecond
	l := openLog(t, "/p", opts)
	h := makeHistory(1, 0, 3)
	appendAtEpochs(t, l, h, 0, 1)
	want := int64(len(h.batches[0]))
	deadline := time.Now().Add(10 * time.Second)
	for fileBytes(t, fsys, "/p") != want {
		if time.Now().After(deadline) {
			t.Fatalf("the batch was not written out within 10s of a 10ms delay")
		}
		time.Sleep(time.Millisecond)
	}
}

// Sync, TruncateTo and Close write out what waits first; Reset drops it.
func TestWriteBehindWriterMethods(t *testing.T) {
	fsys := vfs.NewStrictMem()
	h := makeHistory(8, 0, 4)
	l := openLog(t, "/p", behindOpts(fsys, 1<<20))
	appendAtEpochs(t, l, h, 0, 4)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if n, want := fileBytes(t, fsys, "/p"), int64(len(h.concat(0, 4))); n != want {
		t.Fatalf("%d bytes on file after Sync, want %d", n, want)
	}
	appendAtEpochs(t, l, h, 4, 8)
	if err := l.TruncateTo(h.end(6)); err != nil {
		t.Fatal(err)
	}
	if l.EndOffset() != h.end(6) {
		t.Fatalf("EndOffset %d after TruncateTo, want %d", l.EndOffset(), h.end(6))
	}
	appendAtEpochs(t, l, h, 6, 8)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, "/p", behindOpts(fsys, 1<<20))
	checkEpochBatches(t, readAll(t, l, 0, 1<<20), h, 8)
	appendAtEpochs(t, l, makeHistory(10, 0, 4), 8, 10)
	if err := l.Reset(500); err != nil {
		t.Fatal(err)
	}
	if l.EndOffset() != 500 || l.Size() != 0 {
		t.Fatalf("after Reset: EndOffset %d Size %d, want 500 and 0", l.EndOffset(), l.Size())
	}
	if b := readAll(t, l, 500, 1<<20); len(b) != 0 {
		t.Fatalf("Reset left %d bytes to read", len(b))
	}
}

// A write-out that fails takes back the batch whose append set it off and
// keeps those before it waiting: the caller's retry of that append, once
// the disk is back, writes all of them in order.
func TestWriteBehindFailedWrite(t *testing.T) {
	ff := vfs.Faulty(vfs.NewStrictMem())
	h := makeHistory(3, 0, 5)
	l := openLog(t, "/p", behindOpts(ff, int64(len(h.concat(0, 3)))))
	appendAtEpochs(t, l, h, 0, 2)
	ff.Fail(vfs.OpWrite, syscall.ENOSPC)
	err := l.AppendAt(h.batches[2], h.bases[2], 7)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("AppendAt on a full disk = %v, want ENOSPC", err)
	}
	if l.EndOffset() != h.end(2) || l.Size() != int64(len(h.concat(0, 2))) {
		t.Fatalf("after the failed append: EndOffset %d Size %d, want %d and %d", l.EndOffset(), l.Size(), h.end(2), len(h.concat(0, 2)))
	}
	if _, err := l.Read(0, 1<<20); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Read needing the waiting batches on a full disk = %v, want ENOSPC", err)
	}
	ff.Heal()
	appendAtEpochs(t, l, h, 2, 3)
	checkEpochBatches(t, readAll(t, l, 0, 1<<20), h, 3)
	if n := fileBytes(t, ff, "/p"); n != int64(len(h.concat(0, 3))) {
		t.Fatalf("%d bytes on file, want %d: the failed write's half was not cut off", n, len(h.concat(0, 3)))
	}
}

// What waits is as volatile as what is written and not synced: a crash
// keeps what the last Sync covered.
func TestWriteBehindCrash(t *testing.T) {
	m := vfs.NewStrictMem()
	h := makeHistory(6, 0, 6)
	l, err := Open("/p", behindOpts(m, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	appendAtEpochs(t, l, h, 0, 3)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	appendAtEpochs(t, l, h, 3, 6)
	m.Crash()
	_ = l.Discard()
	m.Restart()
	l = openLog(t, "/p", behindOpts(m, 1<<20))
	if l.EndOffset() != h.end(3) {
		t.Fatalf("EndOffset %d after the crash, want %d (the Sync)", l.EndOffset(), h.end(3))
	}
	checkEpochBatches(t, readAll(t, l, 0, 1<<20), h, 3)
}
