package fsm_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/record"
)

// The crash harness runs the partition log and the FSM on a MemFS that
// loses what was not synced at a simulated power loss, under load (applies
// in varied batches, Syncs, concurrent Syncs as the flusher makes,
// snapshots persisted beside the applies, clean restarts, small segments
// so that rolls happen; trims inside segments and to the end, produce with
// LogAppendTime, producer expiries, transactional batches and COMMIT and
// ABORT markers), crashes at a seeded random file
// operation, and checks each recovery:
//   - the log holds whole batches with intact CRCs, byte-identical to the
//     reference's batches from its first stored offset on, and reaches at
//     least the end that every completed Sync covered;
//   - the FSM's applied index is at least that of the last checkpoint that
//     was reported written (by a snapshot, a Close, or a trim that moved
//     the start), and the log's end, start, producer table (with its open
//     transactions and aborted index) and last stable offset are the
//     reference's at that index: a trim in a durable checkpoint is never
//     lost, one that was not is replayed; reads below the start fail with
//     seglog.ErrOffsetOutOfRange;
//   - replaying the rest (as raft would, from the last checkpoint) ends in
//     the reference's start, log bytes from the start, producer table and
//     last stable offset.
const (
	crashLogDir = "/data/p0/log"
	crashFSMDir = "/data/p0/fsm"
	crashSegSz  = 1024
)

// crashLogOpts are the harness's log options; fileLimit > 0 bounds the
// open files of the log and the FSM it is given to.
func crashLogOpts(fsys vfs.FS, fileLimit int) seglog.Options {
	return seglog.Options{FS: fsys, SegmentBytes: crashSegSz, IndexIntervalBytes: 256, FlushBytes: 700,
		Files: vfs.NewFileCache(fileLimit)}
}

// crashClaims are what the code under test reported durable.
type crashClaims struct {
	cpIndex uint64 // newest checkpoint reported written
	synced  int64  // log end covered by completed Syncs
	// finishedTrims counts recoveries that deleted segments a durable trim
	// had not: crashes between a trim's checkpoint and its deletion.
	finishedTrims int
}

// applied folds into c what applying entries (with results out) reported
// durable: a trim that moved the start, and an expiry that removed
// producers, wrote a checkpoint at its index, after syncing the log, before
// it returned.
func (c *crashClaims) applied(ref *crashRef, entries []*raft.Log, out []any) {
	for i, e := range entries {
		var durable bool
		switch r := out[i].(type) {
		case *fsm.TrimResult:
			durable = r.Err == nil && ref.startAt[e.Index] > ref.startAt[e.Index-1]
		case *fsm.ExpireResult:
			durable = r.Removed > 0
		}
		if durable {
			c.cpIndex, c.synced = max(c.cpIndex, e.Index), max(c.synced, ref.endAt[e.Index])
		}
	}
}

// incarnation is one run of the log and FSM between a start and a crash.
type incarnation struct {
	m   *vfs.MemFS
	log *seglog.Log
	f   *fsm.FSM
	// files is the cache of the log's and the FSM's open files.
	files *vfs.FileCache
	stop  chan struct{} // closed to stop the syncer
	done  chan struct{} // closed when the syncer returned
	// synced is the log end covered by the syncer's completed Syncs.
	synced atomic.Int64
}

