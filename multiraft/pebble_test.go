package multiraft

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/logging"
)

// openTestStore opens a store of kind for group "g" in dir as a group
// would; pebble's DB is dir/raftlog, private to the store. closeStore
// closes it, and pebble's DB with it.
func openTestStore(t testing.TB, dir string, kind LogStore) (s logStore, closeStore func()) {
	t.Helper()
	if kind != LogStorePebble {
		s, err := openLogStore(dir, kind, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		return s, func() {
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		}
	}
	pl, err := openPebbleLog(filepath.Join(dir, "raftlog"), vfs.Default, logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	v, err := pl.open("g")
	if err == nil {
		err = v.bind(dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	return v, func() {
		if err := errors.Join(v.Close(), pl.release()); err != nil {
			t.Error(err)
		}
	}
}

// testLogs returns entries lo..hi of term 1 whose Data is their index.
func testLogs(lo, hi uint64) []*raft.Log {
	var logs []*raft.Log
	for i := lo; i <= hi; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: fmt.Appendf(nil, "%d", i)})
	}
	return logs
}

// checkLog fails unless s holds exactly the entries lo..hi of testLogs.
func checkLog(t testing.TB, s raft.LogStore, lo, hi uint64) {
	t.Helper()
	first, err1 := s.FirstIndex()
	last, err2 := s.LastIndex()
	if err := errors.Join(err1, err2); err != nil || first != lo || last != hi {
		t.Fatalf("log holds %d..%d (%v), want %d..%d", first, last, err, lo, hi)
	}
	for i := lo; i <= hi; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil || l.Index != i || string(l.Data) != fmt.Sprint(i) {
			t.Fatalf("GetLog(%d): %v, %+v", i, err, l)
		}
	}
	var l raft.Log
	if err := s.GetLog(hi+1, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog(%d) past the end: %v", hi+1, err)
	}
}

// Every store keeps entries, the term and the vote across a close, drops
// a deleted head and a deleted suffix, and answers raft's "not found" for
// a stable key never set.
func TestLogStoresKeepTheirState(t *testing.T) {
	for _, kind := range allStores {
		t.Run(string(kind), func(t *testing.T) {
			dir := t.TempDir()
			s, closeStore := openTestStore(t, dir, kind)
			// Raft takes an error "not found" or a zero value for a key never set.
			if v, err := s.GetUint64([]byte("CurrentTerm")); v != 0 || err != nil && err.Error() != "not found" {
				t.Fatalf("GetUint64 of a key never set: %d, %v", v, err)
			}
			if b, err := s.Get([]byte("LastVoteCand")); len(b) != 0 || err != nil && err.Error() != "not found" {
				t.Fatalf("Get of a key never set: %q, %v", b, err)
			}
			if err := s.StoreLogs(testLogs(1, 20)); err != nil {
				t.Fatal(err)
			}
			last := uint64(17)
			if kind == LogStoreWAL {
				// raft-wal v0.4.0 cannot read its log after a reopen that
				// follows a suffix deletion ("sealed segment has no index
				// block", hashicorp/raft-wal#31, fixed upstream by #33).
				last = 20
			}
			if err := errors.Join(s.DeleteRange(1, 5), s.DeleteRange(last+1, 20),
				s.SetUint64([]byte("CurrentTerm"), 7), s.Set([]byte("LastVoteCand"), []byte("node-2"))); err != nil {
				t.Fatal(err)
			}
			closeStore()
			s, closeStore = openTestStore(t, dir, kind)
			defer closeStore()
			checkLog(t, s, 6, last)
			if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 7 {
				t.Fatalf("term after reopen: %d, %v", v, err)
			}
			if b, err := s.Get([]byte("LastVoteCand")); err != nil || string(b) != "node-2" {
				t.Fatalf("vote after reopen: %q, %v", b, err)
			}
			if err := errors.Join(s.DeleteRange(18, last), s.StoreLogs(testLogs(18, 30))); err != nil { // a new suffix
				t.Fatal(err)
			}
			checkLog(t, s, 6, 30)
		})
	}
}

// An entry decodes to what was encoded, field by field; a truncated or
// altered value is refused, never misread.
func TestLogCodecRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	for _, l := range []raft.Log{
		{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("x")},
		{Index: 2, Term: 1 << 40, Type: raft.LogConfiguration, Data: bytes.Repeat([]byte{7}, 300), Extensions: []byte("ext"), AppendedAt: at},
		{Index: 3, Term: 2, Type: raft.LogNoop},
		{Index: 4, Term: 3, Type: raft.LogBarrier, Extensions: []byte{0}, AppendedAt: time.Unix(-5, 0)},
	} {
		b := make([]byte, encodedLogSize(&l))
		encodeLog(b, &l)
		var got raft.Log
		if err := decodeLog(b, &got); err != nil {
			t.Fatalf("decode %+v: %v", l, err)
		}
		got.Index = l.Index
		if got.Term != l.Term || got.Type != l.Type || !bytes.Equal(got.Data, l.Data) ||
			!bytes.Equal(got.Extensions, l.Extensions) || !got.AppendedAt.Equal(l.AppendedAt) {
			t.Fatalf("round trip of %+v gave %+v", l, got)
		}
		for n := range len(b) {
			if err := decodeLog(b[:n], &got); !errors.Is(err, errCorruptEntry) {
				t.Fatalf("%d of %d bytes: %v, want errCorruptEntry", n, len(b), err)
			}
		}
		if err := decodeLog(append(b, 0), &got); !errors.Is(err, errCorruptEntry) {
			t.Fatalf("a trailing byte: %v, want errCorruptEntry", err)
		}
		b[0] = logFormat + 1
		if err := decodeLog(b, &got); !errors.Is(err, errCorruptEntry) {
			t.Fatalf("format %d: %v, want errCorruptEntry", b[0], err)
		}
	}
}

