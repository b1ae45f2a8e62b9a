package broker

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Fail-over on a lost peer. The node watches the Raft port of every other
// member (raftmux.Mux.WatchPeer). When one is lost (its process ended or
// restarted: raftmux.LivenessChannel), each partition that the lost node
// led and that has a replica here gets a new leader at once, instead of
// after raft's heartbeat timeout: the partition's successor starts an
// election (raftmux.GroupTransport.StartElection), which the other voters
// grant although they still know the lost leader.
//
// The successor is the first replica in the partition's assignment other
// than the lost node; every node ranks the same way, so one candidate per
// partition campaigns and votes do not split. The next replica in line
// campaigns successorStagger later if the partition still has no other
// leader then (the first one was lost too, or its log was behind), and so
// on. Raft's own timeouts still cover what the watch cannot see (a paused
// process, a dead host, a partitioned network); with this, they can be
// long (README, "Many partitions") without slowing the fail-over of a
// crashed or killed node.
const successorStagger = 2 * time.Second

// peerLoss carries lost peers from the Mux's watch goroutines to
// failoverLoop, and maps watched Raft addresses to node ids.
type peerLoss struct {
	mu   sync.Mutex       // guards lost and ids
	lost []string         // Raft addresses reported lost, not yet handled
	ids  map[string]int32 // node id by Raft address, of every watched peer
	kick chan struct{}    // capacity 1: lost may be non-empty
}

func newPeerLoss() *peerLoss {
	return &peerLoss{ids: map[string]int32{}, kick: make(chan struct{}, 1)}
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

func (p *peerLoss) setID(addr string, id int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ids[addr] = id
}

func (p *peerLoss) id(addr string) (int32, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id, ok := p.ids[addr]
	return id, ok
}

// successorCampaign is one partition this node should campaign for, once
// due, unless someone other than lost leads it by then.
type successorCampaign struct {
	lr   *localReplica
	lost raft.ServerID
	due  time.Time
}

// failoverLoop starts the successor campaigns of lost peers' partitions.
// It is owned by the Node.
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
			n.logger.Info("started elections for partitions of a lost node", "count", started, "took", time.Since(now).Round(time.Millisecond))
		}
		if len(pending) > 0 {
			next := slices.MinFunc(pending, func(a, b successorCampaign) int { return a.due.Compare(b.due) }).due
			timer.Reset(time.Until(next))
		}
	}
}

// successorCampaigns lists the partitions with a replica here and on the
// node at the lost Raft address, each due when this node's turn as
// successor comes.
func (n *Node) successorCampaigns(addr string, now time.Time) []successorCampaign {
	id, ok := n.loss.id(addr)
	if !ok {
		return nil
	}
	lost := raft.ServerID(strconv.Itoa(int(id)))
	var out []successorCampaign
	for _, lr := range n.reps.all() {
		select {
		case <-lr.ready:
		default:
			continue // still opening: it has no leader to lose
		}
		if !slices.Contains(lr.info.Replicas, id) {
			continue
		}
		rank := 0
		for _, r := range lr.info.Replicas {
			if r == n.cfg.NodeID {
				break
			}
			if r != id {
				rank++
			}
		}
		out = append(out, successorCampaign{lr: lr, lost: lost, due: now.Add(time.Duration(rank) * successorStagger)})
	}
	n.logger.Info("lost a node; its partitions here get successors", "peer", id, "raft_addr", addr, "partitions", len(out))
	return out
}

// campaignIfLeaderless starts c's election unless the replica leads, is
// closed, or follows a leader other than the lost node; it reports whether
// it started one.
func (n *Node) campaignIfLeaderless(c successorCampaign) bool {
	r := c.lr.rep.Raft()
	switch r.State() {
	case raft.Leader, raft.Shutdown:
		return false
	}
	if _, leader := r.LeaderWithID(); leader != "" && leader != c.lost {
		return false
	}
	ctx, cancel := context.WithTimeout(n.ctx, time.Second)
	defer cancel()
	if err := c.lr.trans.StartElection(ctx); err != nil {
		n.logger.Debug("could not start an election", "topic", c.lr.info.Topic, "partition", c.lr.info.Partition, "err", err)
		return false
	}
	return true
}
