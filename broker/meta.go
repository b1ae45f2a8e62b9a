package broker

import (
	"path/filepath"
	"sync/atomic"

	"github.com/minikafka/minikafka-go/broker/controller"
	"github.com/minikafka/minikafka-go/membership"
	"github.com/minikafka/minikafka-go/metadata"
)

// openController opens the node's member of the metadata group
// (controller.New) with the narrow parts of the node it needs.
func (n *Node) openController(f *metadata.FSM) (*controller.Controller, error) {
	cfg, t := n.cfg, n.cfg.Tuning
	users := make([]controller.SASLUser, len(cfg.SASLUsers))
	for i, u := range cfg.SASLUsers {
		users[i] = controller.SASLUser{Name: u.Name, Password: u.Password, Mechanisms: u.Mechanisms, Iterations: u.Iterations}
	}
	return controller.New(n.ctx, controller.Config{
		NodeID:                 cfg.NodeID,
		Dir:                    filepath.Join(cfg.DataDir, "meta"),
		Raft:                   cfg.MetaRaft,
		BootstrapExpect:        cfg.BootstrapExpect,
		NodeUnavailableTimeout: cfg.NodeUnavailableTimeout,
		SASLUsers:              users,
		Tuning: controller.Tuning{
			DutyInterval: t.MetaDutyInterval, Proposal: t.MetaProposal,
			RetryMin: t.MetaRetryMin, RetryMax: t.MetaRetryMax,
			Forward: t.MetaForward, Apply: t.MetaApply, Serve: t.MetaServe, MaxFrame: t.MaxMetaFrame,
			LeaderReport: t.LeaderReport, LeaderReportRetry: t.LeaderReportRetry, MinWait: minWait,
		},
	}, controller.Deps{FSM: f, Raft: n.host, Members: n.members, Resolve: n.addrs.resolve,
		MemberEvents: n.memberCh, Logger: n.logger})
}

// addrBook resolves node ids to Raft addresses for every group: the
// metadata registry first, then gossip. Groups fall back to the address in
// their configuration when both fail.
//
// The Raft host accepts streams and dials peers, resolving their ids,
// before gossip starts: members is set and read atomically.
type addrBook struct {
	fsm     *metadata.FSM
	members atomic.Pointer[membership.Membership] // nil until gossip starts
}

// setMembers hands gossip to the book once it has started.
func (a *addrBook) setMembers(m *membership.Membership) { a.members.Store(m) }

func (a *addrBook) resolve(id int32) (string, bool) {
	if b, ok := a.fsm.State().Broker(id); ok {
		return b.RaftAddr, true
	}
	members := a.members.Load()
	if members == nil {
		return "", false
	}
	m, ok := members.Lookup(id)
	return m.RaftAddr, ok
}

// LiveBrokers are the registered brokers this node's gossip sees alive:
// those a new topic's replicas are placed on here.
func (n *Node) LiveBrokers() []int32 {
	alive := map[int32]bool{}
	for _, m := range n.members.Members() {
		alive[m.ID] = true
	}
	var live []int32
	for _, id := range n.meta.State().BrokerIDs() {
		if alive[id] {
			live = append(live, id)
		}
	}
	return live
}
