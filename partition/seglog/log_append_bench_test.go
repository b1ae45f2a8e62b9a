package seglog

import (
	"fmt"
	"testing"
)

// BenchmarkLogAppendSizes is BenchmarkLogAppend at the batch sizes the
// bench's peaks apply: about 96 KiB per entry over twelve partitions, 900
// KiB over one (docs/results/metrics-2026-12-05-entries-1p-12p.txt).
func BenchmarkLogAppendSizes(b *testing.B) {
	for _, size := range []int{96 << 10, 900 << 10} {
		b.Run(fmt.Sprintf("size=%dKiB", size>>10), func(b *testing.B) {
			batch := newBatch(0, size>>10, 1000, 1)
			l, err := Open(b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.SetBytes(int64(len(batch)))
			var next int64
			for b.Loop() {
				if err := l.AppendAt(batch, next, 3); err != nil {
					b.Fatal(err)
				}
				next += int64(size >> 10)
			}
		})
	}
}
