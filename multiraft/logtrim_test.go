package multiraft

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/logging"
)

// The wrappers between raft and a store pass raft-wal's
// raft.MonotonicLogStore on: raft must reset such a store after it
// installs a snapshot, or the entries after it cannot be stored.
func TestWrappersKeepMonotonic(t *testing.T) {
	dir := t.TempDir()
	s, closeStore := openTestStore(t, dir, LogStoreWAL)
	defer closeStore()
	g := &guardedStore{logStore: s}
	sl := &sizedLog{LogStore: g}
	var ls raft.LogStore = sl
	if m, ok := ls.(raft.MonotonicLogStore); !ok || !m.IsMonotonic() {
		t.Fatal("raft-wal wrapped is not a monotonic log store")
	}
	if (&sizedLog{LogStore: raft.NewInmemStore()}).IsMonotonic() {
		t.Fatal("an in-memory store wrapped is monotonic")
	}
}

// sizedLog's count follows what the store holds: appends, a restart's
// gap, a follower's overwritten suffix, raft's head compaction.
func TestSizedLogCounts(t *testing.T) {
	e := int64(100 + entryOverhead)
	s := &sizedLog{LogStore: raft.NewInmemStore(), kick: make(chan struct{}, 1), limit: 10 * e, step: 8 * e}
	store := func(lo, hi uint64, size int) {
		t.Helper()
		var logs []*raft.Log
		for i := lo; i <= hi; i++ {
			logs = append(logs, &raft.Log{Index: i, Term: 1, Data: make([]byte, size)})
		}
		if err := s.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
	}
	want := func(first uint64, n int, total int64) {
		t.Helper()
		if s.first != first || len(s.sizes) != n || s.total != total {
			t.Fatalf("sizes from %d, %d of them, %d bytes; want from %d, %d, %d", s.first, len(s.sizes), s.total, first, n, total)
		}
	}
	store(1, 5, 100)
	want(1, 5, 5*e)
	store(4, 6, 100) // overwrites 4 and 5
	want(1, 6, 6*e)
	if err := s.DeleteRange(6, 6); err != nil { // a suffix
		t.Fatal(err)
	}
	want(1, 5, 5*e)
	if err := s.DeleteRange(1, 2); err != nil { // a head
		t.Fatal(err)
	}
	want(3, 3, 3*e)
	if got := s.trailing(2 * e); got != 2 {
		t.Fatalf("trailing(2 entries' bytes) = %d, want 2", got)
	}
	if got := s.trailing(1); got != 1 {
		t.Fatalf("trailing(1 byte) = %d, want 1 (at least one)", got)
	}
	select {
	case <-s.kick:
		t.Fatal("kicked below the limit")
	default:
	}
	store(10, 30, 100) // a gap: the count starts anew
	want(10, 21, 21*e)
	select {
	case <-s.kick:
	default:
		t.Fatal("not kicked past the limit")
	}
	store(31, 31, 100)
	select {
	case <-s.kick:
		t.Fatal("kicked twice before a trim")
	default:
	}
	s.keep = func() uint64 { return 17 }          // a slow follower matched 16
	if err := s.DeleteRange(10, 25); err != nil { // a trim held back to leave 15 entries, past the limit
		t.Fatal(err)
	}
	s.keep = nil
	store(32, 38, 100)
	select {
	case <-s.kick:
		t.Fatal("kicked again before a step of new entries past the trim")
	default:
	}
	store(39, 40, 100)
	select {
	case <-s.kick:
	default:
		t.Fatal("not kicked a step past the trim")
	}
	// A trim that nothing held back but that left entries past the limit
	// (they arrived while the snapshot was taken): the next store kicks.
	if err := s.DeleteRange(17, 28); err != nil {
		t.Fatal(err)
	}
	want(29, 12, 12*e)
	store(41, 41, 100)
	select {
	case <-s.kick:
	default:
		t.Fatal("not kicked past the limit after a trim that left more than the limit")
	}
}

