package partition

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/record"
)

// fromStart reads a replica's log from its start offset to its end.
func (g *group) fromStart(id int32) (int64, []byte) {
	g.t.Helper()
	r := g.reps[id]
	var out []byte
	for next := r.LogStartOffset(); next < r.HighWatermark(); {
		b, err := r.Read(next, 1<<20)
		if err != nil {
			g.t.Fatalf("replica %d: read at %d: %v", id, next, err)
		}
		for rest, prev := b, int64(-1); len(rest) > 0; prev = next {
			batch, more, h, err := record.Next(rest)
			if err == nil {
				_, err = record.Check(batch)
			}
			if err == nil && prev >= 0 && h.BaseOffset != prev {
				err = fmt.Errorf("batch at %d follows a batch ending at %d", h.BaseOffset, prev)
			}
			if err != nil {
				g.t.Fatalf("replica %d: partial or invalid batches: %v", id, err)
			}
			rest, next = more, h.NextOffset()
		}
		out = append(out, b...)
	}
	return r.LogStartOffset(), out
}

// TestTrimReachesEveryReplicaAndALaggingOne: a trim proposed by the leader
// sets the same log start offset on every replica, including one that
// was down and catches up from a snapshot taken after the trim; the logs
// from the start on are identical, and the start survives a restart.
func TestTrimReachesEveryReplicaAndALaggingOne(t *testing.T) {
	g := newGroup(t, 3)
	for i := range 40 {
		g.produce(idemBatch(t, 5, int32(i), fmt.Sprintf("%0200d", i)))
	}
	lid, _ := g.leader()
	down := lid%3 + 1 // a follower
	g.kill(down)
	_, leader := g.leader()
	segs := leader.Segments()
	target := segs[len(segs)/2].Base + 1
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start, err := leader.Trim(ctx, target)
	if err != nil || start != target {
		t.Fatalf("Trim(%d) = %d, %v", target, start, err)
	}
	var end int64
	for i := 40; i < 60; i++ { // enough entries for raft to compact past the trim
		end = g.produce(idemBatch(t, 5, int32(i), fmt.Sprintf("%0200d", i))) + 1
	}
	g.start(down)
	g.converge(end)
	ref, refLog := g.fromStart(down)
	for id := range g.reps {
		s, b := g.fromStart(id)
		if s != target || s != ref || !bytes.Equal(b, refLog) {
			t.Fatalf("replica %d: start %d (%d bytes); replica %d: start %d (%d bytes); want start %d everywhere",
				id, s, len(b), down, ref, len(refLog), target)
		}
	}
	for id := range g.reps {
		g.kill(id)
	}
	for _, id := range g.members {
		g.start(id)
	}
	g.converge(end)
	for id, r := range g.reps {
		if r.LogStartOffset() != target {
			t.Fatalf("after a restart replica %d starts at %d, want %d", id, r.LogStartOffset(), target)
		}
	}
}
