package multiraft

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/logging"
)

// BenchmarkSnapshotStore stores one partition-sized reference snapshot (a
// header and a producer table, 4 KiB) per op, durably, in raft's
// FileSnapshotStore and in snapFiles; both keep two.
func BenchmarkSnapshotStore(b *testing.B) {
	state := make([]byte, 4<<10)
	_, trans := raft.NewInmemTransport("")
	stores := map[string]func(dir string) (raft.SnapshotStore, error){
		"raft": func(dir string) (raft.SnapshotStore, error) {
			return raft.NewFileSnapshotStoreWithLogger(dir, 2, hclog.NewNullLogger())
		},
		"files": func(dir string) (raft.SnapshotStore, error) {
			return openSnapFiles(dir, 2, hclog.NewNullLogger(), logging.Discard())
		},
	}
	for _, name := range []string{"raft", "files"} {
		b.Run(name, func(b *testing.B) {
			s, err := stores[name](b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			index := uint64(0)
			for b.Loop() {
				index++
				sink, err := s.Create(1, index, 1, snapTestConf, 1, trans)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := sink.Write(state); err != nil {
					b.Fatal(err)
				}
				if err := sink.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
