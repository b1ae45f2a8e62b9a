package fsm_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/partition/compact"
)

// openSlotted is a replica whose cleanings wait for a slot of slots.
func openSlotted(t *testing.T, slots chan struct{}) *replica {
	t.Helper()
	r := openReplicaIn(t, t.TempDir(), 4096, slots)
	t.Cleanup(func() { r.f.Close(); r.log.Close() })
	return r
}

// A cleaning whose map of keys is bounded cleans as far as the map
// reaches; CleanedTo reports that point once it is done (and a cleaning
// pending until then), and cleanings each mapping from where the last
// ended leave the bytes one unbounded cleaning leaves on another replica.
// A restore forgets the point: the log it vouched for is gone.
func TestCleaningsMapFromWhereTheLastEnded(t *testing.T) {
	slots := make(chan struct{}, 1)
	a, b := openSlotted(t, slots), openSized(t, 4096)
	entries := versions(3, 300) // one record a batch, keys of 4 bytes
	end := int64(len(entries))
	applyAll(a.f, entries, 64)
	applyAll(b.f, entries, 64)
	idx := uint64(len(entries))
	clean := func(r *replica, dirtyFrom, mapBytes int64) {
		idx++
		applyAll(r.f, []*raft.Log{command(idx, fsm.EncodeClean(end, 1000, 500, dirtyFrom, mapBytes))}, 1)
	}
	mapBytes := int64(100*(4+compact.MapEntryBytes) - 1) // a hundred keys pass it
	for pass := int64(1); ; pass++ {
		from, _ := a.f.CleanedTo()
		slots <- struct{}{} // held: the cleaning waits
		clean(a, from, mapBytes)
		if _, pending := a.f.CleanedTo(); !pending {
			t.Fatalf("pass %d: no cleaning pending while it waits for a slot", pass)
		}
		<-slots
		a.f.WaitCleanings()
		to, pending := a.f.CleanedTo()
		if pending || to != min(100*pass, end) {
			t.Fatalf("pass %d from %d: cleaned to %d (pending %v), want %d", pass, from, to, pending, min(100*pass, end))
		}
		if to == end {
			if pass != 9 {
				t.Fatalf("%d passes, want 9", pass)
			}
			break
		}
	}
	clean(b, 0, 0)
	b.f.WaitCleanings()
	if to, _ := b.f.CleanedTo(); to != end {
		t.Fatalf("the unbounded cleaning reached %d, want %d", to, end)
	}
	if !bytes.Equal(a.logBytes(), b.logBytes()) {
		t.Fatalf("the bounded cleanings left %d bytes, the unbounded one %d", len(a.logBytes()), len(b.logBytes()))
	}
	if n := len(a.records()); n != 300 {
		t.Fatalf("%d records left, want one of each of 300 keys", n)
	}

	if err := a.f.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, b.f)))); err != nil {
		t.Fatal(err)
	}
	if to, _ := a.f.CleanedTo(); to != 0 {
		t.Fatalf("after a restore the log is said clean to %d", to)
	}
}

// A clean command of a build before the dirty part's fields (24 bytes of
// body) still applies, mapping the whole range; a cleaning of the whole
// range without a bound is written in that form, which such a build
// applies too.
func TestOlderCleanCommand(t *testing.T) {
	r := openSized(t, 4096)
	entries := versions(2, 50)
	cmd := fsm.EncodeClean(100, 1000, 500, 60, 1)[:1+24]
	if whole := fsm.EncodeClean(100, 1000, 500, 0, 0); !bytes.Equal(whole, cmd) {
		t.Fatalf("a whole cleaning is encoded as %x, want the older form %x", whole, cmd)
	}
	entries = appendEntry(entries, cmd)
	applyAll(r.f, entries, 16)
	r.f.WaitCleanings()
	if to, _ := r.f.CleanedTo(); to != 100 {
		t.Fatalf("cleaned to %d, want 100", to)
	}
	if n := len(r.records()); n != 50 {
		t.Fatalf("%d records left, want 50", n)
	}
	if _, _, err := fsm.DecodeCommand(cmd[:1+30]); err == nil {
		t.Fatal("a clean command of 30 bytes of body decodes")
	}
}

// snapshotBytes is what f's snapshot persists, as raft stores it.
func snapshotBytes(t *testing.T, f *fsm.FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	return sink.Bytes()
}

// Where a replica's log is clean up to survives a restart (cleanedFile),
// so that its first cleaning as a leader after one maps only what is
// dirty; a torn record of it reads as nothing clean, and a restore
// forgets it for good.
func TestCleanedToSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	r := openReplicaSized(t, dir, 4096)
	entries := appendEntry(versions(2, 50), fsm.EncodeClean(100, 1000, 500, 0, 0))
	applyAll(r.f, entries, 16)
	r.f.WaitCleanings()
	r.close()
	r = openReplicaSized(t, dir, 4096)
	if to, _ := r.f.CleanedTo(); to != 100 {
		t.Fatalf("after a restart the log is said clean to %d, want 100", to)
	}
	r.close()

	name := filepath.Join(dir, "fsm", "cleaned")
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, b[:len(b)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	r = openReplicaSized(t, dir, 4096)
	if to, _ := r.f.CleanedTo(); to != 0 {
		t.Fatalf("a torn record reads as clean to %d", to)
	}
	applyAll(r.f, []*raft.Log{command(102, fsm.EncodeClean(100, 1000, 500, 0, 0))}, 1)
	r.f.WaitCleanings()
	if err := r.f.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, r.f)))); err != nil {
		t.Fatal(err)
	}
	r.close()
	r = openReplicaSized(t, dir, 4096)
	defer r.close()
	if to, _ := r.f.CleanedTo(); to != 0 {
		t.Fatalf("after a restore and a restart the log is said clean to %d", to)
	}
}
