package kafkaapi

import (
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A new leader whose log is still short (it has not applied its
// predecessors' entries) settles before OffsetForLeaderEpoch, ListOffsets
// and a Fetch past its high watermark answer, so none of them takes the
// short log for the truth; a Settle error is answered as is.
func TestSettleBeforeAnswering(t *testing.T) {
	h := startServer(t, Config{})
	p := h.fb.addTopic("t", 1)[0]
	p.append(makeBatch(1, "a", "b")) // epoch 5
	p.set(func(p *fakePartition) { p.epoch = 6 })
	// pending is applied when the leader settles; mu orders the test's
	// and the server's uses (TCP does not, for the race detector).
	var mu sync.Mutex
	pending := [][]byte{makeBatch(2, "c")}
	settled := 0
	h.fb.set(func(b *fakeBackend) {
		b.settle = func(p *fakePartition) error {
			mu.Lock()
			defer mu.Unlock()
			settled++
			for _, b := range pending {
				p.set(func(p *fakePartition) { p.epoch = 5 })
				p.append(b)
				p.set(func(p *fakePartition) { p.epoch = 6 })
			}
			pending = nil
			return nil
		}
	})
	c := h.dial()
	got := c.roundTrip(offsetForLeaderEpochRequest(4, "t", 6, 5)).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
	mu.Lock()
	n := settled
	mu.Unlock()
	if got.ErrorCode != 0 || got.LeaderEpoch != 5 || got.EndOffset != 3 || n != 1 {
		t.Fatalf("OffsetForLeaderEpoch: %+v after %d settles, want epoch 5 ending at 3", got, n)
	}
	mu.Lock()
	pending = [][]byte{makeBatch(3, "d")}
	mu.Unlock()
	lo := c.roundTrip(listOffsetsRequest(7, "t", -1, -1)).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if lo.ErrorCode != 0 || lo.Offset != 4 {
		t.Fatalf("ListOffsets latest: %+v, want 4", lo)
	}

	// A fetch past the end settles (and here finds data) instead of
	// answering OFFSET_OUT_OF_RANGE.
	mu.Lock()
	pending = [][]byte{makeBatch(4, "e")}
	mu.Unlock()
	rp := fetch(t, c, fetchRequest(12, "t", 0, 1, 5)).Topics[0].Partitions[0]
	if rp.ErrorCode != 0 || rp.HighWatermark != 5 {
		t.Fatalf("Fetch past the end: %+v", rp)
	}
	h.fb.set(func(b *fakeBackend) {
		b.settle = func(*fakePartition) error { return kerr.NotLeaderForPartition }
	})
	got = c.roundTrip(offsetForLeaderEpochRequest(4, "t", 6, 5)).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
	if got.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("settle failed: %+v", got)
	}
}