// openIncarnation recovers the log and FSM from m and checks the result
// against ref and the claims. A crash during recovery gives a nil
// incarnation and no error.
func openIncarnation(t *testing.T, m *vfs.MemFS, ref *crashRef, c *crashClaims) *incarnation {
	t.Helper()
	crashed := func(err error) bool {
		if errors.Is(err, syscall.EIO) && m.Crashed() {
			return true
		}
		t.Fatalf("recovery failed without a crash: %v", err)
		return false
	}
	lopts := crashLogOpts(m, ref.fileLimit)
	l, err := seglog.Open(crashLogDir, lopts)
	if err != nil && crashed(err) {
		return nil
	}
	checkLogPrefix(t, l, ref, c.synced, "log reopened")
	// The FSM may cut the log back to its checkpoint, unsynced: a crash
	// during recovery may keep the cut.
	synced := c.synced
	c.synced = min(synced, ref.endAt[c.cpIndex])
	firstSeg := l.Segments()[0]
	f, err := fsm.New(fsm.Config{Dir: crashFSMDir, FS: m, Files: lopts.Files}, l)
	if err != nil {
		l.Close()
		if crashed(err) {
			return nil
		}
	}
	applied := f.AppliedIndex()
	switch {
	case applied < c.cpIndex:
		t.Fatalf("FSM recovered at index %d, below the checkpoint reported at %d", applied, c.cpIndex)
	case applied > uint64(len(ref.entries)):
		t.Fatalf("FSM recovered at index %d, past the %d entries", applied, len(ref.entries))
	case l.EndOffset() != ref.endAt[applied]:
		t.Fatalf("FSM recovered at index %d with log end %d, want %d", applied, l.EndOffset(), ref.endAt[applied])
	}
	checkRecovered(t, l, f, ref)
	if firstSeg.Next <= l.StartOffset() && firstSeg.Next > firstSeg.Base {
		c.finishedTrims++ // a trim's checkpoint was durable, its deletion not
	}
	// Recovery may cut the log back (unsynced); only that much is sure now.
	c.synced = min(synced, l.EndOffset())
	inc := &incarnation{m: m, log: l, f: f, files: lopts.Files, stop: make(chan struct{}), done: make(chan struct{})}
	m.OnCrash(f.Stop) // an apply retrying a failed write gives up
	go inc.syncer()
	return inc
}

// checkLogPrefix checks that the log holds whole, CRC-intact batches equal
// to the reference's from the log's first stored batch on, ending at or
// past minEnd.
func checkLogPrefix(t *testing.T, l *seglog.Log, ref *crashRef, minEnd int64, when string) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := l.CopyTo(&buf, l.EndOffset()); err != nil {
		t.Fatalf("%s: CopyTo: %v", when, err)
	}
	got := buf.Bytes()
	for rest := got; len(rest) > 0; {
		b, r, _, err := record.Next(rest)
		if err == nil {
			_, err = record.Check(b)
		}
		if err != nil {
			t.Fatalf("%s: batch at byte %d: %v", when, len(got)-len(rest), err)
		}
		rest = r
	}
	first := l.Segments()[0].Base
	pos, ok := ref.posOf[first]
	if !ok {
		t.Fatalf("%s: the log's first segment starts at %d, not a batch of the reference", when, first)
	}
	if !bytes.HasPrefix(ref.full[pos:], got) {
		t.Fatalf("%s: the log's %d bytes from offset %d differ from the reference", when, len(got), first)
	}
	if l.EndOffset() < minEnd {
		t.Fatalf("%s: log ends at %d, but a completed Sync covered %d", when, l.EndOffset(), minEnd)
	}
}

// checkRecovered checks the recovered log and FSM against the reference at
// the FSM's applied index: log bytes, start offset, reads below the start,
// producer table.
func checkRecovered(t *testing.T, l *seglog.Log, f *fsm.FSM, ref *crashRef) {
	t.Helper()
	checkLogPrefix(t, l, ref, 0, "after FSM recovery")
	applied := f.AppliedIndex()
	if got, want := l.StartOffset(), ref.startAt[applied]; got != want || f.LogStartOffset() != want {
		t.Fatalf("recovered at index %d with log start %d, want %d", applied, got, want)
	}
	if start := l.StartOffset(); start > 0 {
		if _, err := l.Read(start-1, 1); !errors.Is(err, seglog.ErrOffsetOutOfRange) {
			t.Fatalf("Read(%d) below the start %d: %v, want ErrOffsetOutOfRange", start-1, start, err)
		}
	}
	if !f.Producers().Equal(ref.tables[applied]) {
		t.Fatalf("recovered at index %d with a producer table that differs from the reference's", applied)
	}
	if got, want := f.LastStableOffset(), ref.lso[applied]; got != want {
		t.Fatalf("recovered at index %d with last stable offset %d, want %d", applied, got, want)
	}
}

