package compact

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/minikafka/minikafka-go/record"
)

// Shape of the benchmark log: about 64 MiB of records before compression,
// 10,000 distinct keys drawn uniformly, 100-byte values, 100 records a
// batch, so each key has about 50 versions and the latest ones are
// scattered over the last batches (the cleaner filters, and for a codec
// re-compresses, the batches that keep some of their records).
const (
	benchLogBytes   = 64 << 20
	benchKeys       = 10_000
	benchValueBytes = 100
	benchBatchRecs  = 100
)

// benchLog builds the log with codec and returns it with its record count.
func benchLog(b *testing.B, codec int) ([]byte, int) {
	b.Helper()
	rng := rand.New(rand.NewPCG(30, 30))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
	recs := make([]record.Record, benchBatchRecs)
	var log []byte
	var next int64
	raw := 0 // uncompressed bytes of keys and values so far
	for raw < benchLogBytes {
		for i := range recs {
			v := make([]byte, benchValueBytes)
			for j := range v {
				v[j] = alphabet[rng.IntN(len(alphabet))]
			}
			k := fmt.Appendf(nil, "key-%05d", rng.IntN(benchKeys))
			recs[i] = record.Record{Timestamp: 1_700_000_000_000 + next + int64(i), Key: k, Value: v}
			raw += len(k) + len(v)
		}
		start := len(log)
		var err error
		if log, err = record.AppendBatch(log, record.PlainBatch(codec), recs); err != nil {
			b.Fatal(err)
		}
		record.SetBaseOffset(log[start:], next)
		record.FinishBatch(log[start:])
		next += benchBatchRecs
	}
	return log, int(next)
}

// BenchmarkClean measures CleanAll over the whole log (one cleaning: the
// key map, then the rewrite) against copy, the baseline: walking the same
// batches and appending each to a buffer. MB/s is of the stored log (the
// bytes a cleaning reads); records/s lets the two codecs be compared.
func BenchmarkClean(b *testing.B) {
	for _, codec := range []int{record.CompressionNone, record.CompressionZstd} {
		log, n := benchLog(b, codec)
		dst := make([]byte, 0, len(log))
		p := Params{NowMs: 1_700_000_000_000 + int64(n), DeleteRetentionMs: 86_400_000}
		b.Run(fmt.Sprintf("codec=%s/clean", record.CodecName(codec)), func(b *testing.B) {
			b.SetBytes(int64(len(log)))
			var st Stats
			for b.Loop() {
				var err error
				if dst, st, err = CleanAll(dst[:0], record.Batches(log), p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(st.BytesIn), "bytes-in")
			b.ReportMetric(float64(st.BytesOut), "bytes-out")
		})
		b.Run(fmt.Sprintf("codec=%s/copy", record.CodecName(codec)), func(b *testing.B) {
			b.SetBytes(int64(len(log)))
			for b.Loop() {
				dst = dst[:0]
				for batch, err := range record.Batches(log) {
					if err != nil {
						b.Fatal(err)
					}
					dst = append(dst, batch...)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
