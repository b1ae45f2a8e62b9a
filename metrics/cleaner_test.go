package metrics_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// A compacted topic's cleanings show in /metrics: how many ran, bytes read
// and kept (fewer: 100 records of 10 keys collapse to 10), on the node.
// How many cleanings run while the records arrive one by one depends on
// timing, and each reads the part cleaned before again, so only "fewer"
// is certain, not how many fewer.
func TestCleanerMetrics(t *testing.T) {
	c := testcluster.Start(t, 1, func(cfg *broker.Config) { cfg.CleanerBackoff = 200 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "cleaned"
	adm := kadm.NewClient(c.Client(t))
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, topic); err != nil {
		t.Fatal(err)
	}
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 100 {
		r := &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i%10)), Value: []byte(fmt.Sprint(i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	url := adminServers(t, c)[0]
	for {
		s := getScrape(t, url)
		read := s.samples[partitionSeries("partition_cleaner_read_bytes_total", topic, 0)]
		written := s.samples[partitionSeries("partition_cleaner_written_bytes_total", topic, 0)]
		if s.samples[partitionSeries("partition_cleanings_total", topic, 0)] >= 1 && read > 0 && written > 0 && written < read {
			if full, ok := s.samples[partitionSeries("partition_cleaner_map_full_total", topic, 0)]; !ok || full != 0 {
				t.Fatalf("10 keys in a map of 128 MiB: map full %v times (reported: %v)", full, ok)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("no cleaning in /metrics within a minute (read %v, written %v bytes)", read, written)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The leader of a compacted partition reports its dirty ratio and the age
// of its first dirty record: none left after a cleaning; some, and the
// age growing, once new duplicates stay below min.cleanable.dirty.ratio;
// none again once a lower ratio lets the cleaner take them. A topic that
// is not compacted reports neither.
func TestDirtMetrics(t *testing.T) {
	c := testcluster.Start(t, 1, func(cfg *broker.Config) { cfg.CleanerBackoff = 100 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	compacted := map[string]*string{"cleanup.policy": kadm.StringPtr("compact"), "min.cleanable.dirty.ratio": kadm.StringPtr("0.9")}
	if resp, err := adm.CreateTopic(ctx, 1, 1, compacted, "dirt"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	if resp, err := adm.CreateTopic(ctx, 1, 1, nil, "plain"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	// Lingering, each produce is one batch: a cleaning never falls
	// between its records.
	cl := c.Client(t, kgo.ProducerLinger(100*time.Millisecond))
	produce := func(topic string, keys ...string) {
		t.Helper()
		var recs []*kgo.Record
		for _, k := range keys {
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte("v")})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var keys []string
	for k := range 200 {
		keys = append(keys, fmt.Sprintf("k%03d", k), "k000")
	}
	produce("dirt", keys...)
	produce("plain", keys...)

	url := adminServers(t, c)[0]
	type dirt struct{ ratio, lag, cleanings float64 }
	await := func(what string, ok func(dirt) bool) dirt {
		t.Helper()
		for {
			s := getScrape(t, url)
			ratio, hasRatio := s.samples[partitionSeries("partition_dirty_ratio", "dirt", 0)]
			lag, hasLag := s.samples[partitionSeries("partition_cleaner_lag_seconds", "dirt", 0)]
			d := dirt{ratio, lag, s.samples[partitionSeries("partition_cleanings_total", "dirt", 0)]}
			if _, ok := s.samples[partitionSeries("partition_dirty_ratio", "plain", 0)]; ok {
				t.Fatal("a topic with cleanup.policy=delete reports a dirty ratio")
			}
			if hasRatio && hasLag && ok(d) {
				return d
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: never seen in /metrics; last %+v (ratio reported %v, lag %v)", what, d, hasRatio, hasLag)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	first := await("the first cleaning", func(d dirt) bool { return d.cleanings >= 1 && d.ratio == 0 && d.lag == 0 })

	produce("dirt", "k001", "k001", "k001")
	dirty := await("new duplicates below the ratio", func(d dirt) bool { return d.ratio > 0 && d.lag > 0 })
	if dirty.ratio >= 0.9 || dirty.cleanings != first.cleanings {
		t.Fatalf("3 new records of 403: dirty ratio %v after %v cleanings, want under 0.9 and no new cleaning (%v before)",
			dirty.ratio, dirty.cleanings, first.cleanings)
	}
	await("the lag growing", func(d dirt) bool { return d.lag >= dirty.lag+0.2 && d.ratio == dirty.ratio })

	alter := []kadm.AlterConfig{{Name: "min.cleanable.dirty.ratio", Value: kadm.StringPtr("0.01")}}
	if resps, err := adm.AlterTopicConfigs(ctx, alter, "dirt"); err != nil || resps[0].Err != nil {
		t.Fatalf("alter: %v %v", err, resps)
	}
	await("the cleaning of the new duplicates", func(d dirt) bool { return d.cleanings > first.cleanings && d.ratio == 0 && d.lag == 0 })
}

// A cleaning whose map of keys fills before its range's end counts in
// /metrics: 3,000 keys found dirty at once, in a map of about 950.
func TestCleanerMapFullMetric(t *testing.T) {
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		cfg.CleanerBackoff = 100 * time.Millisecond
		cfg.CleanerDedupeBufferSize = 64 << 10
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "full"
	adm := kadm.NewClient(c.Client(t))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 3000 {
		recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%04d", i)})
	}
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(4<<10))
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	alter := []kadm.AlterConfig{{Name: "cleanup.policy", Value: kadm.StringPtr("compact")}}
	if resps, err := adm.AlterTopicConfigs(ctx, alter, topic); err != nil || resps[0].Err != nil {
		t.Fatalf("alter: %v %v", err, resps)
	}
	url := adminServers(t, c)[0]
	for {
		s := getScrape(t, url)
		if s.samples[partitionSeries("partition_cleaner_map_full_total", topic, 0)] >= 1 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("no full map in /metrics within a minute (%v cleanings)", s.samples[partitionSeries("partition_cleanings_total", topic, 0)])
		}
		time.Sleep(100 * time.Millisecond)
	}
}
