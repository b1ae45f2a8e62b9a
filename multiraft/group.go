package multiraft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/logging"
)

// GroupSpec describes one group to Open.
type GroupSpec struct {
	// Name identifies the group on every member; unique on a Host.
	Name string
	// Members are the nodes of the group in order of preference: the first
	// is the preferred leader. A new group is bootstrapped with them as
	// voters on every member. Empty means a group whose membership is
	// managed at run time (Bootstrap, AddNonvoter), such as a cluster's
	// metadata group.
	Members []int32
	// Dir holds the Raft log store's files (raft.db, wal/, or pebble's
	// marker raftlog.pebble) and snapshots/. Created if missing.
	Dir    string
	Timing Timing
	// LogStore is the store of a new group's Raft log: LogStoreBoltDB
	// (also when empty), LogStoreWAL or LogStorePebble (which needs
	// Config.LogDir). A group whose Dir already holds a store's files
	// keeps that store, whatever LogStore says.
	LogStore LogStore
	// FSM is the group's state machine; it may implement DurableFSM.
	FSM raft.FSM
	// Join, for a node added to a running group (a reassignment's new
	// replica), opens the group without bootstrapping it: the leader adds
	// this member, and its log and snapshot arrive from there.
	Join bool
	// Hold, for a brand-new group (no state in Dir) of more than one
	// member, holds this member back from campaigning until ReleaseCampaigns
	// (or Tuning.CampaignHold heartbeat timeouts): none campaigns before its
	// peers have opened the group, and the preferred member wins in one
	// round instead of three candidates splitting votes. A group reopened
	// from disk is never held, so fail-over keeps Timing's speed.
	Hold bool
	// OnLeader, if set, is called on the group's own goroutine each time
	// this member gains (true) or loses (false) the leadership, with the
	// term at that moment.
	OnLeader func(leader bool, epoch uint64)
	// Logger receives raft's messages at Warn and above; nil means the
	// Host's logger.
	Logger *slog.Logger
}

// DurableFSM is a state machine that keeps its own state on disk, so raft
// must not restore its newest snapshot into it on start (raft still replays
// the entries after that snapshot: the FSM skips those it holds).
type DurableFSM interface {
	raft.FSM
	// WrapSnapshots wraps the group's snapshot store, for an FSM whose
	// snapshots refer to its own files.
	WrapSnapshots(raft.SnapshotStore) raft.SnapshotStore
	// BeforeStart runs after bootstrap and before raft starts, with the
	// wrapped store: the FSM catches up with a newer snapshot if a crash
	// left it behind one.
	BeforeStart(raft.SnapshotStore) error
}

// Group is this node's member of one Raft group.
type Group struct {
	h    *Host
	spec GroupSpec
	raft *raft.Raft
	// started is set once raft is: raft's goroutines call the log store
	// (sizedLog.keep reads raft) before NewRaft returns.
	started atomic.Bool
	store   logStore
	guard   *guardedStore // store as raft sees it (storeguard.go)
	logs    *sizedLog     // raft's view of store's log, which counts its bytes
	trans   *transport
	log     *slog.Logger
	// reloadMu serialises raft.ReloadConfig calls: the trimmer changes
	// TrailingLogs, the timing goroutine and the Host's failover loop the
	// timeouts (logtrim.go).
	reloadMu sync.Mutex
	// normal is the group's Timing as raft's reloadable config, set once
	// before raft starts.
	normal raft.ReloadableConfig

	// members is the order of preference (GroupSpec.Members, then
	// SetMembers); nil for a group without one.
	members atomic.Pointer[[]int32]

	notify chan bool     // raft's leadership notifications, for OnLeader
	stop   chan struct{} // closed by Close: ends the group's goroutines
	wg     sync.WaitGroup

	// restored is closed once the group runs with its Timing (at once
	// unless held); release carries ReleaseCampaign's deadlines to the
	// goroutine that lifts the hold.
	restored chan struct{}
	release  chan time.Duration

	closeOnce sync.Once
	closeErr  error
}

