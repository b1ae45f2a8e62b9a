package txncoord

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A transactional id whose transaction is complete (or that never began
// one) is forgotten once idle for the expiration, and starts afresh with a
// new producer id; one with a transaction open, or touched since, stays.
func TestExpireTransactionalIDs(t *testing.T) {
	ctx := context.Background()
	view, mk := NewView(), &memMarkers{}
	c := newTestCoordinator(t, view, mk, Config{})
	const expiration = time.Hour
	pidDone, epochDone, _ := c.InitProducerID(ctx, "done", time.Minute, -1, -1)
	if err := c.AddPartitions(ctx, "done", pidDone, epochDone, []TopicPartition{{"a", 0}}); err != nil {
		t.Fatal(err)
	}
	if err := c.EndTxn(ctx, "done", pidDone, epochDone, true); err != nil {
		t.Fatal(err)
	}
	waitState(t, view, "done", CompleteCommit)
	c.InitProducerID(ctx, "idle", time.Minute, -1, -1)
	pidOpen, epochOpen, _ := c.InitProducerID(ctx, "open", time.Minute, -1, -1)
	if err := c.AddPartitions(ctx, "open", pidOpen, epochOpen, []TopicPartition{{"a", 0}}); err != nil {
		t.Fatal(err)
	}
	first, last := int64(1<<62), int64(0)
	for _, id := range []string{"done", "idle", "open"} {
		m, _ := view.Txn(id)
		first, last = min(first, m.LastUpdate), max(last, m.LastUpdate)
	}

	if n, err := c.ExpireTransactionalIDs(ctx, time.UnixMilli(first).Add(expiration-time.Millisecond), expiration); err != nil || n != 0 {
		t.Fatalf("expired %d (%v) before the expiration passed", n, err)
	}
	n, err := c.ExpireTransactionalIDs(ctx, time.UnixMilli(last).Add(expiration), expiration)
	if err != nil || n != 2 {
		t.Fatalf("expired %d (%v), want done and idle", n, err)
	}
	for id, want := range map[string]bool{"done": false, "idle": false, "open": true} {
		if _, ok := view.Txn(id); ok != want {
			t.Errorf("%s kept: %v, want %v", id, ok, want)
		}
	}
	if _, err := c.check("done", pidDone, epochDone); !errors.Is(err, kerr.InvalidProducerIDMapping) {
		t.Fatalf("the expired id's old producer: %v", err)
	}
	pid, epoch, err := c.InitProducerID(ctx, "done", time.Minute, -1, -1)
	if err != nil || pid == pidDone || epoch != 0 {
		t.Fatalf("the expired id starts afresh with %d/%d (%v), had %d", pid, epoch, err, pidDone)
	}
	touched, _ := view.Txn("done")
	if n, _ := c.ExpireTransactionalIDs(ctx, time.UnixMilli(touched.LastUpdate).Add(expiration-time.Millisecond), expiration); n != 0 {
		t.Fatalf("expired %d ids touched since", n)
	}
	c.Close()
	if _, err := c.ExpireTransactionalIDs(ctx, time.UnixMilli(last).Add(10*expiration), expiration); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("closed coordinator: %v", err)
	}
}
