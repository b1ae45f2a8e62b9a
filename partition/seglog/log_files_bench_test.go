package seglog

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/minikafka/minikafka-go/internal/vfs"
)

// BenchmarkAppendManyLogs appends 1 KiB batches to 200 logs in turn, as
// a node's partitions are written, with every segment open (limit 0),
// with room for all (limit 400), and with room for half (limit 100): then
// each append reopens its segment and closes another, fsyncing it first.
func BenchmarkAppendManyLogs(b *testing.B) {
	for _, limit := range []int{0, 400, 100} {
		b.Run(fmt.Sprint("limit", limit), func(b *testing.B) {
			const logs = 200
			files := vfs.NewFileCache(limit)
			batch := newBatch(0, 1, 1000, 1)
			ls := make([]*Log, logs)
			next := make([]int64, logs)
			for i := range ls {
				var err error
				if ls[i], err = Open(filepath.Join(b.TempDir(), fmt.Sprint(i)), Options{Files: files}); err != nil {
					b.Fatal(err)
				}
				defer ls[i].Close()
			}
			b.SetBytes(int64(len(batch)))
			i := 0
			for b.Loop() {
				if err := ls[i].AppendAt(batch, next[i], 1); err != nil {
					b.Fatal(err)
				}
				next[i]++
				i = (i + 1) % logs
			}
			st := files.Stats()
			b.ReportMetric(float64(st.EvictionSyncs)/float64(b.N), "evictfsyncs/op")
		})
	}
}
