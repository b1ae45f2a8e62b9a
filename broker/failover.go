package broker

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/membership"
	"github.com/minikafka/minikafka-go/raftmux"
)

// Fail-over on a lost peer. The node watches the Raft port of every other
// member (raftmux.Mux.WatchPeer). When one is lost (its process ended or
// restarted: raftmux.LivenessChannel), each group that the lost node led
// and that has a member here (partitions, and the metadata group) gets a
// new leader at once, instead of after raft's heartbeat timeout: the
// group's successor starts an election
// (raftmux.GroupTransport.StartElection), which the other voters grant
// although they still know the lost leader.
//
// The successor is the first member in the group's order (a partition's
// assignment, the metadata group's configuration) other than the lost
// node; every node ranks the same way, so one candidate per group
// campaigns and votes do not split. The next member in line campaigns
// successorStagger later if its member still follows the lost node and
// the group's term has not moved (the first successor was lost too, or
// never got its vote request out). Raft's own timeouts cover the rest: a
// first successor whose log was behind, and what the watch cannot see (a
// paused process, a dead host, a partitioned network). With this, they
// can be long (README, "Many partitions") without slowing the fail-over
// of a crashed or killed node.
const successorStagger = 2 * time.Second

// peerLoss carries lost peers from the Mux's watch goroutines to
// failoverLoop.
type peerLoss struct {
	mu   sync.Mutex    // guards lost
	lost []string      // Raft addresses reported lost, not yet handled
	kick chan struct{} // capacity 1: lost may be non-empty
}

func newPeerLoss() *peerLoss {
	return &peerLoss{kick: make(chan struct{}, 1)}
}

// report is the Mux's OnPeerLost; it never blocks.
func (p *peerLoss) report(addr string) {
	p.mu.Lock()
	p.lost = append(p.lost, addr)
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *peerLoss) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lost
	p.lost = nil
	return l
}

// successorCampaign is one group (a partition, or the metadata group)
// this node should campaign in once due, if its member here still follows
// the lost node then (see campaignIfLeaderless).
type successorCampaign struct {
	name  string // for logs
	r     *raft.Raft
	trans *raftmux.GroupTransport
	lost  raft.ServerID
	rank  int    // 0: the first successor
	term  uint64 // the group's term when the loss was seen
	due   time.Time
}

// failoverLoop starts the successor campaigns of lost peers' groups. It
// is owned by the Node.
func (n *Node) failoverLoop() {
	defer n.wg.Done()
	var pending []successorCampaign
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.loss.kick:
			for _, addr := range n.loss.take() {
				pending = append(pending, n.successorCampaigns(addr, time.Now())...)
			}
		case <-timer.C:
		}
		now := time.Now()
		started := 0
		pending = slices.DeleteFunc(pending, func(c successorCampaign) bool {
			if c.due.After(now) {
				return false
			}
			if n.campaignIfLeaderless(c) {
				started++
			}
			return true
		})
		if started > 0 {
			n.logger.Info("started elections for groups of a lost node", "count", started, "took", time.Since(now).Round(time.Millisecond))
		}
		if len(pending) > 0 {
			next := slices.MinFunc(pending, func(a, b successorCampaign) int { return a.due.Compare(b.due) }).due
			timer.Reset(time.Until(next))
		}
	}
}

// successorRank is this node's place among members (in order) other than
// lost; ok is false unless both lost and self are members.
func successorRank(members []raft.ServerID, lost, self raft.ServerID) (rank int, ok bool) {
	if !slices.Contains(members, lost) {
		return 0, false
	}
	for _, m := range members {
		switch m {
		case self:
			return rank, true
		case lost:
		default:
			rank++
		}
	}
	return 0, false
}

// successorCampaigns lists the groups that this node shares with the node
// at the lost Raft address and that the lost node leads, as this node's
// member sees it (the metadata group if both are voters of it, and
// partitions with a replica on both), each due when this node's turn as
// successor comes.
func (n *Node) successorCampaigns(addr string, now time.Time) []successorCampaign {
	id, ok := n.brokerAt(addr)
	if !ok {
		return nil
	}
	lost := membership.ServerID(id)
	var out []successorCampaign
	add := func(name string, r *raft.Raft, trans *raftmux.GroupTransport, members []raft.ServerID) {
		if _, leader := r.LeaderWithID(); leader != lost {
			return // led by another, or without a known leader: raft is on it
		}
		if rank, ok := successorRank(members, lost, n.id); ok {
			out = append(out, successorCampaign{name: name, r: r, trans: trans, lost: lost, rank: rank,
				term: r.CurrentTerm(), due: now.Add(time.Duration(rank) * successorStagger)})
		}
	}
	if n.meta != nil {
		add("meta", n.meta.group.Raft, n.meta.trans, n.meta.voters())
	}
	for _, lr := range n.reps.all() {
		select {
		case <-lr.ready:
		default:
			continue // still opening: it has no leader to lose
		}
		add(replicaDirName(lr.info.Topic, lr.info.Partition), lr.rep.Raft(), lr.trans, lr.members())
	}
	n.logger.Info("lost a node; the groups shared with it get successors", "peer", id, "raft_addr", addr, "groups", len(out))
	return out
}

// brokerAt returns the id of the registered broker whose Raft address is
// addr (the metadata's broker registry).
func (n *Node) brokerAt(addr string) (int32, bool) {
	for _, b := range n.meta.fsm.State().Brokers() {
		if b.RaftAddr == addr {
			return b.ID, true
		}
	}
	return 0, false
}

// campaignIfLeaderless starts c's election if the group's member here
// still follows the lost node, and, for a later successor, the group's
// term has not moved since the loss (else an earlier successor
// campaigned: raft finishes that election, and another candidate now
// would only depose the winner before its followers hear of it). A member
// that knows no leader is left alone too: its own election timeout has
// fired, and raft's election is under way. It reports whether it started
// one.
func (n *Node) campaignIfLeaderless(c successorCampaign) bool {
	switch c.r.State() {
	case raft.Leader, raft.Shutdown:
		return false
	}
	if _, leader := c.r.LeaderWithID(); leader != c.lost {
		return false
	}
	if c.rank > 0 && c.r.CurrentTerm() != c.term {
		return false
	}
	ctx, cancel := context.WithTimeout(n.ctx, time.Second)
	defer cancel()
	if err := c.trans.StartElection(ctx); err != nil {
		n.logger.Debug("could not start an election", "group", c.name, "err", err)
		return false
	}
	return true
}

// liveTarget returns the first of members, other than this node, whose
// node's Raft port this node's liveness watch holds a connection to: a
// member that can take a leadership now.
func (n *Node) liveTarget(members []raft.ServerID) (raft.ServerID, raft.ServerAddress, bool) {
	for _, id := range members {
		if id == n.id {
			continue
		}
		addr, err := n.addrs.ServerAddr(id)
		if err == nil && n.mux.PeerUp(string(addr)) {
			return id, addr, true
		}
	}
	return "", "", false
}
