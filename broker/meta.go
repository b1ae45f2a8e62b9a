package broker

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/minikafka/minikafka-go/internal/scram"
	"github.com/minikafka/minikafka-go/membership"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/multiraft"
)

// metaGroup is this node's member of the metadata Raft group.
type metaGroup struct {
	group *multiraft.Group
	fsm   *metadata.FSM
}

// openMetaGroup starts the metadata group's Raft without bootstrapping;
// metaDuties bootstraps it once bootstrap_expect nodes are seen, if it
// never was.
func openMetaGroup(n *Node, f *metadata.FSM) (*metaGroup, error) {
	g, err := n.host.Open(multiraft.GroupSpec{
		Name:   "meta",
		Dir:    filepath.Join(n.cfg.DataDir, "meta"),
		Timing: n.cfg.MetaRaft,
		// raft-boltdb whatever raft.log_store says: the metadata group's
		// store does not change with the partitions'.
		LogStore: multiraft.LogStoreBoltDB,
		FSM:      f,
		Logger:   n.logger.With("group", "meta"),
	})
	if err != nil {
		return nil, err
	}
	return &metaGroup{group: g, fsm: f}, nil
}

func (m *metaGroup) close() error { return m.group.Close() }

// metaCaughtUp reports whether this node's copy of the metadata is as
// fresh as the metadata leader's commit index it last heard of.
func (n *Node) metaCaughtUp() bool {
	return n.meta.group.CaughtUp(n.cfg.MetaRaft.HeartbeatTimeout)
}

// controllerID is the metadata leader's node id, or -1.
func (n *Node) controllerID() int32 {
	if id, _, ok := n.meta.group.Leader(); ok {
		return id
	}
	return -1
}

// metaDuties bootstraps the metadata group when it is new, and on the
// leader keeps the group and the broker registry in line with the live
// members. It is owned by the Node.
func (n *Node) metaDuties() {
	defer n.wg.Done()
	tick := time.NewTicker(n.cfg.Tuning.MetaDutyInterval)
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
	g := n.meta.group
	if !g.Configured() {
		return n.maybeBootstrap()
	}
	if !g.IsLeader() {
		return nil
	}
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Tuning.MetaProposal)
	defer cancel()
	state := n.meta.fsm.State()
	if !state.Initialized() {
		if _, err := n.proposeMeta(ctx, metadata.InitCluster{ClusterID: newClusterID()}); err != nil {
			return err
		}
		state = n.meta.fsm.State()
	}
	if !state.HasProducerIDKey() {
		if err := n.proposeProducerIDKey(ctx); err != nil {
			return err
		}
		state = n.meta.fsm.State()
	}
	for _, m := range n.members.Members() {
		b, ok := state.Broker(m.ID)
		if !ok || b.KafkaAddr != m.KafkaAddr || b.RaftAddr != m.RaftAddr || !sameListeners(b.Listeners, m.Listeners) {
			cmd := metadata.RegisterBroker{ID: m.ID, KafkaAddr: m.KafkaAddr, RaftAddr: m.RaftAddr, Listeners: m.Listeners}
			if _, err := n.proposeMeta(ctx, cmd); err != nil {
				return fmt.Errorf("register broker %d: %w", m.ID, err)
			}
		}
		in, err := g.Has(m.ID)
		if err != nil {
			return err
		}
		if !in {
			n.logger.Info("adding node to the metadata group as a non-voter", "id", m.ID)
			if err := g.AddNonvoter(ctx, m.ID, m.RaftAddr); err != nil {
				return fmt.Errorf("add non-voter %d: %w", m.ID, err)
			}
		}
	}
	if err := n.heal(ctx, state); err != nil {
		return err
	}
	return n.seedSASLUsers(ctx, state)
}

// sameListeners compares a registration's listeners with gossiped ones,
// which may be in another order.
func sameListeners(registered, gossiped string) bool {
	if registered == gossiped {
		return true
	}
	ls, err := metadata.ParseListeners(gossiped)
	return err == nil && metadata.FormatListeners(ls) == registered
}

// seedSASLUsers creates the configured SASL users' credentials that the
// cluster lacks (IfAbsent: one created meanwhile, or since changed, is
// kept).
func (n *Node) seedSASLUsers(ctx context.Context, state *metadata.Snapshot) error {
	var ups []metadata.ScramCredential
	for _, u := range n.cfg.SASLUsers {
		for _, name := range u.Mechanisms {
			m, _ := scram.ParseMechanism(name)
			if _, ok := state.ScramCredential(u.Name, metadata.ScramMechanism(m)); ok {
				continue
			}
			c, err := scram.NewCredential(m, u.Password, u.Iterations)
			if err != nil {
				return err
			}
			ups = append(ups, metadata.ScramCredential{User: u.Name, Mechanism: metadata.ScramMechanism(m),
				Iterations: int32(c.Iterations), Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey})
		}
	}
	if len(ups) == 0 {
		return nil
	}
	if _, err := n.proposeMeta(ctx, metadata.AlterScramCredentials{Upsertions: ups, IfAbsent: true}); err != nil {
		return fmt.Errorf("seed sasl_users: %w", err)
	}
	n.logger.Info("created the configured SASL users the cluster lacked", "credentials", len(ups))
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
	voters := map[int32]string{}
	for _, m := range members[:n.cfg.BootstrapExpect] {
		voters[m.ID] = m.RaftAddr
	}
	if _, self := voters[n.cfg.NodeID]; !self {
		return nil // a later node: the leader adds it as a non-voter
	}
	n.logger.Info("bootstrapping the metadata group", "voters", voters)
	return n.meta.group.Bootstrap(voters)
}

func newClusterID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// addrBook resolves node ids to Raft addresses for every group: the
// metadata registry first, then gossip. Groups fall back to the address in
// their configuration when both fail.
type addrBook struct {
	fsm     *metadata.FSM
	members *membership.Membership // nil until gossip starts
}

func (a *addrBook) resolve(id int32) (string, bool) {
	if b, ok := a.fsm.State().Broker(id); ok {
		return b.RaftAddr, true
	}
	if a.members == nil {
		return "", false
	}
	m, ok := a.members.Lookup(id)
	return m.RaftAddr, ok
}
