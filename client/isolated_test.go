package client

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// A broker cut off from the others lists only itself and no leader but
// itself. A client that first learned the cluster from it must not ask it
// alone from then on: its refreshes go back to the seeds, learn the other
// brokers and the leader, and the record is delivered.
func TestRefreshLeavesAnIsolatedBroker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 3, map[string]int{"events": 1}) // partition 0 led by node 1
		f.mu.Lock()
		f.isolated = 2
		f.mu.Unlock()
		p := fakeProducer(t, f, Brokers("fake:9002", "fake:9001", "fake:9003")) // node 2 answers first
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := p.ProduceSync(ctx, rec("events", "", "x")); err != nil {
			t.Fatalf("produce while the first broker asked is isolated: %v", err)
		}
	})
}
