package multiraft

import (
	"fmt"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// BenchmarkLogStoreOps measures each LogStore alone, as raft calls it:
// StoreLogs of 1 and of 64 entries of 1 KiB (each call is durable),
// GetLog of a stored entry, and DeleteRange of the oldest 64 entries.
func BenchmarkLogStoreOps(b *testing.B) {
	for _, store := range []LogStore{LogStoreBoltDB, LogStoreWAL} {
		b.Run("store="+string(store), func(b *testing.B) {
			for _, batch := range []int{1, 64} {
				b.Run(fmt.Sprintf("StoreLogs=%d", batch), func(b *testing.B) {
					s, next := openBenchStore(b, store), uint64(1)
					b.SetBytes(int64(batch) << 10)
					for b.Loop() {
						next = storeEntries(b, s, next, batch)
					}
				})
			}
			b.Run("GetLog", func(b *testing.B) {
				s := openBenchStore(b, store)
				const stored = 4096
				storeEntries(b, s, 1, stored)
				var l raft.Log
				i := uint64(0)
				for b.Loop() {
					if err := s.GetLog(i%stored+1, &l); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
			b.Run("DeleteRange=64", func(b *testing.B) {
				s, next, first := openBenchStore(b, store), uint64(1), uint64(1)
				for b.Loop() {
					b.StopTimer()
					next = storeEntries(b, s, next, 64)
					b.StartTimer()
					if err := s.DeleteRange(first, first+63); err != nil {
						b.Fatal(err)
					}
					first += 64
				}
			})
		})
	}
}

func openBenchStore(b *testing.B, kind LogStore) logStore {
	s, err := openLogStore(b.TempDir(), kind, hclog.NewNullLogger())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// storeEntries stores n entries of 1 KiB from index next in one StoreLogs
// and returns the index after them.
func storeEntries(b *testing.B, s logStore, next uint64, n int) uint64 {
	logs := make([]*raft.Log, n)
	data := make([]byte, 1<<10)
	for i := range logs {
		logs[i] = &raft.Log{Index: next + uint64(i), Term: 1, Type: raft.LogCommand, Data: data}
	}
	if err := s.StoreLogs(logs); err != nil {
		b.Fatal(err)
	}
	return next + uint64(n)
}