// Open opens (and, when new and Members is set, bootstraps) a group.
func (h *Host) Open(spec GroupSpec) (*Group, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(spec.Dir, dirMode); err != nil {
		return nil, fmt.Errorf("multiraft: %w", err)
	}
	logger := spec.Logger
	if logger == nil {
		logger = h.base.With("group", spec.Name)
	}
	g := &Group{h: h, spec: spec, log: logger, notify: make(chan bool, 1), stop: make(chan struct{}),
		restored: make(chan struct{}), release: make(chan time.Duration, 1)}
	if len(spec.Members) > 0 {
		g.SetMembers(spec.Members)
	}
	trans, err := h.newTransport(g)
	if err != nil {
		return nil, err
	}
	g.trans = trans
	rc, hold, err := g.start()
	if err != nil {
		_ = trans.Close()
		return nil, err
	}
	g.normal = rc
	trans.raft.Store(g.raft)
	var view raftView = g.raft
	trans.view.Store(&view)
	if !hold {
		close(g.restored)
	}
	g.wg.Add(3)
	go g.forwardLeadership()
	go g.runTiming(rc, hold)
	if g.logs.budget != nil {
		g.logs.budget.register(g.logs)
	}
	go g.trimLoop(g.logs.kick, g.logs.budgetKick)
	return g, nil
}

func (s *GroupSpec) validate() error {
	if err := validName(s.Name); err != nil {
		return err
	}
	if s.Dir == "" || s.FSM == nil {
		return invalid("group %q needs Dir and FSM", s.Name)
	}
	if err := s.Timing.Validate(); err != nil {
		return invalid("group %q: %v", s.Name, err)
	}
	if s.LogStore != "" {
		if _, err := ParseLogStore(string(s.LogStore)); err != nil {
			return fmt.Errorf("group %q: %w", s.Name, err)
		}
	}
	for i, m := range s.Members {
		if m <= 0 || slices.Contains(s.Members[:i], m) {
			return invalid("group %q: members %v must be distinct positive node ids", s.Name, s.Members)
		}
	}
	return nil
}

// start opens the stores, bootstraps a new group and starts raft. It
// returns the timing to put back after a campaign hold, and whether the
// member is held.
func (g *Group) start() (normal raft.ReloadableConfig, hold bool, err error) {
	spec, h := g.spec, g.h
	hl := logging.HCLogRelevel(g.log, "raft", slog.LevelWarn, h.raftLineLevel)
	rc := raft.DefaultConfig()
	rc.LocalID = ServerID(h.id)
	rc.HeartbeatTimeout = spec.Timing.HeartbeatTimeout
	rc.ElectionTimeout = spec.Timing.ElectionTimeout
	rc.LeaderLeaseTimeout = spec.Timing.LeaderLeaseTimeout
	rc.CommitTimeout = spec.Timing.CommitTimeout
	rc.MaxAppendEntries = spec.Timing.MaxAppendEntries
	rc.SnapshotInterval = spec.Timing.SnapshotInterval
	rc.SnapshotThreshold = spec.Timing.SnapshotThreshold
	rc.TrailingLogs = spec.Timing.TrailingLogs
	rc.BatchApplyCh = true
	rc.ParallelLeaderWrite = !h.tun.SerialLeaderWrite
	rc.NotifyCh = g.notify
	rc.Logger = hl
	durable, isDurable := spec.FSM.(DurableFSM)
	rc.NoSnapshotRestoreOnStart = isDurable
	if err := raft.ValidateConfig(rc); err != nil {
		return normal, false, invalid("group %q: %v", spec.Name, err)
	}
	normal = raft.ReloadableConfig{TrailingLogs: rc.TrailingLogs, SnapshotInterval: rc.SnapshotInterval,
		SnapshotThreshold: rc.SnapshotThreshold, HeartbeatTimeout: rc.HeartbeatTimeout, ElectionTimeout: rc.ElectionTimeout}

	store, err := g.openStore(hl)
	if err != nil {
		return normal, false, err
	}
	fail := func(err error) (raft.ReloadableConfig, bool, error) {
		_ = store.Close()
		return normal, false, err
	}
	snaps, err := g.openSnapshots(hl, durable)
	if err != nil {
		return fail(fmt.Errorf("multiraft: snapshot store: %w", err))
	}
	g.guard = &guardedStore{logStore: store, stop: g.stop, log: g.log}
	g.logs = g.sizedLog(store)
	logs, err := raft.NewLogCache(256, g.logs)
	if err != nil {
		return fail(fmt.Errorf("multiraft: %w", err))
	}
	if len(spec.Members) > 0 && !spec.Join {
		has, err := raft.HasExistingState(logs, g.guard, snaps)
		if err != nil {
			return fail(fmt.Errorf("multiraft: %w", err))
		}
		if !has {
			servers := g.servers(spec.Members)
			if err := raft.BootstrapCluster(rc, logs, g.guard, snaps, g.trans, raft.Configuration{Servers: servers}); err != nil {
				return fail(fmt.Errorf("multiraft: bootstrap %q: %w", spec.Name, err))
			}
			hold = spec.Hold && len(spec.Members) > 1
		}
	}
	if hold {
		rc.HeartbeatTimeout, rc.ElectionTimeout = h.holdTimeout(rc.HeartbeatTimeout), h.holdTimeout(rc.HeartbeatTimeout)
	}
	if isDurable {
		if err := durable.BeforeStart(snaps); err != nil {
			return fail(err)
		}
	}
	r, err := raft.NewRaft(rc, spec.FSM, logs, g.guard, snaps, g.trans)
	if err != nil {
		return fail(fmt.Errorf("multiraft: %w", err))
	}
	g.guard.setRunning()
	g.raft, g.store = r, store
	g.started.Store(true)
	return normal, hold, nil
}