// checkTail checks that the log's start and its batches from the one that
// holds the start equal the reference's final ones.
func checkTail(t *testing.T, l *seglog.Log, ref *crashRef) {
	t.Helper()
	if got, want := l.StartOffset(), ref.startAt[ref.last()]; got != want {
		t.Fatalf("after replay the log starts at %d, want %d", got, want)
	}
	got, err := l.Read(l.StartOffset(), len(ref.full)+1)
	if err != nil {
		t.Fatalf("Read from the start: %v", err)
	}
	if want := ref.tail(); !bytes.Equal(got, want) {
		t.Fatalf("after replay the log from its start holds %d bytes that differ from the reference's %d", len(got), len(want))
	}
}

// syncer calls Sync in a loop, as the flusher does, and records what each
// completed Sync covered.
func (inc *incarnation) syncer() {
	defer close(inc.done)
	for {
		select {
		case <-inc.stop:
			return
		case <-time.After(50 * time.Microsecond):
		}
		end := inc.log.EndOffset()
		if inc.log.Sync() == nil && end > inc.synced.Load() {
			inc.synced.Store(end)
		}
	}
}

// stopSyncer stops the syncer and folds its claim into c.
func (inc *incarnation) stopSyncer(c *crashClaims) {
	close(inc.stop)
	<-inc.done
	c.synced = max(c.synced, inc.synced.Load())
}

// abandon ends an incarnation at a crash: nothing is closed cleanly, but
// the log's goroutines are stopped.
func (inc *incarnation) abandon(c *crashClaims) {
	inc.stopSyncer(c)
	inc.log.Close() // fails after the crash; it only stops the flusher
}

// persistResult is a checkpoint written beside the applies.
type persistResult struct {
	index uint64
	end   int64
	err   error
}

// run applies entries from next on in random batches, with Syncs,
// snapshots persisted in the background and clean restarts, until the
// entries run out or the file system crashes. It returns the incarnation
// in use (nil if a restart crashed) and the next entry to apply.
func (inc *incarnation) run(t *testing.T, rng *rand.Rand, ref *crashRef, next int, c *crashClaims) (*incarnation, int) {
	t.Helper()
	var persisting chan persistResult // nil when no Persist runs
	collect := func() {
		if persisting != nil {
			if r := <-persisting; r.err == nil {
				c.cpIndex, c.synced = max(c.cpIndex, r.index), max(c.synced, r.end)
			}
			persisting = nil
		}
	}
	defer collect()
	for next < len(ref.entries) && !inc.m.Crashed() {
		n := min(1+rng.IntN(6), len(ref.entries)-next)
		out := inc.f.ApplyBatch(ref.entries[next : next+n])
		c.applied(ref, ref.entries[next:next+n], out)
		next += n
		switch rng.IntN(16) {
		case 0:
			end := inc.log.EndOffset()
			if inc.log.Sync() == nil {
				c.synced = max(c.synced, end)
			}
		case 1, 2:
			collect()
			persisting = inc.persist()
		case 3:
			collect()
			inc.stopSyncer(c)
			index, end := inc.f.AppliedIndex(), inc.log.EndOffset()
			if errors.Join(inc.f.Close(), inc.log.Close()) == nil {
				c.cpIndex, c.synced = max(c.cpIndex, index), max(c.synced, end)
			}
			if inc = openIncarnation(t, inc.m, ref, c); inc == nil {
				return nil, next
			}
			next = int(inc.f.AppliedIndex()) // what raft replays
		}
	}
	return inc, next
}

// persist takes a snapshot on the apply goroutine and persists it in the
// background, as raft does.
func (inc *incarnation) persist() chan persistResult {
	out := make(chan persistResult, 1)
	snap, err := inc.f.Snapshot()
	if err != nil {
		out <- persistResult{err: err}
		return out
	}
	r := persistResult{index: inc.f.AppliedIndex(), end: inc.log.EndOffset()}
	go func() {
		defer snap.Release()
		var sink memSink
		r.err = snap.Persist(&sink)
		out <- r
	}()
	return out
}

