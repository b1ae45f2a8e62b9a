package raftgroup

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Upstream raft goroutines that may outlive Shutdown briefly (see
		// testcluster.GoleakOptions).
		goleak.IgnoreTopFunction("github.com/hashicorp/raft.(*Raft).leadershipTransfer"),
		goleak.IgnoreAnyFunction("github.com/hashicorp/raft.(*Raft).leaderLoop.func2"),
	)
}

type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nopSnap{}, nil }
func (nopFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

type nopSnap struct{}

func (nopSnap) Persist(s raft.SnapshotSink) error { return s.Close() }
func (nopSnap) Release()                          {}

func fastTiming() Timing {
	t := DefaultTiming()
	t.HeartbeatTimeout = 100 * time.Millisecond
	t.ElectionTimeout = 100 * time.Millisecond
	t.LeaderLeaseTimeout = 100 * time.Millisecond
	t.CommitTimeout = 5 * time.Millisecond
	return t
}

// cluster is a three-member group over in-memory transports; members are
// opened by the test.
type cluster struct {
	t       *testing.T
	timing  Timing // fastTiming unless a test sets it before opening
	ids     []raft.ServerID
	dirs    []string
	trans   []*raft.InmemTransport
	servers []raft.Server
	groups  []*Group
}

func newCluster(t *testing.T) *cluster {
	c := &cluster{t: t, groups: make([]*Group, 3), timing: fastTiming()}
	for i := range 3 {
		id := raft.ServerID([]string{"1", "2", "3"}[i])
		addr, tr := raft.NewInmemTransport(raft.ServerAddress("m" + string(id)))
		c.ids = append(c.ids, id)
		c.dirs = append(c.dirs, t.TempDir())
		c.trans = append(c.trans, tr)
		c.servers = append(c.servers, raft.Server{Suffrage: raft.Voter, ID: id, Address: addr})
	}
	for i := range 3 {
		for j := range 3 {
			if i != j {
				c.trans[i].Connect(c.servers[j].Address, c.trans[j])
			}
		}
	}
	t.Cleanup(c.closeAll)
	return c
}

func (c *cluster) open(i int, delay time.Duration) *Group {
	c.t.Helper()
	g, err := Open(Config{
		Dir: c.dirs[i], LocalID: c.ids[i], Servers: c.servers, Bootstrap: true,
		Transport: c.trans[i], Timing: c.timing, CampaignDelay: delay,
	}, nopFSM{})
	if err != nil {
		c.t.Fatal(err)
	}
	c.groups[i] = g
	return g
}

func (c *cluster) close(i int) {
	c.t.Helper()
	if c.groups[i] == nil {
		return
	}
	if err := c.groups[i].Close(); err != nil {
		c.t.Errorf("close member %d: %v", i+1, err)
	}
	c.groups[i] = nil
}

func (c *cluster) closeAll() {
	for i := range c.groups {
		c.close(i)
	}
}

// leader waits up to d for an open member to lead and returns its index.
func (c *cluster) leader(d time.Duration) int {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for i, g := range c.groups {
			if g != nil && g.Raft.State() == raft.Leader {
				return i
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return -1
}

func waitRestored(t *testing.T, g *Group, d time.Duration) {
	t.Helper()
	select {
	case <-g.TimingRestored():
	case <-time.After(d):
		t.Fatal("the group's timing was not restored")
	}
	if got := g.Raft.ReloadableConfig().HeartbeatTimeout; got != fastTiming().HeartbeatTimeout {
		t.Fatalf("heartbeat timeout %v after the hold, want %v", got, fastTiming().HeartbeatTimeout)
	}
}

// Held members of a new group, a quorum between them, do not campaign
// (without the hold they would elect one of themselves within a few
// heartbeat timeouts); the preferred member, released, wins in its first
// election, and the others take the normal timing some heartbeat
// timeouts after its first contact.
func TestNewGroupHeldMembersLetPreferredCampaign(t *testing.T) {
	c := newCluster(t)
	b := c.open(1, time.Minute)
	cg := c.open(2, time.Minute)
	time.Sleep(10 * fastTiming().HeartbeatTimeout)
	if l := c.leader(0); l >= 0 {
		t.Fatalf("member %d campaigned and won while held", l+1)
	}
	if b.Raft.CurrentTerm() != 1 || cg.Raft.CurrentTerm() != 1 {
		t.Fatalf("terms %d/%d: a held member campaigned", b.Raft.CurrentTerm(), cg.Raft.CurrentTerm())
	}
	if got := b.Raft.ReloadableConfig().HeartbeatTimeout; got != time.Minute || !b.Held() {
		t.Fatalf("held member runs with heartbeat timeout %v (held %v), want 1m", got, b.Held())
	}
	a := c.open(0, time.Minute)
	time.Sleep(3 * fastTiming().HeartbeatTimeout)
	if l := c.leader(0); l >= 0 {
		t.Fatalf("member %d campaigned before the release", l+1)
	}
	released := time.Now()
	a.ReleaseCampaign(0)
	if l := c.leader(5 * time.Second); l != 0 {
		t.Fatalf("leader is member %d, want the released member 1", l+1)
	}
	if d := time.Since(released); d > 5*fastTiming().HeartbeatTimeout {
		t.Fatalf("the released member took %v to win", d)
	}
	if term := a.Raft.CurrentTerm(); term != 2 {
		t.Fatalf("released member won in term %d, want 2 (one election)", term)
	}
	waitRestored(t, a, time.Second)
	// The followers keep the long timeouts for a while after they first
	// hear of the leader (holdAfterLeader), then take the normal ones.
	if !b.Held() {
		t.Fatal("a follower left the hold as soon as it heard of the leader")
	}
	waitRestored(t, b, 5*time.Second)
	waitRestored(t, cg, 5*time.Second)
	b.ReleaseCampaign(0) // no longer held: no-op

	// Fail-over keeps the normal timing: the leader goes away and another
	// member takes over well within the hold.
	start := time.Now()
	c.close(0)
	if l := c.leader(5 * time.Second); l < 1 {
		t.Fatal("no new leader after the preferred member left")
	}
	if d := time.Since(start); d > 20*fastTiming().HeartbeatTimeout {
		t.Fatalf("fail-over took %v", d)
	}
}

// A new group whose preferred member never comes still elects one of the
// others: after the deadline ReleaseCampaign set, or after CampaignDelay.
func TestNewGroupElectsWithoutPreferred(t *testing.T) {
	for _, release := range []bool{true, false} {
		t.Run(fmt.Sprintf("release=%v", release), func(t *testing.T) {
			c := newCluster(t)
			delay := 400 * time.Millisecond
			hold := delay
			if release {
				hold = time.Minute
			}
			start := time.Now()
			b, cg := c.open(1, hold), c.open(2, hold)
			if release {
				b.ReleaseCampaign(time.Hour) // replaced by the next call
				b.ReleaseCampaign(delay)
				cg.ReleaseCampaign(delay + 200*time.Millisecond)
			}
			l := c.leader(10 * time.Second)
			if l < 1 {
				t.Fatal("no leader without the preferred member")
			}
			if d := time.Since(start); d < delay {
				t.Fatalf("a held member led after %v, before its deadline %v", d, delay)
			}
			waitRestored(t, b, 5*time.Second)
			waitRestored(t, cg, 5*time.Second)
		})
	}
}

// A group reopened from disk is not held: only a group bootstrapped by
// this Open is.
func TestReopenedGroupIsNotHeld(t *testing.T) {
	c := newCluster(t)
	c.open(0, 0)
	c.open(1, 0)
	if c.leader(5*time.Second) < 0 {
		t.Fatal("no leader")
	}
	c.close(1)
	g := c.open(1, time.Minute)
	if g.Held() {
		t.Fatal("a reopened group was held")
	}
	if got := g.Raft.ReloadableConfig().HeartbeatTimeout; got != fastTiming().HeartbeatTimeout {
		t.Fatalf("reopened group's heartbeat timeout %v", got)
	}
}

// Closing a group that is still held stops the hold's goroutine (goleak
// checks) and a later release is a no-op.
func TestCloseWhileHeld(t *testing.T) {
	c := newCluster(t)
	g := c.open(0, time.Minute)
	c.close(0)
	g.ReleaseCampaign(0)
}

// waitHeartbeatTimeouts waits up to 2s until member i of c runs with
// heartbeat timeout want.
func waitHeartbeatTimeout(t *testing.T, c *cluster, i int, want time.Duration) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		got := c.groups[i].Raft.ReloadableConfig().HeartbeatTimeout
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("member %d (%v) runs with heartbeat timeout %v, want %v", i+1, c.groups[i].Raft.State(), got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// With Timing.LeaderHeartbeatTimeout, the leader runs with it and every
// follower with the normal timeout; the roles' timeouts follow a change
// of leader; followers of a leader heartbeating that rarely stay quiet
// (no election for many follower timeouts); a dead leader is still
// replaced within the followers' timing; and a held new group ends up the
// same way once its hold ends.
func TestLeaderRunsWithLeaderHeartbeatTimeout(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("held=%v", held), func(t *testing.T) {
			c := newCluster(t)
			hb := c.timing.HeartbeatTimeout
			leaderHB := MaxLeaderHeartbeatFactor * hb
			c.timing.LeaderHeartbeatTimeout = leaderHB
			delay := time.Duration(0)
			if held {
				delay = time.Minute
			}
			for i := range 3 {
				c.open(i, delay)
			}
			if held {
				c.groups[0].ReleaseCampaign(0)
				c.groups[1].ReleaseCampaign(3 * hb)
				c.groups[2].ReleaseCampaign(3 * hb)
			}
			l := c.leader(5 * time.Second)
			if l < 0 {
				t.Fatal("no leader")
			}
			for i := range 3 {
				want := hb
				if i == l {
					want = leaderHB
				}
				waitHeartbeatTimeout(t, c, i, want)
			}
			term := c.groups[l].Raft.CurrentTerm()
			time.Sleep(20 * hb)
			if got := c.groups[l].Raft.CurrentTerm(); got != term || c.groups[l].Raft.State() != raft.Leader {
				t.Fatalf("term %d -> %d (leader now %v): followers campaigned against a live leader", term, got, c.groups[l].Raft.State())
			}

			// A new leader takes the long timeout, the old one gives it up.
			next := (l + 1) % 3
			if err := c.groups[l].Raft.LeadershipTransferToServer(c.ids[next], c.servers[next].Address).Error(); err != nil {
				t.Fatal(err)
			}
			waitHeartbeatTimeout(t, c, next, leaderHB)
			waitHeartbeatTimeout(t, c, l, hb)

			// Fail-over keeps the followers' speed.
			start := time.Now()
			c.close(next)
			deadline := time.Now().Add(5 * time.Second)
			for l = -1; l < 0 || l == next; {
				if time.Now().After(deadline) {
					t.Fatal("no new leader after the leader left")
				}
				l = c.leader(10 * time.Millisecond)
			}
			if d := time.Since(start); d > 20*hb {
				t.Fatalf("fail-over took %v", d)
			}
			waitHeartbeatTimeout(t, c, l, leaderHB)
		})
	}
}

func TestTimingValidatesLeaderHeartbeatTimeout(t *testing.T) {
	for _, f := range []float64{0.5, MaxLeaderHeartbeatFactor + 0.5} {
		tm := fastTiming()
		tm.LeaderHeartbeatTimeout = time.Duration(f * float64(tm.HeartbeatTimeout))
		if err := tm.Validate(); err == nil {
			t.Errorf("leader heartbeat timeout %v with heartbeat timeout %v: no error", tm.LeaderHeartbeatTimeout, tm.HeartbeatTimeout)
		}
	}
	tm := fastTiming()
	tm.LeaderHeartbeatTimeout = 2 * tm.HeartbeatTimeout
	if err := tm.Validate(); err != nil {
		t.Error(err)
	}
}
