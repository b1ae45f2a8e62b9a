package multiraft

import (
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// Elections after a large loss. A node that led thousands of groups
// leaves the survivors with thousands of elections at once. Started
// together, their vote requests queue behind each other past raft's
// election timeout on a busy node, the candidates start over in a newer
// term, the members that are not successors time out and campaign too,
// and the elections never end (10,000 partitions, kill -9 of a node: 115
// of 3,333 led again after 60 s). So the survivors run at most
// Tuning.SuccessorsInFlight successor elections at a time, each holding its
// slot until its group has a leader or for Tuning.CampaignSlot; and when a
// loss orphans more groups than that, every orphan here is held: raft's
// timeouts are raised (as for a new group's campaign hold) so that no
// member campaigns on its own while the successors work through the queue,
// and the second in line does not campaign while the first one's node is
// up (both queues are long: its election would only split the votes).
// A held member gets its timeouts back once its group has a leader, as a
// successor when its election's slot ends (a candidate then times out on
// the normal election timeout: raft re-arms it), twice CampaignSlot after
// a successor's election reached it (its group's term moved) without a
// leader, and all of them once this node has no successor election left
// and no held group found a leader for twice CampaignSlot: what is still
// leaderless then elects as raft does.
// Holding changes only when members campaign, so safety is raft's.

// failover is failoverLoop's state.
type failover struct {
	h         *Host
	pending   []successor // due in order of rank, then due time
	running   []election  // successor elections holding a slot
	held      map[*Group]heldMember
	progress  time.Time // when a held group last found a leader
	lastCheck time.Time // when held was last looked through
	started   int       // elections started since the last loss
	seconds   int       // of them, by the second member in line
	since     time.Time // the last loss
	busy      bool      // counted in Host.electing
	large     bool      // a loss since the last idle time orphaned more groups than run at once
	many      bool      // counted in Host.manyElecting: busy and large
}

// markBusy counts the loop in Host.electing while it has elections to
// run or members held, and in Host.manyElecting while those follow a large
// loss.
func (f *failover) markBusy() {
	busy := len(f.pending)+len(f.running)+len(f.held) > 0
	if busy != f.busy {
		f.busy = busy
		if busy {
			f.h.electing.Add(1)
		} else {
			f.h.electing.Add(-1)
		}
	}
	f.large = f.large && busy
	if many := busy && f.large; many != f.many {
		f.many = many
		if many {
			f.h.beginMany()
		} else {
			f.h.endMany()
		}
	}
}

// heldMember is what a held member followed: the lost leader, in term;
// moved is when its group's term was first seen past term (a successor's
// election reached it), or zero.
type heldMember struct {
	lost  raft.ServerID
	term  uint64
	moved time.Time
}

// election is a successor election holding a slot until its group has a
// leader other than lost, or until.
type election struct {
	g     *Group
	lost  raft.ServerID
	until time.Time
}

// heldCheckInterval is how often held members are looked through for a
// leader; running elections are looked at every busyTick.
const (
	heldCheckInterval = 100 * time.Millisecond
	busyTick          = 10 * time.Millisecond
)

// lose queues the successors of the lost node's groups, holding every
// orphan here when there are more than can campaign at once.
func (f *failover) lose(lost int32, now time.Time) {
	succ := f.h.successors(lost, now)
	if len(succ) > f.h.tun.SuccessorsInFlight {
		f.large = true
		for _, s := range succ {
			f.hold(s.g, s.lost)
		}
		f.progress = now
		f.h.log.Info("holding the members of a lost node's groups while successors campaign", "held", len(f.held),
			"took", time.Since(now).Round(time.Millisecond))
	}
	f.pending = append(f.pending, succ...)
	// First in line first; among them a group whose membership is managed
	// at run time (the cluster's metadata group: the others report their
	// leaders to it) before the rest.
	slices.SortStableFunc(f.pending, func(a, b successor) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		if am, bm := a.g.managedMembership(), b.g.managedMembership(); am != bm {
			if am {
				return -1
			}
			return 1
		}
		return a.due.Compare(b.due)
	})
	f.since = now
}