// crashOnce runs one seeded scenario: up to crashes crashes at random file
// operations, then a clean run to the end, compared with the reference.
// It returns how many crashes hit an armed operation, and how many
// recoveries finished a trim's deletion.
func crashOnce(t *testing.T, ref *crashRef, seed uint64, crashes int) (hits, finishedTrims int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0xc0ffee))
	m := vfs.NewStrictMemSeeded(seed)
	var c crashClaims
	for range crashes {
		m.CrashAt(m.Ops() + 1 + rng.Int64N(ref.ops))
		inc := openIncarnation(t, m, ref, &c)
		if inc != nil {
			inc, _ = inc.run(t, rng, ref, int(inc.f.AppliedIndex()), &c)
		}
		if m.Crashed() {
			hits++
		} else {
			m.Crash() // the entries ran out first
		}
		if inc != nil {
			inc.abandon(&c)
		}
		m.Restart()
	}
	inc := openIncarnation(t, m, ref, &c)
	// Raft replays from its last snapshot, which is no newer than the last
	// checkpoint; the FSM skips what it holds already.
	inc.f.ApplyBatch(ref.entries[c.cpIndex:])
	inc.stopSyncer(&c)
	checkTail(t, inc.log, ref)
	if !inc.f.Producers().Equal(ref.tables[ref.last()]) {
		t.Fatalf("after recovery and replay the producer table differs from the reference's")
	}
	if got, want := inc.f.LastStableOffset(), ref.lso[ref.last()]; got != want {
		t.Fatalf("after recovery and replay the last stable offset is %d, want %d", got, want)
	}
	if err := errors.Join(inc.f.Close(), inc.log.Close()); err != nil {
		t.Fatal(err)
	}
	return hits, c.finishedTrims
}

// measureOps counts the file operations of a crash-free run of the
// workload, the range crash points are drawn from.
func measureOps(t *testing.T, ref *crashRef) int64 {
	m := vfs.NewStrictMem()
	var c crashClaims
	inc := openIncarnation(t, m, ref, &c)
	inc, _ = inc.run(t, rand.New(rand.NewPCG(1, 2)), ref, 0, &c)
	if st := inc.files.Stats(); ref.fileLimit > 0 && (st.Reopens == 0 || st.EvictionSyncs == 0) {
		t.Fatalf("file cache %+v: no file was reopened, or none was fsynced to be closed", st)
	}
	ops := m.Ops()
	m.Crash()
	inc.abandon(&c)
	return ops
}

// TestCrashRecovery crashes the log and FSM at hundreds of seeded points
// (MINIKAFKA_CRASH_LONG=1: thousands, on a longer history).
func TestCrashRecovery(t *testing.T) {
	seeds, n := 150, 160
	if os.Getenv("MINIKAFKA_CRASH_LONG") != "" {
		seeds, n = 2500, 400
	}
	runCrashRecovery(t, seeds, n, 0)
}

// TestCrashRecoveryFewOpenFiles runs the crash harness with the log and
// the FSM sharing a file cache of 1: segment files and the journal are
// closed and reopened all the time, those with unsynced writes fsynced
// first, and every recovery still holds what was reported durable.
func TestCrashRecoveryFewOpenFiles(t *testing.T) {
	runCrashRecovery(t, 60, 160, 1)
}

func runCrashRecovery(t *testing.T, seeds, n, fileLimit int) {
	ref := crashReference(t, history(21, n), newCrashWorkload(21))
	ref.fileLimit = fileLimit
	ref.ops = measureOps(t, ref)
	mix := ref.workloadMix()
	t.Logf("workload: %v", mix)
	if mix["end-txn (aborted one)"] == 0 || mix["end-txn (written)"] == 0 {
		t.Error("the workload no longer writes markers that end transactions")
	}
	hits, finished := 0, 0
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			h, f := crashOnce(t, ref, seed, 2)
			hits, finished = hits+h, finished+f
		})
		if t.Failed() {
			break
		}
	}
	if !t.Failed() && finished == 0 {
		t.Error("no crash fell between a trim's checkpoint and its segment deletion: the workload no longer exercises them")
	}
	t.Logf("%d scenarios, %d crashes at a chosen file operation (of ~%d per run), the rest after the last entry; %d recoveries finished a trim's deletion",
		seeds, hits, ref.ops, finished)
}
