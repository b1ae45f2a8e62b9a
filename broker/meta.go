package broker

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/membership"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/raftgroup"
	"github.com/minikafka/minikafka-go/raftmux"
)

// metaGroup is this node's member of the metadata Raft group.
type metaGroup struct {
	group *raftgroup.Group
	trans *raftmux.GroupTransport
	fsm   *metadata.FSM
}

// openMetaGroup starts the metadata group's Raft without bootstrapping;
// metaDuties bootstraps it once bootstrap_expect nodes are seen, if it
// never was.
func openMetaGroup(n *Node, f *metadata.FSM) (*metaGroup, error) {
	trans, err := n.mux.Transport("meta", raftmux.TransportConfig{ServerAddressProvider: n.addrs, MaxRPCsInFlight: noPipelining})
	if err != nil {
		return nil, err
	}
	g, err := raftgroup.Open(raftgroup.Config{
		Dir:       filepath.Join(n.cfg.DataDir, "meta"),
		LocalID:   n.id,
		Transport: trans,
		Timing:    n.cfg.MetaRaft,
		Logger:    n.logger.With("group", "meta"),
	}, f)
	if err != nil {
		trans.Close()
		return nil, err
	}
	return &metaGroup{group: g, trans: trans, fsm: f}, nil
}

// voters returns the group's voters in configuration order (none if the
// configuration cannot be read).
func (m *metaGroup) voters() []raft.ServerID {
	f := m.group.Raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	var out []raft.ServerID
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			out = append(out, s.ID)
		}
	}
	return out
}

func (m *metaGroup) isLeader() bool { return m.group.Raft.State() == raft.Leader }

// transfer hands the metadata group's leadership to the first other
// voter whose node is up (Node.liveTarget), if this node leads and there
// is one.
func (m *metaGroup) transfer(ctx context.Context, n *Node) {
	if !m.isLeader() {
		return
	}
	to, addr, ok := n.liveTarget(m.voters())
	if !ok {
		return
	}
	_ = m.group.TransferLeadership(ctx, to, addr) // best effort: the node is stopping
}

func (m *metaGroup) close() error { return m.group.Close() }

// controllerID is the metadata leader's node id, or -1.
func (n *Node) controllerID() int32 {
	_, id := n.meta.group.Raft.LeaderWithID()
	if id == "" {
		return -1
	}
	v, err := strconv.Atoi(string(id))
	if err != nil {
		return -1
	}
	return int32(v)
}

// metaDuties bootstraps the metadata group when it is new, and on the
// leader keeps the group and the broker registry in line with the live
// members. It is owned by the Node.
func (n *Node) metaDuties() {
	defer n.wg.Done()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := n.metaStep(); err != nil && n.ctx.Err() == nil {
			n.logger.Debug("metadata duties", "err", err)
		}
		select {
		case <-n.ctx.Done():
			return
		case <-tick.C:
		case <-n.memberCh:
		}
	}
}

func (n *Node) metaStep() error {
	r := n.meta.group.Raft
	if r.LastIndex() == 0 {
		return n.maybeBootstrap()
	}
	if r.State() != raft.Leader {
		return nil
	}
	ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
	defer cancel()
	state := n.meta.fsm.State()
	if !state.Initialized() {
		if _, err := n.proposeMeta(ctx, metadata.InitCluster{ClusterID: newClusterID()}); err != nil {
			return err
		}
		state = n.meta.fsm.State()
	}
	cf := r.GetConfiguration()
	if err := cf.Error(); err != nil {
		return err
	}
	inGroup := map[raft.ServerID]bool{}
	for _, s := range cf.Configuration().Servers {
		inGroup[s.ID] = true
	}
	for _, m := range n.members.Members() {
		b, ok := state.Broker(m.ID)
		if !ok || b.KafkaAddr != m.KafkaAddr || b.RaftAddr != m.RaftAddr {
			cmd := metadata.RegisterBroker{ID: m.ID, KafkaAddr: m.KafkaAddr, RaftAddr: m.RaftAddr}
			if _, err := n.proposeMeta(ctx, cmd); err != nil {
				return fmt.Errorf("register broker %d: %w", m.ID, err)
			}
		}
		id := membership.ServerID(m.ID)
		if !inGroup[id] {
			n.logger.Info("adding node to the metadata group as a non-voter", "id", m.ID)
			if err := r.AddNonvoter(id, raft.ServerAddress(m.RaftAddr), 0, 5*time.Second).Error(); err != nil {
				return fmt.Errorf("add non-voter %d: %w", m.ID, err)
			}
		}
	}
	return nil
}

// maybeBootstrap creates the metadata group once bootstrap_expect nodes are
// seen, with the lowest bootstrap_expect node ids as voters, if this node
// is one of them. Every voter computes the same list from the same members.
func (n *Node) maybeBootstrap() error {
	members := n.members.Members()
	if len(members) < n.cfg.BootstrapExpect {
		return nil
	}
	slices.SortFunc(members, func(a, b membership.NodeMeta) int { return int(a.ID) - int(b.ID) })
	voters := members[:n.cfg.BootstrapExpect]
	var servers []raft.Server
	self := false
	for _, m := range voters {
		servers = append(servers, raft.Server{
			Suffrage: raft.Voter,
			ID:       membership.ServerID(m.ID),
			Address:  raft.ServerAddress(m.RaftAddr),
		})
		self = self || m.ID == n.cfg.NodeID
	}
	if !self {
		return nil // a later node: the leader adds it as a non-voter
	}
	n.logger.Info("bootstrapping the metadata group", "voters", servers)
	return n.meta.group.Raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error()
}

func newClusterID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// addrProvider resolves Raft server ids to addresses: the metadata
// registry first, then gossip. Raft falls back to the address in its
// configuration when both fail. It is immutable.
type addrProvider struct {
	fsm     *metadata.FSM
	members *membership.Membership
}

func (p addrProvider) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	v, err := strconv.Atoi(string(id))
	if err != nil {
		return "", fmt.Errorf("broker: server id %q is not a node id", id)
	}
	if b, ok := p.fsm.State().Broker(int32(v)); ok {
		return raft.ServerAddress(b.RaftAddr), nil
	}
	return p.members.ServerAddr(id)
}