// Groups in one DB keep apart, even when one's name is a prefix of the
// other's, and removing one leaves the other whole.
func TestPebbleGroupsKeepApart(t *testing.T) {
	pl, err := openPebbleLog(t.TempDir(), vfs.Default, logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	defer pl.release()
	a, err1 := pl.open("g")
	b, err2 := pl.open("g1")
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	if _, err := pl.open("g"); !errors.Is(err, ErrGroupExists) {
		t.Fatalf("a second view of g: %v, want ErrGroupExists", err)
	}
	if err := errors.Join(a.StoreLogs(testLogs(1, 10)), b.StoreLogs(testLogs(5, 8)),
		a.SetUint64([]byte("CurrentTerm"), 3), b.SetUint64([]byte("CurrentTerm"), 9)); err != nil {
		t.Fatal(err)
	}
	checkLog(t, a, 1, 10)
	checkLog(t, b, 5, 8)
	if err := a.DeleteRange(1, 10); err != nil {
		t.Fatal(err)
	}
	checkLog(t, b, 5, 8)
	if err := a.StoreLogs(testLogs(1, 3)); err != nil {
		t.Fatal(err)
	}
	if err := pl.remove("g"); !errors.Is(err, ErrGroupExists) {
		t.Fatalf("remove of an open group: %v, want ErrGroupExists", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pl.remove("g"); err != nil {
		t.Fatal(err)
	}
	a, err = pl.open("g")
	if err != nil {
		t.Fatal(err)
	}
	if first, _ := a.FirstIndex(); first != 0 {
		t.Fatalf("g removed still has entries from %d", first)
	}
	if v, _ := a.GetUint64([]byte("CurrentTerm")); v != 0 {
		t.Fatalf("g removed still has term %d", v)
	}
	checkLog(t, b, 5, 8)
	if v, err := b.GetUint64([]byte("CurrentTerm")); err != nil || v != 9 {
		t.Fatalf("g1's term: %d, %v", v, err)
	}
	if err := errors.Join(a.Close(), b.Close()); err != nil {
		t.Fatal(err)
	}
}

// Host.RemoveState deletes a closed pebble group's keys and its dir, and
// leaves the other groups of the DB whole; a group opened in the same dir
// again starts empty.
func TestRemoveState(t *testing.T) {
	n := newTestNet(t, nil)
	h := n.start(1)
	n.store = LogStorePebble
	ga, _ := n.open(1, "a", []int32{1}, fastTiming(), false)
	gb, fb := n.open(1, "b", []int32{1}, fastTiming(), false)
	for v := uint64(1); v <= 5; v++ {
		propose(t, []*Group{ga}, v)
		propose(t, []*Group{gb}, v)
	}
	dirA := filepath.Join(n.base, "1", "a")
	if err := h.RemoveState("a", dirA); !errors.Is(err, ErrGroupExists) {
		t.Fatalf("RemoveState of an open group: %v, want ErrGroupExists", err)
	}
	if err := h.RemoveState("c", dirA); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("RemoveState with another group's dir: %v, want ErrInvalidConfig", err)
	}
	if err := ga.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.RemoveState("a", dirA); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dirA); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dir of a after RemoveState: %v", err)
	}
	h.logMu.Lock()
	pl := h.plog
	h.logMu.Unlock()
	if first, err := newPebbleView(pl, "a").FirstIndex(); err != nil || first != 0 {
		t.Fatalf("a's entries after RemoveState: first %d, %v", first, err)
	}
	propose(t, []*Group{gb}, 6)
	if st, _ := fb.state(); st.high != 6 {
		t.Fatalf("b applied up to %d, want 6", st.high)
	}
	ga, fa := n.open(1, "a", []int32{1}, fastTiming(), false)
	propose(t, []*Group{ga}, 1)
	if st, _ := fa.state(); st.n != 1 {
		t.Fatalf("a reopened applied %d values, want 1 (a fresh log)", st.n)
	}
}

// A pebble group dir opened on a Host whose LogDir is another DB (say
// the setting changed) fails instead of starting an empty log.
func TestPebbleDirOfAnotherDB(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "g")
	for i, logDir := range []string{"raftlog", "elsewhere"} {
		h, err := Listen(Config{NodeID: 1, BindAddr: "127.0.0.1:0", LogDir: filepath.Join(base, logDir)})
		if err != nil {
			t.Fatal(err)
		}
		g, err := h.Open(GroupSpec{Name: "g", Members: []int32{1}, Dir: dir, Timing: fastTiming(),
			FSM: &countFSM{}, LogStore: LogStorePebble})
		if i == 0 {
			if err != nil {
				t.Fatal(err)
			}
			propose(t, []*Group{g}, 1)
			err = g.Close()
		} else if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("open on another DB: %v, want ErrInvalidConfig", err)
		} else {
			err = nil
		}
		if err := errors.Join(err, h.Close()); err != nil {
			t.Fatal(err)
		}
	}
}
