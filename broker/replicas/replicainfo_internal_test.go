package replicas

import (
	"os"
	"path/filepath"
	"testing"
)

// A replica.json that already holds what the node would write is left
// alone (the same file, no temporary one), so that reopening replicas on
// a full disk writes nothing; a changed one is replaced.
func TestWriteReplicaInfoSkipsAnUnchangedFile(t *testing.T) {
	dir := t.TempDir()
	info := Info{Topic: "t", TopicID: "id", Partition: 3, Replicas: []int32{1, 2, 3}}
	if err := writeInfo(dir, info); err != nil {
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
	err = writeInfo(dir, info)
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
	if err := writeInfo(dir, info); err != nil {
		t.Fatal(err)
	}
	if changed, _ := os.Stat(path); os.SameFile(before, changed) {
		t.Fatal("replica.json was not replaced for new content")
	}
}
