package multiraft

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

func TestParseLogStore(t *testing.T) {
	for _, s := range []string{"boltdb", "wal", "pebble"} {
		if l, err := ParseLogStore(s); err != nil || string(l) != s {
			t.Errorf("ParseLogStore(%q) = %q, %v", s, l, err)
		}
	}
	for _, s := range []string{"", "WAL", "rocksdb"} {
		if _, err := ParseLogStore(s); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("ParseLogStore(%q): %v, want ErrInvalidConfig", s, err)
		}
	}
	n := newTestNet(t, nil)
	_, err := n.start(1).Open(GroupSpec{Name: "x", Dir: t.TempDir(), Timing: fastTiming(), FSM: &countFSM{}, LogStore: "rocksdb"})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Open with LogStore rocksdb: %v, want ErrInvalidConfig", err)
	}
	// A pebble group needs the Host's LogDir.
	h, err := Listen(Config{NodeID: 1, BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	dir := t.TempDir()
	_, err = h.Open(GroupSpec{Name: "x", Dir: dir, Timing: fastTiming(), FSM: &countFSM{}, LogStore: LogStorePebble})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Open with LogStore pebble and no LogDir: %v, want ErrInvalidConfig", err)
	}
	if HasState(dir) {
		t.Fatal("a failed pebble Open left state behind")
	}
}

// A group dir keeps the store it holds, whatever GroupSpec.LogStore asks
// for, and the group's state with it; a new dir gets the one asked for.
func TestExistingDirKeepsItsLogStore(t *testing.T) {
	cases := []struct {
		first, then LogStore
		file        string // the first store's file or dir
		absent      string // the other's
	}{
		{first: LogStoreBoltDB, then: LogStoreWAL, file: boltFile, absent: walDir},
		{first: "", then: LogStoreWAL, file: boltFile, absent: walDir},
		{first: LogStoreWAL, then: LogStoreBoltDB, file: walDir, absent: boltFile},
		{first: LogStoreWAL, then: "", file: walDir, absent: boltFile},
		{first: LogStoreBoltDB, then: LogStorePebble, file: boltFile, absent: pebbleMarker},
		{first: LogStoreWAL, then: LogStorePebble, file: walDir, absent: pebbleMarker},
		// A pebble dir never becomes an empty boltdb or wal log.
		{first: LogStorePebble, then: LogStoreBoltDB, file: pebbleMarker, absent: boltFile},
		{first: LogStorePebble, then: "", file: pebbleMarker, absent: boltFile},
		{first: LogStorePebble, then: LogStoreWAL, file: pebbleMarker, absent: walDir},
	}
	for _, c := range cases {
		t.Run(string(c.first)+"-then-"+string(c.then), func(t *testing.T) {
			n := newTestNet(t, nil)
			n.start(1)
			n.store = c.first
			g, f := n.open(1, "g", []int32{1}, fastTiming(), false)
			for v := uint64(1); v <= 10; v++ {
				propose(t, []*Group{g}, v)
			}
			if st, _ := f.state(); st.high != 10 {
				t.Fatalf("applied up to %d, want 10", st.high)
			}
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			n.store = c.then
			g2, f2 := reopen(t, n, 1, "g", []int32{1}, fastTiming())
			waitFor(t, "the log replayed", func() bool { st, _ := f2.state(); return st.high == 10 })
			propose(t, []*Group{g2}, 11)
			dir := filepath.Join(n.base, "1", "g")
			if _, err := os.Stat(filepath.Join(dir, c.file)); err != nil {
				t.Fatalf("%s: %v", c.file, err)
			}
			if _, err := os.Stat(filepath.Join(dir, c.absent)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s exists after reopening with LogStore %q (err %v)", c.absent, c.then, err)
			}
			if !HasState(dir) {
				t.Fatal("HasState is false")
			}
		})
	}
}

// The WAL store refuses head-truncated entries, before and after a
// reopen, and Close releases its files so that it can be opened again.
func TestWALRefusesCompactedEntries(t *testing.T) {
	dir := t.TempDir()
	s, err := openLogStore(dir, LogStoreWAL, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	var logs []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Data: []byte{byte(i)}})
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(1, 5); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		var l raft.Log
		if err := s.GetLog(3, &l); !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("round %d: GetLog(3) after DeleteRange(1, 5): %v, %+v", round, err, l)
		}
		if err := s.GetLog(6, &l); err != nil || l.Data[0] != 6 {
			t.Fatalf("round %d: GetLog(6): %v, %+v", round, err, l)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if s, err = openLogStore(dir, LogStoreWAL, hclog.NewNullLogger()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
