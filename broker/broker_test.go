package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// A new user's first run: one node, kgo (idempotent by default) produces
// 10,000 records to an auto-created topic and reads them back; after a
// restart the node serves the same data.
func TestSingleNodeProduceConsumeRestart(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 1)
	cl := c.Client(t, kgo.DefaultProduceTopic("first"), kgo.AllowAutoTopicCreation())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs := values(10000, "first")
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	got := consumeAll(t, c.Seeds(), "first", 10000)
	for i, r := range got {
		if string(r.Value) != fmt.Sprintf("first-%06d", i) || r.Offset != int64(i) {
			t.Fatalf("record %d: offset %d value %q", i, r.Offset, r.Value)
		}
	}
	cl.Close()

	c.StopNode(1)
	c.StartNode(1)
	c.WaitReady()
	again := consumeAll(t, c.Seeds(), "first", 10000)
	if len(again) != 10000 || string(again[9999].Value) != "first-009999" {
		t.Fatalf("after restart: %d records, last %q", len(again), again[len(again)-1].Value)
	}
}
