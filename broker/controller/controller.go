package controller

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/minikafka/minikafka-go/membership"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/multiraft"
)

// Config is what the Controller needs of the node's configuration.
type Config struct {
	NodeID int32
	// Dir is the metadata group's Raft directory.
	Dir string
	// Raft is the metadata group's Raft timing.
	Raft multiraft.Timing
	// BootstrapExpect is how many nodes the group is bootstrapped with.
	BootstrapExpect int
	// NodeUnavailableTimeout is how long a registered node may be gone
	// before the leader replaces it (0: never; heal.go).
	NodeUnavailableTimeout time.Duration
	// SASLUsers are SCRAM users created when the cluster lacks them.
	SASLUsers []SASLUser
	Tuning    Tuning
}

// SASLUser is a SCRAM user the leader creates when the cluster lacks it.
type SASLUser struct {
	Name, Password string
	Mechanisms     []string // SCRAM mechanism names
	Iterations     int
}

// Tuning is the Controller's timeouts and limits; every field must be set
// (the broker's Tuning holds their defaults).
type Tuning struct {
	// DutyInterval is how often the leader's duties run without a
	// membership change.
	DutyInterval time.Duration
	// Proposal bounds a metadata change the node makes on its own.
	Proposal time.Duration
	// RetryMin and RetryMax bound the back-off of a proposal that finds
	// no leader.
	RetryMin, RetryMax time.Duration
	// Forward bounds a forwarded command whose caller set no deadline;
	// Apply bounds the leader's wait to queue one it serves; Serve bounds
	// a forwarding connection as a whole.
	Forward, Apply, Serve time.Duration
	// MaxFrame bounds one forwarded command or its reply, in bytes.
	MaxFrame int
	// LeaderReport bounds one attempt to report leaderships;
	// LeaderReportRetry is the wait before the next.
	LeaderReport, LeaderReportRetry time.Duration
	// MinWait is the least time a bounded wait is given when its caller's
	// deadline has (nearly) passed.
	MinWait time.Duration
}

// Raft is what the Controller needs of the node's Raft port
// (*multiraft.Host): a group, and the RPC service of the group's proposals.
type Raft interface {
	Open(spec multiraft.GroupSpec) (*multiraft.Group, error)
	Listen(service string) (net.Listener, error)
	Dial(ctx context.Context, addr, service string) (net.Conn, error)
}

// Members is what the Controller needs of gossip
// (*membership.Membership): the live nodes.
type Members interface {
	Members() []membership.NodeMeta
}

var (
	_ Raft    = (*multiraft.Host)(nil)
	_ Members = (*membership.Membership)(nil)
)

// Deps are the parts of the node the Controller uses.
type Deps struct {
	// FSM is the metadata group's state machine (the node's address book
	// reads it too).
	FSM     *metadata.FSM
	Raft    Raft
	Members Members
	// Resolve maps a node id to its Raft address (the node's address book).
	Resolve func(id int32) (string, bool)
	// MemberEvents receives a value after membership changes (coalesced:
	// the sender drops one when a value is pending); it wakes the duties
	// loop.
	MemberEvents <-chan struct{}
	Logger       *slog.Logger
}

// Controller is this node's member of the metadata group.
type Controller struct {
	cfg     Config
	deps    Deps
	logger  *slog.Logger
	group   *multiraft.Group
	fsm     *metadata.FSM
	rpc     net.Listener
	reports *leaderReports

	ctx    context.Context // ends the loops; cancelled by the node's context or Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the Controller starts
	// healer is the duties loop's memory of nodes gone (heal.go).
	healer healer
	// boot is its memory of the voters it would bootstrap (bootstrap.go).
	boot bootstrapper
}

// New opens the metadata group's Raft without bootstrapping it (the duties
// loop does, once bootstrap_expect nodes are seen, if it never was),
// answers forwarded commands and sends leader reports until ctx ends or
// Close.
func New(ctx context.Context, cfg Config, deps Deps) (*Controller, error) {
	g, err := deps.Raft.Open(multiraft.GroupSpec{
		Name:   "meta",
		Dir:    cfg.Dir,
		Timing: cfg.Raft,
		// raft-boltdb whatever raft.log_store says: the metadata group's
		// store does not change with the partitions'.
		LogStore: multiraft.LogStoreBoltDB,
		FSM:      deps.FSM,
		Logger:   deps.Logger.With("group", "meta"),
	})
	if err != nil {
		return nil, err
	}
	ln, err := deps.Raft.Listen(rpcService)
	if err != nil {
		g.Close()
		return nil, err
	}
	c := &Controller{cfg: cfg, deps: deps, logger: deps.Logger, group: g, fsm: deps.FSM, rpc: ln}
	c.ctx, c.cancel = context.WithCancel(ctx)
	c.reports = newLeaderReports(c)
	c.wg.Add(2)
	go c.serveRPC()
	go c.reports.loop()
	return c, nil
}

// StartDuties starts the metadata duties loop (duties.go).
func (c *Controller) StartDuties() {
	c.wg.Add(1)
	go c.duties()
}

// Close stops the loops, closes the group and waits for every goroutine the
// Controller started.
func (c *Controller) Close() error {
	c.cancel()
	c.rpc.Close()
	err := c.group.Close()
	c.wg.Wait()
	return err
}

// State is this node's copy of the metadata.
func (c *Controller) State() *metadata.Snapshot { return c.fsm.State() }

// Watch is closed at the next change of the metadata.
func (c *Controller) Watch() <-chan struct{} { return c.fsm.Watch() }

// WaitFor waits until cond holds for this node's copy of the metadata.
func (c *Controller) WaitFor(ctx context.Context, cond func(*metadata.Snapshot) bool) (*metadata.Snapshot, error) {
	return c.fsm.WaitFor(ctx, cond)
}

// LeaderID is the metadata leader's node id (Kafka's controller id), or -1.
func (c *Controller) LeaderID() int32 {
	if id, _, ok := c.group.Leader(); ok {
		return id
	}
	return -1
}

// CaughtUp reports whether this node's copy of the metadata is as fresh as
// the metadata leader's commit index it last heard of.
func (c *Controller) CaughtUp() bool {
	return c.group.CaughtUp(c.cfg.Raft.HeartbeatTimeout)
}

// Replication is the metadata group's Raft indexes on this node.
func (c *Controller) Replication() multiraft.Replication { return c.group.Replication() }
