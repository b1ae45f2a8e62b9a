package fsm_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/record"
)

// The log the cleaning cleans: about 64 MiB of 100-byte values under
// 10,000 keys drawn uniformly, 100 records a batch. The measured produces
// are batches of 10 such records.
const (
	cbLogBytes    = 64 << 20
	cbKeys        = 10_000
	cbValueBytes  = 100
	cbFillRecs    = 100
	cbProduceRecs = 10
	cbStartMs     = 1_700_000_000_000
	cbRetentionMs = 86_400_000
)

// keyedBatch is a plain uncompressed batch of n records with keys from rng.
func keyedBatch(b *testing.B, rng *rand.Rand, n int, ts int64) []byte {
	b.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		v := make([]byte, cbValueBytes)
		for j := range v {
			v[j] = byte('a' + rng.IntN(26))
		}
		recs[i] = record.Record{Timestamp: ts, Key: fmt.Appendf(nil, "key-%05d", rng.IntN(cbKeys)), Value: v}
	}
	out, err := record.AppendBatch(nil, record.PlainBatch(record.CompressionNone), recs)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// filledFSM is an FSM over a real segment log in a temporary directory
// holding the log to clean; next is the next Raft index to apply.
func filledFSM(b *testing.B, rng *rand.Rand) (f *fsm.FSM, next uint64) {
	b.Helper()
	dir := b.TempDir()
	l, err := seglog.Open(filepath.Join(dir, "log"), seglog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if f, err = fsm.New(fsm.Config{Dir: filepath.Join(dir, "fsm")}, l); err != nil {
		l.Close()
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close(); l.Close() })
	next = 1
	for l.Size() < cbLogBytes {
		entries := make([]*raft.Log, 64)
		for i := range entries {
			entries[i] = produce(next, 1, keyedBatch(b, rng, cbFillRecs, cbStartMs+int64(next)))
			next++
		}
		for _, res := range f.ApplyBatch(entries) {
			if r := result(b, res); r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	return f, next
}

// BenchmarkProduceDuringCleaning measures applying produce entries, one
// ApplyBatch each, to an FSM over a real log, with no cleaning running
// (cleaning=off, the baseline) and while the FSM's cleaner goroutine
// cleans the 64 MiB log below them (cleaning=on: a CmdClean is applied
// just before the loop, and nothing waits for it). Percentiles are of the
// ApplyBatch durations; with cleaning=on only of the applies that began
// and ended while the cleaning ran (measured says how many). clean-cmd-ns
// is the apply of the CmdClean itself (it seals the active segment and
// may checkpoint on the FSM goroutine); clean-ms is how long the cleaning
// took from its command.
func BenchmarkProduceDuringCleaning(b *testing.B) {
	for _, cleaning := range []bool{false, true} {
		b.Run(fmt.Sprintf("cleaning=%s", map[bool]string{false: "off", true: "on"}[cleaning]), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(30, 3))
			f, idx := filledFSM(b, rng)
			cmds := make([][]byte, 1024)
			for i := range cmds {
				cmds[i] = fsm.EncodeProduce(keyedBatch(b, rng, cbProduceRecs, cbStartMs+int64(idx)))
			}
			b.SetBytes(int64(len(cmds[0]) - 1))
			var cleanStart time.Time
			var cmdTook time.Duration // reported after the loop, which drops metrics reported before it
			if cleaning {
				cleanStart = time.Now()
				res := f.ApplyBatch([]*raft.Log{{Index: idx, Term: 1, Type: raft.LogCommand,
					Data: fsm.EncodeClean(1<<62, cbStartMs+int64(idx), cbRetentionMs, 0, 0)}})
				if r, ok := res[0].(*fsm.CleanResult); !ok || !r.Queued {
					b.Fatalf("the cleaning was not queued: %+v", res[0])
				}
				cmdTook = time.Since(cleanStart)
				idx++
			}
			entry := &raft.Log{Type: raft.LogCommand, Term: 1}
			batch := []*raft.Log{entry}
			lat := make([]time.Duration, 0, 1<<16)
			var cleanTook time.Duration
			for b.Loop() {
				entry.Index, entry.Data = idx, cmds[idx%uint64(len(cmds))]
				idx++
				start := time.Now()
				res := f.ApplyBatch(batch)
				d := time.Since(start)
				if r := res[0].(*fsm.ProduceResult); r.Err != nil {
					b.Fatal(r.Err)
				}
				if !cleaning {
					lat = append(lat, d)
				} else if runs, _ := f.Cleanings(); runs == 0 {
					lat = append(lat, d)
				} else if cleanTook == 0 {
					cleanTook = time.Since(cleanStart)
				}
			}
			reportCleaning(b, f, cleaning, cleanStart, cleanTook)
			if cleaning {
				b.ReportMetric(float64(cmdTook.Nanoseconds()), "clean-cmd-ns")
			}
			reportLatencies(b, lat)
		})
	}
}

// reportCleaning waits for a cleaning to finish, checks that it removed
// records, and reports how long it took from its command.
func reportCleaning(b *testing.B, f *fsm.FSM, cleaning bool, start time.Time, took time.Duration) {
	b.Helper()
	if !cleaning {
		return
	}
	f.WaitCleanings()
	if took == 0 {
		took = time.Since(start) // it outlasted the loop
	}
	runs, st := f.Cleanings()
	if runs != 1 || st.RecordsOut >= st.RecordsIn {
		b.Fatalf("%d cleanings, %d of %d records kept", runs, st.RecordsOut, st.RecordsIn)
	}
	b.ReportMetric(float64(took.Milliseconds()), "clean-ms")
}

// reportLatencies reports the 50th and 99th percentiles and the maximum
// of lat, and its length as measured.
func reportLatencies(b *testing.B, lat []time.Duration) {
	b.Helper()
	if len(lat) == 0 {
		b.Fatal("no apply was measured (the cleaning ended before the first)")
	}
	slices.Sort(lat)
	at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Nanoseconds()) }
	b.ReportMetric(at(0.50), "p50-ns")
	b.ReportMetric(at(0.99), "p99-ns")
	b.ReportMetric(at(1), "max-ns")
	b.ReportMetric(float64(len(lat)), "measured")
}
