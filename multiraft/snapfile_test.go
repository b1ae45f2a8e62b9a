package multiraft

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/logging"
)

var snapTestConf = raft.Configuration{Servers: []raft.Server{{ID: "1", Address: "a:1"}, {ID: "2", Address: "b:2"}}}

func openTestSnapFiles(t *testing.T, dir string) *snapFiles {
	t.Helper()
	s, err := openSnapFiles(dir, 2, hclog.NewNullLogger(), logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// writeSnap stores one snapshot holding state and returns its ID.
func writeSnap(t *testing.T, s raft.SnapshotStore, index, term uint64, state string) string {
	t.Helper()
	_, trans := raft.NewInmemTransport("") // raft's store encodes the peers through one
	sink, err := s.Create(1, index, term, snapTestConf, 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(sink, state); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	return sink.ID()
}

// readSnap opens id and returns its metadata and state.
func readSnap(t *testing.T, s raft.SnapshotStore, id string) (*raft.SnapshotMeta, string) {
	t.Helper()
	meta, rc, err := s.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return meta, string(b)
}

func listIDs(t *testing.T, s raft.SnapshotStore) []string {
	t.Helper()
	metas, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range metas {
		ids = append(ids, m.ID)
	}
	return ids
}

func snapDirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// A snapshot is one private file holding its state and metadata; the
// store keeps the newest two, lists them newest first (term, then index),
// and lists the same after a reopen.
func TestSnapFilesKeepTheNewestTwo(t *testing.T) {
	dir := t.TempDir()
	s := openTestSnapFiles(t, dir)
	a := writeSnap(t, s, 10, 2, "ten")
	meta, state := readSnap(t, s, a)
	if state != "ten" || meta.Index != 10 || meta.Term != 2 || meta.Size != 3 || meta.ConfigurationIndex != 1 ||
		!slices.Equal(meta.Configuration.Servers, snapTestConf.Servers) {
		t.Fatalf("read back %q, %+v", state, meta)
	}
	b := writeSnap(t, s, 20, 2, "twenty")
	c := writeSnap(t, s, 5, 3, "five, a newer term")
	if got := listIDs(t, s); !slices.Equal(got, []string{c, b}) {
		t.Fatalf("listed %v, want [%s %s]", got, c, b)
	}
	if got := snapDirNames(t, dir); !slices.Equal(got, []string{b + snapSuffix, c + snapSuffix}) {
		t.Fatalf("directory holds %v", got)
	}
	st, err := os.Stat(filepath.Join(dir, "snapshots", c+snapSuffix))
	if err != nil || st.Mode().Perm() != fileMode {
		t.Fatalf("snapshot file mode %v (%v), want %v", st.Mode().Perm(), err, fileMode)
	}

	r := openTestSnapFiles(t, dir)
	if got := listIDs(t, r); !slices.Equal(got, []string{c, b}) {
		t.Fatalf("after a reopen listed %v, want [%s %s]", got, c, b)
	}
	if _, state := readSnap(t, r, b); state != "twenty" {
		t.Fatalf("after a reopen read %q", state)
	}
	d := writeSnap(t, r, 5, 3, "same term and index")
	if got := listIDs(t, r); len(got) != 2 || got[0] != d || d == c {
		t.Fatalf("a second snapshot at the same point: listed %v, new %s", got, d)
	}
}

// What a crash or a cancel leaves half written is never listed, and a
// reopen removes it.
func TestSnapFilesUnfinished(t *testing.T) {
	dir := t.TempDir()
	s := openTestSnapFiles(t, dir)
	sink, err := s.Create(1, 7, 1, snapTestConf, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(sink, "half")
	if err := sink.Cancel(); err != nil {
		t.Fatal(err)
	}
	if got := snapDirNames(t, dir); len(got) != 0 {
		t.Fatalf("a cancelled snapshot left %v", got)
	}
	crashed, err := s.Create(1, 8, 1, snapTestConf, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(crashed, "never closed")
	if got := listIDs(t, s); len(got) != 0 {
		t.Fatalf("listed %v before any snapshot completed", got)
	}
	if err := os.Mkdir(filepath.Join(dir, "snapshots", "1-9-1700000000000.tmp"), dirMode); err != nil {
		t.Fatal(err) // one of raft's store, half written
	}
	r := openTestSnapFiles(t, dir) // the process died with the sink open
	if got := listIDs(t, r); len(got) != 0 {
		t.Fatalf("listed %v after a crash mid-snapshot", got)
	}
	if got := snapDirNames(t, dir); len(got) != 0 {
		t.Fatalf("the reopen left %v", got)
	}
}

// A snapshot whose state changed on disk fails to open; one whose trailer
// is cut is not listed, and the one before it is.
func TestSnapFilesCorrupt(t *testing.T) {
	dir := t.TempDir()
	s := openTestSnapFiles(t, dir)
	old := writeSnap(t, s, 1, 1, "older")
	id := writeSnap(t, s, 2, 1, "some state")
	path := filepath.Join(dir, "snapshots", id+snapSuffix)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[3] ^= 0xff
	if err := os.WriteFile(path, b, fileMode); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Open(id); !errors.Is(err, ErrSnapshotFileCorrupt) {
		t.Fatalf("open of a changed state: %v, want ErrSnapshotFileCorrupt", err)
	}
	if err := os.Truncate(path, int64(len(b)-1)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSnapshotFileMeta(path); !errors.Is(err, ErrSnapshotFileCorrupt) {
		t.Fatalf("meta of a cut file: %v, want ErrSnapshotFileCorrupt", err)
	}
	r := openTestSnapFiles(t, dir)
	if got := listIDs(t, r); !slices.Equal(got, []string{old}) {
		t.Fatalf("listed %v, want [%s]", got, old)
	}
}

// A data directory written by raft's FileSnapshotStore (an older version)
// keeps its snapshots readable until two of ours replace them.
func TestSnapFilesAdoptRaftStore(t *testing.T) {
	dir := t.TempDir()
	legacy, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	writeSnap(t, legacy, 3, 1, "three")
	l4 := writeSnap(t, legacy, 4, 1, "four")

	s := openTestSnapFiles(t, dir)
	if got := listIDs(t, s); len(got) != 2 || got[0] != l4 {
		t.Fatalf("listed %v, want raft's two, %s first", got, l4)
	}
	if meta, state := readSnap(t, s, l4); state != "four" || meta.Index != 4 {
		t.Fatalf("read raft's snapshot as %q, %+v", state, meta)
	}
	a := writeSnap(t, s, 5, 1, "five")
	if got := listIDs(t, s); !slices.Equal(got, []string{a, l4}) {
		t.Fatalf("listed %v, want [%s %s]", got, a, l4)
	}
	b := writeSnap(t, s, 6, 1, "six")
	if got := snapDirNames(t, dir); !slices.Equal(got, []string{a + snapSuffix, b + snapSuffix}) {
		t.Fatalf("after two of ours the directory holds %v", got)
	}
}