// step frees the slots of finished elections, starts due successors into
// free slots, releases held members whose group has a leader (or all of
// them once there is nothing left to wait for), and returns how long to
// wait before the next step.
func (f *failover) step(now time.Time) time.Duration {
	f.running = slices.DeleteFunc(f.running, func(e election) bool {
		if !hasLeaderBut(e.g, e.lost) && now.Before(e.until) {
			return false
		}
		f.release(e.g)
		return true
	})
	f.startDue(now)
	if len(f.held) > 0 && now.Sub(f.lastCheck) >= heldCheckInterval {
		f.lastCheck = now
		for g, m := range f.held {
			switch {
			case hasLeaderBut(g, m.lost):
				f.release(g)
				f.progress = now
			case m.moved.IsZero() && g.raft.CurrentTerm() != m.term:
				m.moved = now
				f.held[g] = m
			case !m.moved.IsZero() && now.Sub(m.moved) >= 2*f.h.tun.CampaignSlot:
				// A successor's election reached this member and found no
				// leader in time. Held, the member keeps its lost leader and
				// refuses every vote that is not a transfer's, so raft's
				// own elections could not succeed until the last release.
				f.release(g)
			}
		}
		if len(f.pending) == 0 && len(f.running) == 0 && now.Sub(f.progress) >= 2*f.h.tun.CampaignSlot {
			f.h.log.Info("releasing members held after a loss without a leader yet", "count", len(f.held))
			for g := range f.held {
				f.release(g)
			}
		}
	}
	if len(f.pending) == 0 && len(f.running) == 0 && f.started > 0 {
		f.h.log.Info("successor elections done", "count", f.started, "second_in_line", f.seconds,
			"took", now.Sub(f.since).Round(time.Millisecond))
		f.started, f.seconds = 0, 0
	}
	if len(f.running) > 0 || len(f.held) > 0 {
		return busyTick
	}
	if len(f.pending) == 0 {
		return time.Hour
	}
	next := slices.MinFunc(f.pending, func(a, b successor) int { return a.due.Compare(b.due) }).due
	return max(next.Sub(now), busyTick)
}

// startDue starts due successors, first in line first, while slots are
// free; one whose group no longer needs it is dropped (and released).
func (f *failover) startDue(now time.Time) {
	for i := 0; i < len(f.pending) && len(f.running) < f.h.tun.SuccessorsInFlight; {
		s := f.pending[i]
		if s.due.After(now) {
			i++
			continue
		}
		f.pending = slices.Delete(f.pending, i, i+1)
		if s.rank > 0 && len(f.held) > 0 && f.h.firstSuccessorUp(s) {
			// Its node works through a queue as long as this one: a second
			// candidate would only split the group's votes. Held, the
			// group waits for that election (or the release of holds).
			continue
		}
		if !s.needed() {
			f.release(s.g)
			continue
		}
		f.running = append(f.running, election{g: s.g, lost: s.lost, until: now.Add(f.h.tun.CampaignSlot)})
		f.started++
		if s.rank > 0 {
			f.seconds++
		}
		f.h.goOwned(func() { f.h.campaign(s) })
	}
}

// hold raises the timeouts of g's member, which followed lost, so that it
// does not campaign on its own. A new group's member still in its campaign
// hold is left to that hold.
func (f *failover) hold(g *Group, lost raft.ServerID) {
	if _, ok := f.held[g]; ok || g.held() {
		return
	}
	rc := g.normal
	// CampaignHold heartbeat timeouts, not a new group's holdTimeout: the
	// releases above end it, and this bounds what they miss.
	rc.HeartbeatTimeout = time.Duration(f.h.tun.CampaignHold) * g.normal.HeartbeatTimeout
	rc.ElectionTimeout = rc.HeartbeatTimeout
	if err := g.reloadTimeouts(rc); err != nil {
		g.log.Warn("could not hold the member back after its leader's loss", "err", err)
		return
	}
	f.held[g] = heldMember{lost: lost, term: g.raft.CurrentTerm()}
}

// release gives a held member its timeouts back.
func (f *failover) release(g *Group) {
	if _, ok := f.held[g]; !ok {
		return
	}
	delete(f.held, g)
	if err := g.reloadTimeouts(g.roleTimeouts()); err != nil {
		g.log.Warn("could not restore the raft timeouts after a loss", "err", err)
	}
}

// firstSuccessorUp reports whether the node of s's group's first successor
// (the first member other than the lost one) is up.
func (h *Host) firstSuccessorUp(s successor) bool {
	order := SuccessorOrder(s.g.Name(), s.g.Members(), s.lostNode)
	if len(order) == 0 {
		return false
	}
	_, up := h.nodeUp(order[0])
	return up
}

// hasLeaderBut reports whether g's member knows a leader other than lost,
// or is shut down (nothing to wait for).
func hasLeaderBut(g *Group, lost raft.ServerID) bool {
	if g.raft.State() == raft.Shutdown {
		return true
	}
	_, id := g.raft.LeaderWithID()
	return id != "" && id != lost
}