// holdTimeout is raft's heartbeat timeout while a new group is held:
// liftHold ends the hold, and raft's own timeout is only the last resort,
// at the longest the hold may last (at its shortest, it ended holds that
// were to last on).
func (h *Host) holdTimeout(hb time.Duration) time.Duration {
	return max(time.Duration(h.tun.CampaignHold)*hb, h.tun.CampaignHoldMax)
}

// openStore opens the group's log store: the one its dir holds, else the
// spec's.
func (g *Group) openStore(hl hclog.Logger) (logStore, error) {
	kind, err := storeIn(g.spec.Dir, g.spec.LogStore)
	if err != nil {
		return nil, err
	}
	if kind == LogStorePebble {
		return g.h.openPebbleStore(g.spec.Name, g.spec.Dir)
	}
	return openLogStore(g.spec.Dir, kind, hl)
}

// servers is the raft configuration of members, with the addresses
// Config.Resolve knows now (a placeholder otherwise: the transport
// resolves again at every dial).
func (g *Group) servers(members []int32) []raft.Server {
	out := make([]raft.Server, 0, len(members))
	for _, m := range members {
		addr := fmt.Sprintf("unknown-%d", m)
		if m == g.h.id {
			addr = g.h.addr
		} else if g.h.resolve != nil {
			if a, ok := g.h.resolve(m); ok {
				addr = a
			}
		}
		out = append(out, raft.Server{Suffrage: raft.Voter, ID: ServerID(m), Address: raft.ServerAddress(addr)})
	}
	return out
}

// forwardLeadership passes raft's leadership changes to OnLeader until
// Close.
func (g *Group) forwardLeadership() {
	defer g.wg.Done()
	for {
		select {
		case <-g.stop:
			return
		case leader := <-g.notify:
			g.h.stats.leaderChanges.Add(1)
			if leader {
				g.trans.progress.leading(time.Now())
			}
			if g.spec.OnLeader != nil {
				g.spec.OnLeader(leader, g.raft.CurrentTerm())
			}
		}
	}
}

// Name is the group's name.
func (g *Group) Name() string { return g.spec.Name }

// IsLeader reports whether this member leads the group now.
func (g *Group) IsLeader() bool { return g.raft.State() == raft.Leader }

// Quiesced reports whether this member is a follower waiting quietly for
// its leader while the Host vouches for the leader's node (liveness.go).
func (g *Group) Quiesced() bool { return g.raft.Quiesced() }

// Leader returns the leader's node id and Raft address as this member
// knows them; ok is false when it knows none.
func (g *Group) Leader() (node int32, addr string, ok bool) {
	a, id := g.raft.LeaderWithID()
	node, ok = nodeOf(id)
	return node, string(a), ok
}

// Epoch is the member's current term, which serves as the leader epoch.
func (g *Group) Epoch() uint64 { return g.raft.CurrentTerm() }