// A sizedLog kicks once stepN entries were stored since its last trim or
// kick, however few bytes they hold: raft would wait for its
// SnapshotInterval to count them.
func TestSizedLogKicksByCount(t *testing.T) {
	s := &sizedLog{LogStore: raft.NewInmemStore(), kick: make(chan struct{}, 1), limit: 1 << 30, step: 1 << 29, stepN: 4}
	next := uint64(1)
	store := func(n int) {
		t.Helper()
		for ; n > 0; n-- {
			if err := s.StoreLogs([]*raft.Log{{Index: next, Term: 1, Data: []byte{1}}}); err != nil {
				t.Fatal(err)
			}
			next++
		}
	}
	kicked := func() bool {
		select {
		case <-s.kick:
			return true
		default:
			return false
		}
	}
	if store(3); kicked() {
		t.Fatal("kicked after 3 entries, want 4")
	}
	if store(1); !kicked() {
		t.Fatal("not kicked after 4 entries")
	}
	if store(3); kicked() {
		t.Fatal("kicked again 3 entries after the kick")
	}
	if err := s.DeleteRange(1, 5); err != nil { // the trim: 2 entries stay
		t.Fatal(err)
	}
	if store(3); kicked() {
		t.Fatal("kicked 3 entries after the trim")
	}
	if store(1); !kicked() {
		t.Fatal("not kicked 4 entries after the trim")
	}
}

// A group of small entries is trimmed once SnapshotThreshold of them
// arrive, not a SnapshotInterval later: what stays is TrailingLogs plus
// less than twice SnapshotThreshold entries.
func TestLogTrimmedByCountAsStored(t *testing.T) {
	n := newTestNet(t, nil)
	n.store = LogStorePebble
	n.start(1)
	timing := fastTiming()
	timing.SnapshotThreshold, timing.TrailingLogs, timing.SnapshotInterval = 32, 8, time.Hour
	timing.SnapshotBytes, timing.TrailingBytes = 64<<20, 16<<20
	g, _ := n.open(1, "count", []int32{1}, timing, false)
	leaderOf(t, []*Group{g})
	for v := uint64(1); v <= 200; v++ {
		if _, _, err := g.Propose(binary.BigEndian.AppendUint64(nil, v), 5*time.Second).Wait(); err != nil {
			t.Fatal(err)
		}
	}
	// What arrives while the last snapshot is taken stays too; were it
	// SnapshotThreshold entries or more, they would kick another trim.
	first, last := waitTrimmed(t, g, timing.TrailingLogs+2*timing.SnapshotThreshold)
	t.Logf("keeps entries %d..%d", first, last)
}

// waitTrimmed waits until g's store holds at most bound entries and
// returns their span.
func waitTrimmed(t *testing.T, g *Group, bound uint64) (first, last uint64) {
	t.Helper()
	waitFor(t, "the log trimmed", func() bool {
		var err error
		if first, err = g.store.FirstIndex(); err != nil {
			t.Fatal(err)
		}
		if last, err = g.store.LastIndex(); err != nil {
			t.Fatal(err)
		}
		return last-first+1 <= bound
	})
	return first, last
}

// A group whose entries are large trims its log by their bytes, long
// before SnapshotThreshold entries: what stays is about TrailingBytes
// plus SnapshotBytes, on every log store.
func TestLogTrimmedByBytes(t *testing.T) {
	for _, store := range []LogStore{LogStoreBoltDB, LogStoreWAL, LogStorePebble} {
		t.Run(string(store), func(t *testing.T) {
			n := newTestNet(t, nil)
			n.store = store
			n.start(1)
			timing := fastTiming()
			timing.SnapshotThreshold, timing.SnapshotInterval = 1<<20, time.Hour
			timing.SnapshotBytes, timing.TrailingBytes = 64<<10, 16<<10
			g, _ := n.open(1, "trim", []int32{1}, timing, false)
			leaderOf(t, []*Group{g})
			const entries, size = 200, 4 << 10
			for v := uint64(1); v <= entries; v++ {
				data := binary.BigEndian.AppendUint64(make([]byte, 0, size), v)
				if _, _, err := g.Propose(data[:size], 5*time.Second).Wait(); err != nil {
					t.Fatal(err)
				}
			}
			// The bound, plus what arrives while a snapshot is taken.
			const slack = 8
			bound := (timing.SnapshotBytes+timing.TrailingBytes)/(size+entryOverhead) + slack
			first, last := waitTrimmed(t, g, uint64(bound))
			t.Logf("%s keeps entries %d..%d of %d bytes each (bound %d entries)", store, first, last, size, bound)
			// The store deletes a head before the group forgets its sizes
			// (sizedLog.DeleteRange): the count may trail it for a moment.
			limit := timing.SnapshotBytes + timing.TrailingBytes + slack*(size+entryOverhead)
			kept := g.logs.bytes()
			for deadline := time.Now().Add(5 * time.Second); kept > limit && time.Now().Before(deadline); kept = g.logs.bytes() {
				time.Sleep(10 * time.Millisecond)
			}
			if kept > limit {
				t.Errorf("the log holds %d bytes, over %d + %d", kept, timing.SnapshotBytes, timing.TrailingBytes)
			}
		})
	}
}

