package replicas

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/minikafka/minikafka-go/internal/vfs"
)

// A replica.json that already holds what the node would write is left
// alone (the same file, no temporary one), so that reopening replicas on
// a full disk writes nothing; a changed one is replaced.
func TestWriteReplicaInfoSkipsAnUnchangedFile(t *testing.T) {
	dir := t.TempDir()
	info := Info{Topic: "t", TopicID: "id", Partition: 3, Replicas: []int32{1, 2, 3}}
	if err := writeInfo(vfs.OS, dir, info); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "replica.json")
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o500); err != nil { // no new files (for non-root runs)
		t.Fatal(err)
	}
	err = writeInfo(vfs.OS, dir, info)
	_ = os.Chmod(dir, 0o700)
	if err != nil {
		t.Fatalf("rewriting the same replica.json: %v", err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Fatal("replica.json was replaced although its content did not change")
	}
	info.Replicas = []int32{1, 2}
	if err := writeInfo(vfs.OS, dir, info); err != nil {
		t.Fatal(err)
	}
	if changed, _ := os.Stat(path); os.SameFile(before, changed) {
		t.Fatal("replica.json was not replaced for new content")
	}
}

// replica.json is what a restarting node opens its replicas from: once
// writeInfo returns, a power loss must leave it whole, with the new
// content, in a directory whose entry survives too.
func TestWriteReplicaInfoSurvivesAPowerLoss(t *testing.T) {
	mem := vfs.NewStrictMem()
	dir := "/data/partitions/t-3"
	info := Info{Topic: "t", TopicID: "id", Partition: 3, Replicas: []int32{1, 2, 3}}
	for _, want := range [][]int32{{1, 2, 3}, {1, 2}} {
		info.Replicas = want
		if err := writeInfo(mem, dir, info); err != nil {
			t.Fatal(err)
		}
		b, err := vfs.ReadFile(mem.CrashClone(), filepath.Join(dir, "replica.json"))
		if err != nil {
			t.Fatalf("replica.json after a power loss: %v", err)
		}
		var got Info
		if err := json.Unmarshal(b, &got); err != nil || !slices.Equal(got.Replicas, want) {
			t.Fatalf("replica.json after a power loss = %q (%v), want replicas %v", b, err, want)
		}
	}
}

// Removing a replica takes its replica.json first, durably: a power loss
// right after leaves a directory that no restart opens again.
func TestRemoveReplicaInfoSurvivesAPowerLoss(t *testing.T) {
	mem := vfs.NewStrictMem()
	dir := "/data/partitions/t-3"
	if err := writeInfo(mem, dir, Info{Topic: "t", TopicID: "id", Partition: 3, Replicas: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	if err := removeInfo(mem, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := vfs.ReadFile(mem.CrashClone(), filepath.Join(dir, "replica.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("replica.json after removal and a power loss: err %v, want not exist", err)
	}
	if err := removeInfo(mem, dir); err != nil {
		t.Fatalf("removing a replica.json already gone: %v", err)
	}
}
