package partition

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/logging"
	"github.com/minikafka/minikafka-go/partition/compact"
	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/record"
)

// The group of the load benchmark: 100 partitions, committed 10 a batch
// (one OffsetCommit of a member that owns 10 of them).
const (
	loadGroup      = "bench-group"
	loadTopic      = "orders"
	loadPartitions = 100
	loadBatchRecs  = 10
	loadStartMs    = 1_700_000_000_000
	loadRetention  = 86_400_000 // delete.retention.ms default
)

// benchOffsetsLog is a __consumer_offsets partition's log as a group
// coordinator writes it (groupcoord's records and batches): the group's
// metadata, then commits offset commits of the same 100 partitions, one
// batch a millisecond. nowMs is the leader's clock just after the last.
func benchOffsetsLog(b *testing.B, commits int) (log []byte, nowMs int64) {
	b.Helper()
	ts, next := int64(loadStartMs), int64(0)
	add := func(recs []groupcoord.Record) {
		start := len(log)
		var err error
		if log, err = groupcoord.AppendBatch(log, recs, ts); err != nil {
			b.Fatal(err)
		}
		record.SetBaseOffset(log[start:], next)
		record.FinishBatch(log[start:])
		next += int64(len(recs))
		ts++
	}
	add([]groupcoord.Record{groupcoord.GroupRecord(loadGroup, &groupcoord.GroupMetadata{
		ProtocolType: "consumer", Generation: 1, Protocol: "range", Leader: "m-0", StateTimestamp: ts})})
	recs := make([]groupcoord.Record, 0, loadBatchRecs)
	for i := range commits {
		o := groupcoord.Offset{Offset: int64(i/loadPartitions + 1), LeaderEpoch: 3, CommitTimestamp: ts}
		recs = append(recs, groupcoord.OffsetRecord(loadGroup, loadTopic, int32(i%loadPartitions), o))
		if len(recs) == loadBatchRecs || i == commits-1 {
			add(recs)
			recs = recs[:0]
		}
	}
	return log, ts
}

// writeSegLog stores log in a segment log in dir and returns the bytes
// its files take once closed (segments and indexes).
func writeSegLog(b *testing.B, dir string, log []byte) int64 {
	b.Helper()
	l, err := seglog.Open(dir, seglog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for batch, err := range record.Batches(log) {
		if err == nil {
			err = l.Append(batch)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	var size int64
	err = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			size += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return size
}

// benchViewSink feeds a groupcoord.View as broker/coordhost's viewSink
// does; that one is unexported and reached only through a running node's
// replica host, while the replay itself is this package's recordFeeder.
type benchViewSink struct{ view *groupcoord.View }

func (s benchViewSink) Reset() { _ = s.view.Restore(groupcoord.NewView().AppendSnapshot(nil)) }
func (s benchViewSink) Record(key, value []byte) {
	_ = s.view.Apply(key, value)
}
func (s benchViewSink) TxnRecord(pid int64, epoch int16, r record.Record) {
	_ = s.view.ApplyTxn(pid, epoch, r)
}
func (s benchViewSink) Marker(pid int64, commit bool) { s.view.Marker(pid, commit) }

var _ TxnRecordSink = benchViewSink{}

// loadView is what OpenReplica does for a __consumer_offsets replica
// before its Raft group starts, without the FSM: open the segment log
// (which checks the active segment batch by batch) and replay it into a
// fresh view. replay is the time the replay took; the caller closes the
// log.
func loadView(dir string) (v *groupcoord.View, l *seglog.Log, replay time.Duration, err error) {
	if l, err = seglog.Open(dir, seglog.Options{}); err != nil {
		return nil, nil, 0, err
	}
	v = groupcoord.NewView()
	feeder := &recordFeeder{sink: benchViewSink{view: v}, log: l, logger: logging.Discard()}
	start := time.Now()
	err = feeder.rebuild()
	return v, l, time.Since(start), err
}

// BenchmarkOffsetsLoad measures loading a group coordinator's view from
// its __consumer_offsets partition after 10,000 and after 1,000,000
// commits of the same 100 offsets: from the log as cleaned by one cleaning
// of all of it (compact.CleanAll at the leader's clock just after the
// last commit), and from the uncleaned log, the baseline. A load is
// seglog.Open and the replay; replay-ns is the replay's share. log-bytes
// is the log's size, disk-bytes its files' (segments and indexes).
func BenchmarkOffsetsLoad(b *testing.B) {
	for _, commits := range []int{10_000, 1_000_000} {
		raw, nowMs := benchOffsetsLog(b, commits)
		cleaned, _, err := compact.CleanAll(nil, record.Batches(raw),
			compact.Params{NowMs: nowMs, DeleteRetentionMs: loadRetention})
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct {
			name string
			log  []byte
		}{{"cleaned", cleaned}, {"uncleaned", raw}} {
			b.Run(fmt.Sprintf("commits=%d/log=%s", commits, c.name), func(b *testing.B) {
				dir := filepath.Join(b.TempDir(), "log")
				disk := writeSegLog(b, dir, c.log)
				var v *groupcoord.View
				var replay time.Duration
				for b.Loop() {
					var l *seglog.Log
					var d time.Duration
					v, l, d, err = loadView(dir)
					b.StopTimer()
					replay += d
					if l != nil {
						l.Close()
					}
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				checkLoaded(b, v, commits)
				b.ReportMetric(float64(replay.Nanoseconds())/float64(b.N), "replay-ns/op")
				b.ReportMetric(float64(len(c.log)), "log-bytes")
				b.ReportMetric(float64(disk), "disk-bytes")
			})
		}
	}
}

// checkLoaded fails unless v holds the last commit of every partition.
func checkLoaded(b *testing.B, v *groupcoord.View, commits int) {
	b.Helper()
	for p := range loadPartitions {
		want := int64((commits-1-p)/loadPartitions + 1)
		if o, ok := v.Offset(loadGroup, loadTopic, int32(p)); !ok || o.Offset != want {
			b.Fatalf("partition %d: loaded offset %d (%v), want %d", p, o.Offset, ok, want)
		}
	}
	if _, ok := v.Group(loadGroup); !ok {
		b.Fatal("the group's metadata was not loaded")
	}
}