// The log store's WAL scales with its memtable: with the 1 MiB memtable
// of a 128 MiB disk (LogMemTableFor), writing and trimming 24 MiB of
// entries leaves WAL files of a few MiB, where the default 64 MiB
// memtable preallocates 70 MiB for each of its files.
func TestPebbleWALScalesWithMemTable(t *testing.T) {
	dir := t.TempDir()
	memTable := LogMemTableFor(128 << 20)
	if memTable != 1<<20 {
		t.Fatalf("LogMemTableFor(128 MiB) = %d, want 1 MiB", memTable)
	}
	pl, err := openPebbleLog(dir, pebbleConfig{memTable: memTable, logger: logging.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer pl.release()
	v, err := pl.open("g")
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	data := make([]byte, 64<<10)
	for i := uint64(1); i <= 384; i++ {
		if err := v.StoreLogs([]*raft.Log{{Index: i, Term: 1, Type: raft.LogCommand, Data: data}}); err != nil {
			t.Fatal(err)
		}
		if i%32 == 0 {
			if err := v.DeleteRange(1, i-8); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wal int64
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Ext(e.Name()) == ".log" {
			wal += info.Sys().(*syscall.Stat_t).Blocks * 512
		}
	}
	t.Logf("WAL files take %.1f MiB", float64(wal)/(1<<20))
	if wal > 8*memTable {
		t.Fatalf("WAL files take %d bytes, over 8 memtables (%d)", wal, 8*memTable)
	}
}

// A leader that trims its log by bytes keeps what a follower on its way
// back still needs (up to TrailingBytes + SnapshotBytes): the follower
// catches up from entries, not from a snapshot, which for a partition is
// a second copy of its whole log.
func TestTrimKeepsEntriesForALaggingFollower(t *testing.T) {
	n := newTestNet(t, nil)
	n.store = LogStorePebble
	n.startWatched()
	timing := fastTiming()
	timing.SnapshotThreshold, timing.SnapshotInterval = 1<<20, time.Hour
	timing.SnapshotBytes, timing.TrailingBytes = 32<<10, 8<<10
	members := []int32{1, 2, 3}
	var gs []*Group
	for id := int32(1); id <= 3; id++ {
		g, _ := n.open(id, "lag", members, timing, false)
		gs = append(gs, g)
	}
	const size = 4 << 10
	leader := leaderOf(t, gs)
	lagging := (leader + 1) % 3
	for v := uint64(1); v <= 5; v++ {
		if _, _, err := gs[leader].Propose(binary.BigEndian.AppendUint64(make([]byte, 0, size), v)[:size], 5*time.Second).Wait(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the follower to match", func() bool {
		for _, f := range gs[leader].Replication().Followers {
			if f.Node == int32(lagging+1) && f.Match >= gs[leader].raft.LastIndex() {
				return true
			}
		}
		return false
	})
	if err := gs[lagging].Close(); err != nil {
		t.Fatal(err)
	}
	n.stop(int32(lagging + 1))
	for v := uint64(6); v <= 13; v++ {
		if _, _, err := gs[leader].Propose(binary.BigEndian.AppendUint64(make([]byte, 0, size), v)[:size], 5*time.Second).Wait(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the leader to trim", func() bool {
		first, _ := gs[leader].store.FirstIndex()
		return first > 1
	})
	n.start(int32(lagging + 1))
	n.watchAll()
	g, f := reopen(t, n, int32(lagging+1), "lag", members, timing)
	waitFor(t, "the follower to catch up", func() bool { st, _ := f.state(); return st.high == 13 })
	snaps, err := raft.NewFileSnapshotStore(g.spec.Dir, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if list, _ := snaps.List(); len(list) > 0 {
		t.Fatalf("the follower (node %d) caught up from a snapshot (%+v), not from entries", lagging+1, list[0])
	}
}
