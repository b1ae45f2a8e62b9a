package multiraft

import (
	"time"

	"github.com/hashicorp/raft"
)

// runTiming lifts a new group's campaign hold (GroupSpec.Hold) and then,
// with Timing.LeaderHeartbeatTimeout, runs the member with the leader's
// timeouts while it leads. It is owned by the Group.
func (g *Group) runTiming(normal raft.ReloadableConfig, hold bool) {
	defer g.wg.Done()
	if hold && !g.liftHold(normal) {
		return
	}
	if lhb := g.spec.Timing.LeaderHeartbeatTimeout; lhb > normal.HeartbeatTimeout {
		g.followRole(normal, lhb)
	}
}

// liftHold puts the group's normal timeouts back once this member
// campaigns or leads, Tuning.HoldAfterLeader heartbeat timeouts after it
// first hears of a leader (a new group's followers ride out the stalls of
// nodes still electing hundreds of other new groups instead of starting
// elections of their own), or at the hold's deadline: CampaignHold
// heartbeat timeouts, or what ReleaseCampaign set. It returns false, early,
// on Close.
func (g *Group) liftHold(normal raft.ReloadableConfig) bool {
	obsCh := make(chan raft.Observation, 4)
	obs := raft.NewObserver(obsCh, false, func(o *raft.Observation) bool {
		switch d := o.Data.(type) {
		case raft.LeaderObservation:
			return d.LeaderID != ""
		case raft.RaftState:
			return d == raft.Candidate || d == raft.Leader
		}
		return false
	})
	g.raft.RegisterObserver(obs)
	defer g.raft.DeregisterObserver(obs)
	bound := time.Duration(g.h.tun.CampaignHold) * normal.HeartbeatTimeout
	deadline := time.Now().Add(bound)
	hardDeadline := time.Now().Add(max(bound, g.h.tun.CampaignHoldMax))
	timer := time.NewTimer(bound)
	defer timer.Stop()
	sawLeader := false
	leaderSeen := func() {
		if sawLeader {
			return
		}
		sawLeader = true
		if d := time.Now().Add(time.Duration(g.h.tun.HoldAfterLeader) * normal.HeartbeatTimeout); d.Before(deadline) {
			deadline = d
			timer.Reset(time.Until(d))
		}
	}
	// The observer was registered after raft started: look once, in case
	// what it waits for has already happened.
	if _, id := g.raft.LeaderWithID(); id != "" {
		leaderSeen()
	}
wait:
	for g.raft.State() == raft.Follower {
		select {
		case <-g.stop:
			return false
		case o := <-obsCh:
			if _, ok := o.Data.(raft.RaftState); ok {
				break wait
			}
			leaderSeen()
		case <-timer.C:
			// A leaderless group whose preferred member will still
			// campaign holds on, so that thousands of new groups do not
			// all campaign when their holds end together.
			if !sawLeader && time.Now().Before(hardDeadline) && g.awaitsPreferred() {
				timer.Reset(g.h.tun.LivenessTimeout)
				continue
			}
			break wait
		case d := <-g.release:
			if d <= 0 {
				break wait
			}
			if !sawLeader || time.Now().Add(d).Before(deadline) {
				deadline = time.Now().Add(d)
				timer.Reset(d)
			}
		}
	}
	// With a shorter heartbeat timeout, a follower that has not heard from
	// a leader within it campaigns at once; one that has keeps following.
	if err := g.reloadTimeouts(normal); err != nil {
		g.log.Warn("could not restore the raft timeouts after holding a new group's campaign", "err", err)
	}
	close(g.restored)
	return true
}

// leadingTimeouts is normal with the heartbeat timeout of a leader.
func leadingTimeouts(normal raft.ReloadableConfig, leaderHB time.Duration) raft.ReloadableConfig {
	normal.HeartbeatTimeout = leaderHB
	normal.ElectionTimeout = max(normal.ElectionTimeout, leaderHB) // raft wants election >= heartbeat
	return normal
}

// roleTimeouts is what followRole would set for the member's role now.
func (g *Group) roleTimeouts() raft.ReloadableConfig {
	if lhb := g.spec.Timing.LeaderHeartbeatTimeout; lhb > g.normal.HeartbeatTimeout && g.raft.State() == raft.Leader {
		return leadingTimeouts(g.normal, lhb)
	}
	return g.normal
}

// followRole runs the member with Timing.LeaderHeartbeatTimeout while it
// leads and with its normal timeouts otherwise, until Close.
func (g *Group) followRole(normal raft.ReloadableConfig, leaderHB time.Duration) {
	obsCh := make(chan raft.Observation, 8)
	obs := raft.NewObserver(obsCh, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.RaftState)
		return ok
	})
	g.raft.RegisterObserver(obs)
	defer g.raft.DeregisterObserver(obs)
	leading := leadingTimeouts(normal, leaderHB)
	inForce := false // leading's timeouts are set
	// raft drops observations that a full channel cannot take: look now
	// and then without one.
	tick := time.NewTicker(g.h.tun.RoleRecheck)
	defer tick.Stop()
	for {
		if want := g.raft.State() == raft.Leader; want != inForce {
			cfg := normal
			if want {
				cfg = leading
			}
			// Going back to normal shortens the heartbeat timeout, which
			// raft passes on to a running follower loop at once.
			if err := g.reloadTimeouts(cfg); err != nil {
				g.log.Warn("could not set the raft timeouts for the member's role", "leader", want, "err", err)
			} else {
				inForce = want
			}
		}
		select {
		case <-g.stop:
			return
		case <-obsCh:
		case <-tick.C:
		}
	}
}

// awaitsPreferred reports whether the group's preferred member will still
// campaign: it is this member, which campaigns when the batch it was
// opened with is released (ReleaseCampaigns, after the whole batch has
// opened: thousands of groups may take minutes), or it is on another node
// whose process runs (the Host holds a session to it: PeerUp), which is
// steadier under load than a ping's vouch.
func (g *Group) awaitsPreferred() bool {
	if len(g.spec.Members) == 0 {
		return false
	}
	pref := g.spec.Members[0]
	if pref == g.h.id {
		return true
	}
	if g.h.resolve == nil {
		return false
	}
	addr, ok := g.h.resolve(pref)
	return ok && g.h.PeerUp(addr)
}

// releaseCampaign ends the campaign hold after d instead, or at once if
// d <= 0: the group then runs with its Timing, and campaigns at once unless
// it has heard from a leader within a heartbeat timeout. A later call
// replaces an earlier one's deadline; a group not held ignores it.
func (g *Group) releaseCampaign(d time.Duration) {
	for {
		select {
		case <-g.restored:
			return
		case <-g.stop:
			return
		case g.release <- d:
			return
		default:
			select { // replace a request the hold has not taken yet
			case <-g.release:
			default:
			}
		}
	}
}

// held reports whether the group is still held back from campaigning.
func (g *Group) held() bool {
	select {
	case <-g.restored:
		return false
	default:
		return true
	}
}
