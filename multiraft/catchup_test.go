package multiraft

import (
	"runtime"
	"testing"
	"time"
)

// A follower that comes back after a long absence is caught up as soon as
// its node answers again, not only after raft's replication backoff, which
// grows to about 10 s while the follower stays away: until then the group
// has one replica to spare fewer than it seems.
func TestReturnedFollowerCaughtUpAtOnce(t *testing.T) {
	n := newTestNet(t, nil)
	n.startWatched()
	members := []int32{1, 2, 3}
	groups := ledByNode1(t, n, []string{"g"}, [][]int32{members}, fastTiming())[0]
	n.stop(3)
	if err := groups[2].Close(); err != nil {
		t.Fatal(err)
	}
	away := time.Now().Add(12 * time.Second) // the backoff reaches 5 s
	for v := uint64(1); time.Now().Before(away); v++ {
		propose(t, groups[:2], v)
		time.Sleep(20 * time.Millisecond)
	}
	n.start(3)
	back := time.Now()
	g3, _ := n.open(3, "g", members, fastTiming(), false)
	want := groups[0].LastIndex()
	waitFor(t, "node 3 to catch up", func() bool { return g3.LastIndex() >= want })
	took := time.Since(back)
	t.Logf("node 3 caught up %v after its start", took)
	if took > 2*time.Second {
		t.Fatalf("node 3 caught up only %v after its start", took)
	}
}

// A follower restarted while entries were committed without it says it is
// behind until it has applied all of them, though one AppendEntries
// carries only some (its commit index stops at the last entry it got).
func TestRestartedFollowerBehindUntilCaughtUp(t *testing.T) {
	n := newTestNet(t, nil)
	n.startWatched()
	members := []int32{1, 2, 3}
	timing := fastTiming()
	timing.MaxAppendEntries = 4
	groups := ledByNode1(t, n, []string{"g"}, [][]int32{members}, timing)[0]
	n.stop(3)
	if err := groups[2].Close(); err != nil {
		t.Fatal(err)
	}
	for v := uint64(1); v <= 400; v++ {
		propose(t, groups[:2], v)
	}
	want := groups[0].Replication().CommitIndex
	n.start(3)
	g3, _ := n.open(3, "g", members, timing, false)
	early := 0 // samples that said caught up before entry want was applied
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := g3.Replication()
		if !r.Behind() && r.AppliedIndex < want {
			early++
		}
		if r.AppliedIndex >= want && !r.Behind() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 3 not caught up within 15s: %+v, want applied %d", r, want)
		}
		runtime.Gosched()
	}
	if early > 0 {
		t.Fatalf("node 3 said it was caught up %d times before applying index %d", early, want)
	}
}
