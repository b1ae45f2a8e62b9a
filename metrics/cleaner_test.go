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
		if s.samples[partitionSeries("partition_cleanings_total", topic, 0)] >= 1 && read > 0 && written > 0 && written < read/2 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("no cleaning in /metrics within a minute (read %v, written %v bytes)", read, written)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
