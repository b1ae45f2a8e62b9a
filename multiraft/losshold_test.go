package multiraft

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// candidacies records, per node, when each member became a candidate and
// when it stopped being one, through an observer filter (it runs on raft's
// goroutine as the state changes).
type candidacies struct {
	mu     sync.Mutex // guards events
	events map[int32][]candidacy
}

type candidacy struct {
	group string
	at    time.Time
	start bool // became a candidate (else stopped being one)
}

func (c *candidacies) watch(node int32, g *Group) {
	was := false // touched only on g's raft goroutine
	g.raft.RegisterObserver(raft.NewObserver(nil, false, func(o *raft.Observation) bool {
		st, ok := o.Data.(raft.RaftState)
		if !ok || (st == raft.Candidate) == was {
			return false
		}
		was = st == raft.Candidate
		c.mu.Lock()
		c.events[node] = append(c.events[node], candidacy{g.Name(), time.Now(), was})
		c.mu.Unlock()
		return false
	}))
}

// maxAtOnce is the most members of node that were candidates at once
// since from.
func (c *candidacies) maxAtOnce(node int32, from time.Time) (most int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	evs := slices.Clone(c.events[node])
	slices.SortFunc(evs, func(a, b candidacy) int { return a.at.Compare(b.at) })
	for _, e := range evs {
		if e.at.Before(from) {
			continue
		}
		if e.start {
			n++
		} else {
			n--
		}
		most = max(most, n)
	}
	return most
}

// When a node that led many groups is lost, the survivors run at most
// SuccessorsInFlight successor elections at a time, and the other members
// of those groups are held back from campaigning on their own (before,
// every successor campaigned at once, and under load raft's own timeouts
// fired in the other members too: 10,000 partitions never re-led).
func TestLargeLossElectsAFewAtATime(t *testing.T) {
	const groups, inFlight = 30, 4 // at most SmallBatch: the others settle soon after node 1 leads
	n := newTestNet(t, func(tun *Tuning) {
		tun.SuccessorsInFlight = inFlight
		tun.CampaignSlot = 5 * time.Second // a slow run stalls no successor for that long
		tun.RebalanceInterval = -1
	})
	n.startWatched()
	timing := fastTiming()
	timing.HeartbeatTimeout, timing.ElectionTimeout = time.Second, time.Second // a steady start under -race
	c := &candidacies{events: map[int32][]candidacy{}}
	names := make([]string, groups)
	members := make([][]int32, groups)
	for i := range names {
		names[i], members[i] = fmt.Sprintf("g%d", i), []int32{1, 2, 3}
		if i%2 == 1 {
			members[i] = []int32{1, 3, 2}
		}
	}
	all := ledByNode1(t, n, names, members, timing)
	for i := range all {
		for id := int32(2); id <= 3; id++ {
			c.watch(id, all[i][id-1])
		}
	}
	waitFor(t, "every follower quiesced", func() bool { return allQuiet(all) })

	lost := time.Now()
	n.stop(1)
	for i := range all {
		live := append([]*Group{nil}, all[i][1:]...)
		waitFor(t, "every group led again", func() bool {
			at := -1
			for j, g := range live {
				if g != nil && g.IsLeader() {
					at = j
				}
			}
			if at < 0 {
				return false
			}
			for _, g := range live[1:] {
				if l, _, ok := g.Leader(); !ok || l != int32(at+1) {
					return false
				}
			}
			return true
		})
	}
	for id := int32(2); id <= 3; id++ {
		if most := c.maxAtOnce(id, lost); most > inFlight {
			t.Errorf("node %d had %d candidates at once, want at most %d", id, most, inFlight)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, evs := range c.events {
		for _, e := range evs {
			if e.at.Before(lost) {
				t.Errorf("node %d campaigned in %s before the loss", id, e.group)
				continue
			}
			var i int
			fmt.Sscanf(e.group, "g%d", &i)
			if first := SuccessorOrder(e.group, members[i], 1)[0]; e.start && first != id {
				t.Errorf("node %d campaigned in %s, whose successor is node %d", id, e.group, first)
			}
		}
	}
}

// A held member is released twice CampaignSlot after a successor's
// election reached it (its group's term moved) without a leader, although
// other elections still run. Before, it stayed held until the last of
// them ended, keeping its lost leader and refusing every vote that was not
// a transfer's: a group whose successor's election failed waited that long.
func TestHeldMemberReleasedWhenItsElectionFailed(t *testing.T) {
	n := newTestNet(t, func(tun *Tuning) { tun.RebalanceInterval = -1 })
	n.startWatched()
	g := ledByNode1(t, n, []string{"g"}, [][]int32{{1, 2, 3}}, fastTiming())[0][1]
	waitFor(t, "the new group's campaign hold to end", func() bool { return !g.held() })
	n.stop(1)
	n.stop(3) // nothing elects: whatever node 2's member does, it finds no leader
	h := n.host(2)
	f := &failover{h: h, held: map[*Group]heldMember{}}
	f.hold(g, ServerID(1))
	if _, held := f.held[g]; !held || g.raft.ReloadableConfig().HeartbeatTimeout == g.normal.HeartbeatTimeout {
		t.Fatal("the member was not held")
	}
	start := time.Now()
	// Another successor election runs on: the last-resort release waits.
	f.running = []election{{g: g, lost: ServerID(1), until: start.Add(time.Hour)}}
	m := f.held[g]
	m.term-- // as if a successor's vote request had moved the group's term
	f.held[g] = m
	moved := start.Add(heldCheckInterval)
	f.step(moved)
	f.step(moved.Add(2*h.tun.CampaignSlot - heldCheckInterval))
	if _, held := f.held[g]; !held {
		t.Fatal("released before twice CampaignSlot had passed since the term moved")
	}
	f.step(moved.Add(2 * h.tun.CampaignSlot))
	if _, held := f.held[g]; held {
		t.Fatal("still held twice CampaignSlot after the term moved without a leader")
	}
	if got := g.raft.ReloadableConfig().HeartbeatTimeout; got != g.normal.HeartbeatTimeout {
		t.Fatalf("released with heartbeat timeout %v, want %v", got, g.normal.HeartbeatTimeout)
	}
}

// The failover loop counts in manyElecting, which LeaseVouch follows, only
// while it works on a loss larger than the elections that run at once;
// every loss counts in electing.
func TestOnlyALargeLossCountsAsMany(t *testing.T) {
	h := newTestNet(t, nil).start(1)
	f := &failover{h: h, held: map[*Group]heldMember{}}
	f.pending = []successor{{}}
	f.markBusy()
	if h.electing.Load() != 1 || h.manyElecting.Load() != 0 {
		t.Fatalf("a small loss: electing %d, many %d; want 1 and 0", h.electing.Load(), h.manyElecting.Load())
	}
	f.large = true
	f.markBusy()
	if h.manyElecting.Load() != 1 {
		t.Fatalf("a large loss: many %d, want 1", h.manyElecting.Load())
	}
	f.pending = nil
	f.markBusy()
	if h.electing.Load() != 0 || h.manyElecting.Load() != 0 || f.large || h.manyEnded.Load() == 0 {
		t.Fatalf("done: electing %d, many %d, large %v, end stamped %v; want 0, 0, false, true",
			h.electing.Load(), h.manyElecting.Load(), f.large, h.manyEnded.Load() != 0)
	}
}
