package multiraft

import (
	"fmt"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/logging"
)

// BenchmarkLogStoreOps measures each LogStore alone, as raft calls it:
// StoreLogs of 1 and of 64 entries of 1 KiB (each call is durable),
// GetLog of a stored entry, and DeleteRange of the oldest 64 entries.
func BenchmarkLogStoreOps(b *testing.B) {
	for _, store := range allStores {
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
	s, closeStore := openTestStore(b, b.TempDir(), kind)
	b.Cleanup(closeStore)
	return s
}

// BenchmarkGroupCommit has each of N groups store one entry of 1 KiB at
// the same time, durably, per op: N stores of their own for boltdb and
// wal, N views of one DB for pebble, whose commits share fsyncs.
func BenchmarkGroupCommit(b *testing.B) {
	for _, groups := range []int{1, 12} {
		for _, store := range allStores {
			b.Run(fmt.Sprintf("groups=%d/store=%s", groups, store), func(b *testing.B) {
				stores := openBenchStores(b, store, groups)
				b.SetBytes(int64(groups) << 10)
				data := make([]byte, 1<<10)
				next := uint64(1)
				var wg sync.WaitGroup
				for b.Loop() {
					for _, s := range stores {
						wg.Go(func() {
							if err := s.StoreLog(&raft.Log{Index: next, Term: 1, Type: raft.LogCommand, Data: data}); err != nil {
								b.Error(err)
							}
						})
					}
					wg.Wait()
					next++
				}
				b.ReportMetric(float64(groups*b.N)/b.Elapsed().Seconds(), "entries/s")
			})
		}
	}
}

// openBenchStores opens n stores of kind, in one DB for pebble.
func openBenchStores(b *testing.B, kind LogStore, n int) []logStore {
	var out []logStore
	if kind != LogStorePebble {
		for range n {
			out = append(out, openBenchStore(b, kind))
		}
		return out
	}
	pl, err := openPebbleLog(b.TempDir(), pebbleConfig{fs: vfs.Default, logger: logging.Discard()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pl.release() })
	for i := range n {
		v, err := pl.open(fmt.Sprint(i))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { v.Close() })
		out = append(out, v)
	}
	return out
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