// managedMembership reports whether the group's membership is managed at
// run time (GroupSpec.Members empty), as the metadata group's is: every
// other group reports its leader to it, so it comes first.
func (g *Group) managedMembership() bool { return len(g.spec.Members) == 0 }

// Members returns the group's members in order of preference: the spec's,
// or for a group without them the voters of its configuration.
func (g *Group) Members() []int32 {
	if m := g.preference(); len(m) > 0 {
		return slices.Clone(m)
	}
	f := g.raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	var out []int32
	for _, s := range f.Configuration().Servers {
		if n, ok := nodeOf(s.ID); ok && s.Suffrage == raft.Voter {
			out = append(out, n)
		}
	}
	return out
}

// Configured reports whether the group has a configuration: it was
// bootstrapped here or has heard from a leader.
func (g *Group) Configured() bool { return g.raft.LastIndex() > 0 }

// Bootstrap gives a group opened without Members its first
// configuration, with members as voters at the given addresses. Every
// voter must bootstrap the same list.
func (g *Group) Bootstrap(members map[int32]string) error {
	ids := make([]int32, 0, len(members))
	for id := range members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	servers := make([]raft.Server, 0, len(ids))
	for _, id := range ids {
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: ServerID(id), Address: raft.ServerAddress(members[id])})
	}
	return g.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error()
}

// Has reports whether node is in the group's configuration, in any role.
func (g *Group) Has(node int32) (bool, error) {
	f := g.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return false, err
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == ServerID(node) {
			return true, nil
		}
	}
	return false, nil
}

// AddNonvoter adds node, at addr, to the group as a non-voter; only the
// leader can. It waits for the change to commit, bounded by ctx.
func (g *Group) AddNonvoter(ctx context.Context, node int32, addr string) error {
	timeout := g.h.tun.CallTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Millisecond)
	}
	return g.raft.AddNonvoter(ServerID(node), raft.ServerAddress(addr), 0, timeout).Error()
}

// Snapshot takes a snapshot now (raft also takes them on its own, see
// Timing). Having nothing new to snapshot is not an error.
func (g *Group) Snapshot() error {
	if err := g.raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
		return err
	}
	return nil
}

// TransferLeadership hands this member's leadership to node and waits for
// the outcome or ctx. It does nothing unless this member leads.
func (g *Group) TransferLeadership(ctx context.Context, node int32) error {
	if g.raft.State() != raft.Leader {
		return nil
	}
	addr := fmt.Sprintf("unknown-%d", node)
	if g.h.resolve != nil {
		if a, ok := g.h.resolve(node); ok {
			addr = a
		}
	}
	f := g.raft.LeadershipTransferToServer(ServerID(node), raft.ServerAddress(addr))
	done := make(chan error, 1)
	go func() { done <- f.Error() }() // ends when raft resolves the future
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close shuts raft down and closes the store and the group's transport.
// Idempotent.
func (g *Group) Close() error {
	g.closeOnce.Do(func() {
		close(g.stop)
		g.wg.Wait()
		if g.logs.budget != nil {
			g.logs.budget.remove(g.logs)
		}
		err := g.raft.Shutdown().Error()
		// The transport first: its Close waits for the heartbeats being
		// handled, which may still write raft's term to the store.
		if cerr := g.trans.Close(); err == nil {
			err = cerr
		}
		if cerr := g.store.Close(); err == nil {
			err = cerr
		}
		g.closeErr = err
	})
	return g.closeErr
}

// HasState reports whether dir holds a group's Raft state, in any
// LogStore (for pebble, the marker that ties dir to the node's DB).
func HasState(dir string) bool {
	for _, f := range storeFiles {
		if _, err := os.Stat(filepath.Join(dir, f.name)); err == nil {
			return true
		}
	}
	return false
}

// SetWriteCaching sets whether the group's Raft log acknowledges entries
// before they are fsynced: flush > 0 turns write caching on (entries are
// fsynced within flush), 0 turns it off (every entry is fsynced before it
// counts towards a commit, the default). It reports false, and changes
// nothing, when the group's store always fsyncs (boltdb, wal); pebble
// caches.
func (g *Group) SetWriteCaching(flush time.Duration) bool {
	wc, ok := g.store.(writeCacher)
	if ok {
		wc.SetWriteCaching(max(flush, 0))
	}
	return ok
}
