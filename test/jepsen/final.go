package jepsen

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/test/jepsen/history"
)

// FinalReads waits until no transaction is open on the topic (every
// partition's last stable offset has reached its end), sends one value to
// each partition (the end markers, recorded as sends), then reads every
// partition from the start to its marker, once at each isolation level,
// as assign polls of two new processes. Run it after the workload stopped
// and the cluster healed: its reads are what lost writes are judged by.
func FinalReads(ctx context.Context, cfg Config, rec *Recorder) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	adm, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...),
		kgo.RecordPartitioner(kgo.ManualPartitioner())}, cfg.ClientOpts...)...)
	if err != nil {
		return err
	}
	defer adm.Close()
	if err := settled(ctx, kadm.NewClient(adm), cfg.Topic); err != nil {
		return err
	}
	ends, err := endMarkers(ctx, &cfg, rec, adm)
	if err != nil {
		return err
	}
	for _, committed := range []bool{false, true} {
		if err := readAll(ctx, &cfg, rec, ends, committed); err != nil {
			return err
		}
	}
	return nil
}

// settled polls until every partition's last stable offset equals its
// high watermark.
func settled(ctx context.Context, adm *kadm.Client, topic string) error {
	for {
		hw, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = hw.Error()
		}
		var lso kadm.ListedOffsets
		if err == nil {
			lso, err = adm.ListCommittedOffsets(ctx, topic)
		}
		if err == nil {
			err = lso.Error()
		}
		if err == nil {
			hw.Each(func(o kadm.ListedOffset) {
				if l, ok := lso.Lookup(o.Topic, o.Partition); !ok || l.Offset != o.Offset {
					err = errOpen
				}
			})
		}
		if err == nil {
			return nil
		}
		if serr := sleep(ctx, 500*time.Millisecond); serr != nil {
			return fmt.Errorf("jepsen: waiting for open transactions on %s to end: %w (last: %w)", topic, serr, err)
		}
	}
}

// errOpen is a transaction still open on a partition.
var errOpen = errors.New("jepsen: last stable offset below the high watermark")

// endMarkers sends one value to each partition through cl, recorded as a
// send of a new process, and returns the offset after each.
func endMarkers(ctx context.Context, cfg *Config, rec *Recorder, cl *kgo.Client) (map[int32]int64, error) {
	proc := rec.NewProcess()
	ends := map[int32]int64{}
	for p := range cfg.Partitions {
		v := rec.NextValue()
		op := history.Op{Process: proc, Kind: history.Send, Invoke: rec.Now()}
		r := &kgo.Record{Topic: cfg.Topic, Partition: p, Value: strconv.AppendInt(nil, v, 10)}
		res, err := cl.ProduceSync(ctx, r).First()
		if err != nil {
			return nil, fmt.Errorf("jepsen: end marker of partition %d: %w", p, err)
		}
		op.Complete, op.Outcome = rec.Now(), history.OK
		op.Writes = []history.Write{{Partition: cfg.partitionName(p), Value: v, Offset: res.Offset}}
		rec.Add(op)
		ends[p] = res.Offset + 1
	}
	return ends, nil
}

// readAll reads every partition from offset 0 until it has read the
// record before its end, recording each poll.
func readAll(ctx context.Context, cfg *Config, rec *Recorder, ends map[int32]int64, committed bool) error {
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	at := map[int32]kgo.Offset{}
	left := map[int32]bool{}
	for p, end := range ends {
		at[p] = kgo.NewOffset().At(0)
		if end > 0 {
			left[p] = true
		}
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.FetchIsolationLevel(iso),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: at})}, cfg.ClientOpts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	w := &worker{cfg: cfg}
	proc := rec.NewProcess()
	for len(left) > 0 {
		op := history.Op{Process: proc, Kind: history.Poll, Invoke: rec.Now(), Assign: true, ReadCommitted: committed, Final: true}
		fs := cl.PollRecords(ctx, 1000)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("jepsen: final read (read_committed %v) did not reach the end of %d partitions: %w", committed, len(left), err)
		}
		op.Complete, op.Outcome, op.Reads = rec.Now(), history.OK, w.reads(fs)
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= ends[r.Partition] {
				delete(left, r.Partition)
			}
		})
		rec.Add(op)
	}
	return nil
}
