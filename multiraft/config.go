package multiraft

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka-go/internal/knob"
)

// ErrInvalidConfig is wrapped by every error that Listen or Open returns for
// a bad Config, Tuning, Timing or GroupSpec.
var ErrInvalidConfig = errors.New("multiraft: invalid config")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
}

// Config configures a Host. NodeID and BindAddr are required.
type Config struct {
	// NodeID is this node's id, positive; it is its server id in every
	// group (ServerID).
	NodeID int32
	// BindAddr is the host:port to listen on; port 0 picks a free port.
	BindAddr string
	// AdvertiseAddr is the host:port that peers dial and that groups store
	// as this node's address. Empty means the bound address, which must
	// then not be a wildcard such as 0.0.0.0.
	AdvertiseAddr string
	// Resolve returns the Raft address of a node, or false if it is not
	// known; groups then dial the address stored in their configuration.
	// It is called on every dial and must be quick and safe for concurrent
	// use. Nil means the stored addresses only.
	Resolve func(node int32) (string, bool)
	// Logger receives the host's logs and is the parent of every group's.
	// Nil discards.
	Logger *slog.Logger
	// Tuning holds the timeouts and limits; zero fields take their
	// defaults (DefaultTuning).
	Tuning Tuning
	// LogDir is the directory of the node-wide Raft log store: the one
	// Pebble DB that keeps the log and stable state of every
	// LogStorePebble group. The Host opens it at the first such group and
	// closes it in Close, after the groups. Empty means no pebble groups.
	LogDir string
	// LogMemTable is the memtable of the LogDir store, which also sizes
	// its WAL files (LogMemTableFor scales it to a disk). 0 means
	// DefaultLogMemTable.
	LogMemTable int64
	// LogFS is the filesystem of the LogDir store; nil means the OS's.
	// Tests inject disk faults through it.
	LogFS vfs.FS
	// OnCommit, if set, is called for each proposal that succeeds, with
	// the time from Group.Propose until it was committed and applied on
	// this leader (when Proposal.Wait returns). It must be quick.
	OnCommit func(time.Duration)
	// SourceAddr is the local IP that sessions this Host dials leave from
	// (no port). Empty lets the system choose. A test harness that tells
	// nodes apart by the address they connect from sets it.
	SourceAddr string
	// TLS, when set, makes the Raft port speak mutual TLS and bind every
	// accepted session to the node its certificate names (security.go).
	// Nil means plain TCP, which trusts whoever connects.
	TLS *TLS
}

// Tuning is every timeout and limit of a Host in one place. A zero field
// means the default that DefaultTuning documents.
type Tuning struct {
	// HandshakeTimeout bounds a new connection's handshake and the first
	// frame of a new stream.
	HandshakeTimeout time.Duration
	// DialTimeout bounds a session dial that has no caller deadline (the
	// liveness watch's).
	DialTimeout time.Duration
	// CallTimeout bounds each Raft RPC to a peer (a snapshot's scales with
	// its size, one CallTimeout per SnapshotTimeoutScale bytes).
	CallTimeout time.Duration
	// KeepAliveInterval is how often a session is pinged; a ping not
	// answered within SessionWriteTimeout ends the session, as does a
	// frame that cannot be queued for sending within it.
	KeepAliveInterval, SessionWriteTimeout time.Duration
	// OpenGrace is how long an RPC for a group not open here waits for it to
	// open before it is refused: a new group's members open it at about the
	// same time, and its first candidate should not lose its election to
	// a peer that is a few milliseconds late.
	OpenGrace time.Duration
	// HeartbeatWindow is how long the first heartbeat queued for a peer
	// waits for others before one frame carries them all.
	HeartbeatWindow time.Duration
	// HeartbeatHandlerTimeout bounds how long one group's heartbeat
	// handler may hold up the rest of a frame (checked every half of it).
	HeartbeatHandlerTimeout time.Duration
	// MaxHeartbeatsPerFrame caps one heartbeat frame.
	MaxHeartbeatsPerFrame int
	// MaxFrame bounds one RPC frame (an AppendEntries with its entries).
	MaxFrame int
	// CatchUpRate bounds, in bytes per second over all groups of the
	// Host, the entries and snapshots a leader sends to members marked
	// with Group.Throttle (a reassignment's new replicas catching up), so
	// that a move leaves client traffic its share of disk and network.
	// Negative means no bound.
	CatchUpRate int
	// MaxIdleStreams is how many idle call streams a peer's session keeps
	// for reuse.
	MaxIdleStreams int
	// MaxCallsPerPeer bounds the calls (all but heartbeat frames and
	// election calls, which have 64 of their own) in flight to one peer;
	// more wait, each until its deadline. With the election calls it stays
	// below yamux's AcceptBacklog (256), past which opening a stream waits
	// without a deadline.
	MaxCallsPerPeer int
	// WatchRetryMin and WatchRetryMax bound the back-off with which the
	// liveness watch redials a peer it cannot reach.
	WatchRetryMin, WatchRetryMax time.Duration
	// SuccessorStagger is how long after a peer's loss the second member
	// in line campaigns in a group the lost peer led, if the first has not.
	SuccessorStagger time.Duration
	// StartElectionTimeout bounds handing one group's raft its TimeoutNow.
	StartElectionTimeout time.Duration
	// SuccessorsInFlight is how many successor elections a node runs at
	// once after a loss, each holding its slot until its group has a
	// leader or for CampaignSlot; a loss of more groups than this holds
	// the other members back meanwhile (losshold.go).
	SuccessorsInFlight int
	// CampaignHold is how long, in heartbeat timeouts, a brand-new
	// group's members hold back from campaigning (GroupSpec.Hold), unless
	// the group's preferred member will still campaign (it is on a node
	// whose process runs, or the Host is releasing this node's
	// campaigns): then they hold on, up to CampaignHoldMax.
	CampaignHold    int
	CampaignHoldMax time.Duration
	// HoldAfterLeader is how long, in heartbeat timeouts, a held member
	// keeps holding after it first hears of a leader.
	HoldAfterLeader int
	// SmallBatch is the largest batch of new groups (ReleaseCampaigns) whose
	// non-preferred members settle after SmallBatchSettle heartbeat
	// timeouts; larger batches settle after Settle to twice Settle.
	SmallBatch, SmallBatchSettle, Settle int
	// CampaignsInFlight is how many preferred members ReleaseCampaigns has
	// campaigning at once; each frees its slot when its group has a leader
	// or after CampaignSlot.
	CampaignsInFlight int
	CampaignSlot      time.Duration
	// ElectionTurns is how many of this node's members may run an election
	// round at once that raft started on its own timeout (campaign turns,
	// turns.go); the others wait as followers for another timeout.
	ElectionTurns int
	// TransferParallelism is how many rebalancing transfers run at once.
	TransferParallelism int
	// RebalanceInterval is how often leaderships go back to each group's
	// preferred member (the first of GroupSpec.Members) when its node is
	// up; negative turns rebalancing off. RebalanceFirst is the delay of
	// the first pass.
	RebalanceInterval, RebalanceFirst time.Duration
	// RoleRecheck is how often a group with Timing.LeaderHeartbeatTimeout
	// checks its role without an observation.
	RoleRecheck time.Duration
	// LivenessInterval is how often a watched peer is pinged; the Host
	// vouches for it, so that idle groups go quiet, while a ping answered
	// within LivenessTimeout (liveness.go).
	LivenessInterval, LivenessTimeout time.Duration
	// DisableQuiescence keeps every group's raft heartbeating and counting
	// down to elections while idle, on timers of its own.
	DisableQuiescence bool
	// SerialLeaderWrite makes a leader store new entries in its own log
	// before it sends them, as upstream hashicorp/raft; by default it
	// stores them while they are sent and counts its own copy once stored
	// (third_party/raft's ParallelLeaderWrite).
	SerialLeaderWrite bool
}

// DefaultTuning returns the defaults (the table in Validate), each
// explained on Tuning.
func DefaultTuning() Tuning {
	var t Tuning
	_ = t.Validate() // zero fields take their defaults, which are valid
	return t
}

// Validate fills zero fields with their defaults and reports the first
// field that is out of range, naming it. RebalanceInterval may be negative
// (off).
func (t *Tuning) Validate() error {
	rebalanceOff := t.RebalanceInterval < 0
	if rebalanceOff {
		t.RebalanceInterval = 0
	}
	catchUpOff := t.CatchUpRate < 0
	if catchUpOff {
		t.CatchUpRate = 0
	}
	err := knob.Check([]knob.Duration{
		{Name: "HandshakeTimeout", V: &t.HandshakeTimeout, Def: 5 * time.Second, Min: time.Millisecond},
		{Name: "DialTimeout", V: &t.DialTimeout, Def: 2 * time.Second, Min: time.Millisecond},
		{Name: "CallTimeout", V: &t.CallTimeout, Def: 2 * time.Second, Min: time.Millisecond},
		{Name: "KeepAliveInterval", V: &t.KeepAliveInterval, Def: 10 * time.Second, Min: time.Millisecond},
		{Name: "SessionWriteTimeout", V: &t.SessionWriteTimeout, Def: 10 * time.Second, Min: time.Millisecond},
		{Name: "OpenGrace", V: &t.OpenGrace, Def: 500 * time.Millisecond},
		{Name: "HeartbeatWindow", V: &t.HeartbeatWindow, Def: 20 * time.Millisecond},
		{Name: "HeartbeatHandlerTimeout", V: &t.HeartbeatHandlerTimeout, Def: 100 * time.Millisecond, Min: time.Millisecond},
		{Name: "WatchRetryMin", V: &t.WatchRetryMin, Def: 100 * time.Millisecond, Min: time.Millisecond},
		{Name: "WatchRetryMax", V: &t.WatchRetryMax, Def: time.Second, Min: time.Millisecond},
		{Name: "SuccessorStagger", V: &t.SuccessorStagger, Def: 2 * time.Second, Min: time.Millisecond},
		{Name: "StartElectionTimeout", V: &t.StartElectionTimeout, Def: time.Second, Min: time.Millisecond},
		{Name: "CampaignSlot", V: &t.CampaignSlot, Def: 2 * time.Second, Min: time.Millisecond},
		{Name: "CampaignHoldMax", V: &t.CampaignHoldMax, Def: 10 * time.Minute, Min: time.Millisecond},
		{Name: "RebalanceInterval", V: &t.RebalanceInterval, Def: 10 * time.Second, Min: 10 * time.Millisecond},
		{Name: "RebalanceFirst", V: &t.RebalanceFirst, Def: 2 * time.Second, Min: time.Millisecond},
		{Name: "RoleRecheck", V: &t.RoleRecheck, Def: 5 * time.Second, Min: time.Millisecond},
		{Name: "LivenessInterval", V: &t.LivenessInterval, Def: 100 * time.Millisecond, Min: time.Millisecond},
		{Name: "LivenessTimeout", V: &t.LivenessTimeout, Def: time.Second, Min: time.Millisecond},
	}, []knob.Int{
		{Name: "MaxHeartbeatsPerFrame", V: &t.MaxHeartbeatsPerFrame, Def: 1024, Min: 1, Max: 1 << 16},
		{Name: "MaxFrame", V: &t.MaxFrame, Def: 1 << 30, Min: 64 << 10, Max: 1<<31 - 1},
		{Name: "CatchUpRate", V: &t.CatchUpRate, Def: 32 << 20, Min: 64 << 10, Max: 1<<31 - 1},
		{Name: "MaxIdleStreams", V: &t.MaxIdleStreams, Def: 64, Min: 1, Max: 1 << 12},
		{Name: "MaxCallsPerPeer", V: &t.MaxCallsPerPeer, Def: 128, Min: 1, Max: 255 - electionCallsPerPeer},
		{Name: "CampaignHold", V: &t.CampaignHold, Def: 120, Min: 1, Max: 1 << 16},
		{Name: "HoldAfterLeader", V: &t.HoldAfterLeader, Def: 8, Min: 1, Max: 1 << 16},
		{Name: "SmallBatch", V: &t.SmallBatch, Def: 32, Min: 1, Max: 1 << 20},
		{Name: "SmallBatchSettle", V: &t.SmallBatchSettle, Def: 2, Min: 1, Max: 1 << 16},
		{Name: "Settle", V: &t.Settle, Def: 10, Min: 1, Max: 1 << 16},
		{Name: "CampaignsInFlight", V: &t.CampaignsInFlight, Def: 32, Min: 1, Max: 1 << 16},
		{Name: "SuccessorsInFlight", V: &t.SuccessorsInFlight, Def: 128, Min: 1, Max: 1 << 16},
		{Name: "ElectionTurns", V: &t.ElectionTurns, Def: 64, Min: 1, Max: 1 << 16},
		{Name: "TransferParallelism", V: &t.TransferParallelism, Def: 16, Min: 1, Max: 1 << 16},
	})
	if rebalanceOff {
		t.RebalanceInterval = -1
	}
	if catchUpOff {
		t.CatchUpRate = -1
	}
	if err != nil {
		return invalid("Tuning.%v", err)
	}
	if t.WatchRetryMax < t.WatchRetryMin {
		return invalid("Tuning.WatchRetryMax %v is below WatchRetryMin %v", t.WatchRetryMax, t.WatchRetryMin)
	}
	return nil
}

// validate checks cfg and fills in defaults; it is the only place a Config
// is checked.
func (cfg *Config) validate() error {
	if cfg.NodeID <= 0 {
		return invalid("NodeID %d is not positive", cfg.NodeID)
	}
	if cfg.BindAddr == "" {
		return invalid("BindAddr is empty")
	}
	if cfg.AdvertiseAddr != "" {
		host, port, err := net.SplitHostPort(cfg.AdvertiseAddr)
		if err != nil {
			return invalid("AdvertiseAddr %q: %v", cfg.AdvertiseAddr, err)
		}
		if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 || host == "" {
			return invalid("AdvertiseAddr %q needs a host and a port in 1..65535", cfg.AdvertiseAddr)
		}
	}
	if cfg.SourceAddr != "" {
		if _, err := netip.ParseAddr(cfg.SourceAddr); err != nil {
			return invalid("SourceAddr %q is not an IP address", cfg.SourceAddr)
		}
	}
	return cfg.Tuning.Validate()
}

// Timing holds the Raft timing of a group.
type Timing struct {
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	MaxAppendEntries   int
	SnapshotInterval   time.Duration
	SnapshotThreshold  uint64
	TrailingLogs       uint64

	// SnapshotBytes, when positive, also takes a snapshot once the group's
	// stored log holds more than TrailingBytes plus this many bytes of
	// entries: a log of large entries (produce batches of a MiB) is
	// trimmed by what it holds, not only by its count of entries, which
	// SnapshotThreshold and TrailingLogs bound (thousands of entries of a
	// MiB each are GiBs on disk, next to the partition log that holds the
	// same records). 0 leaves it to SnapshotThreshold and SnapshotInterval.
	SnapshotBytes int64
	// TrailingBytes bounds by their bytes the entries a snapshot leaves in
	// the log for followers to catch up from, as TrailingLogs bounds them
	// by count: the fewer entries wins. Only with SnapshotBytes.
	TrailingBytes int64

	// LeaderHeartbeatTimeout, when above HeartbeatTimeout, is the heartbeat
	// timeout a member runs with while it leads. Raft's leader heartbeats
	// each follower every tenth to fifth of its own heartbeat timeout, while
	// a follower campaigns after hearing nothing for its own: a leader
	// running with, say, 2.5 times the followers' timeout heartbeats 2.5
	// times less often (most of an idle node's CPU with hundreds of groups)
	// and still reaches every follower at least twice per follower timeout.
	// A member that stops leading is put back on HeartbeatTimeout at once.
	// Zero (or HeartbeatTimeout) means one timeout for every role; at most
	// MaxLeaderHeartbeatFactor times HeartbeatTimeout.
	LeaderHeartbeatTimeout time.Duration

	// MaxInflightAppends, when 2 or more, lets the leader pipeline its
	// AppendEntries to each follower once it has caught up: up to this
	// many requests on their way or waiting for their answers, instead
	// of one at a time (pipeline.go). Raft's pipeline sends one batch of
	// MaxAppendEntries per signal of new entries, and signals merge while
	// it is busy, so a follower under load falls behind until the next
	// CommitTimeout: pair it with a short one. 0 turns pipelining off; at
	// most MaxInflightAppendsLimit.
	MaxInflightAppends int
}

// MaxInflightAppendsLimit bounds Timing.MaxInflightAppends.
const MaxInflightAppendsLimit = 64

// MaxLeaderHeartbeatFactor bounds Timing.LeaderHeartbeatTimeout: a leader
// then heartbeats every 0.3–0.6 follower heartbeat timeouts.
const MaxLeaderHeartbeatFactor = 3

// DefaultTiming is tuned for fail-over within about two seconds on a LAN:
// a follower notices a silent leader after 0.5–1 s and an election takes a
// few round trips. The leader lease equals the heartbeat timeout: a
// shorter lease made leaders on a loaded host step down without follower
// contact, which costs an election for nothing.
func DefaultTiming() Timing {
	return Timing{
		HeartbeatTimeout:   500 * time.Millisecond,
		ElectionTimeout:    500 * time.Millisecond,
		LeaderLeaseTimeout: 500 * time.Millisecond,
		CommitTimeout:      50 * time.Millisecond,
		MaxAppendEntries:   256,
		SnapshotInterval:   60 * time.Second,
		SnapshotThreshold:  4096,
		TrailingLogs:       2048,
		SnapshotBytes:      32 << 20,
		TrailingBytes:      8 << 20,
	}
}

// Validate reports the first knob raft would refuse, naming it.
func (t Timing) Validate() error {
	switch {
	case t.HeartbeatTimeout < 5*time.Millisecond:
		return fmt.Errorf("heartbeat timeout %v is below 5ms", t.HeartbeatTimeout)
	case t.ElectionTimeout < t.HeartbeatTimeout:
		return fmt.Errorf("election timeout %v is below the heartbeat timeout %v", t.ElectionTimeout, t.HeartbeatTimeout)
	case t.LeaderLeaseTimeout < 5*time.Millisecond || t.LeaderLeaseTimeout > t.HeartbeatTimeout:
		return fmt.Errorf("leader lease timeout %v must be between 5ms and the heartbeat timeout %v", t.LeaderLeaseTimeout, t.HeartbeatTimeout)
	case t.CommitTimeout < time.Millisecond:
		return fmt.Errorf("commit timeout %v is below 1ms", t.CommitTimeout)
	case t.LeaderHeartbeatTimeout != 0 && (t.LeaderHeartbeatTimeout < t.HeartbeatTimeout ||
		t.LeaderHeartbeatTimeout > MaxLeaderHeartbeatFactor*t.HeartbeatTimeout):
		return fmt.Errorf("leader heartbeat timeout %v must be 0 or between the heartbeat timeout %v and %d times it",
			t.LeaderHeartbeatTimeout, t.HeartbeatTimeout, MaxLeaderHeartbeatFactor)
	case t.MaxAppendEntries <= 0 || t.MaxAppendEntries > 1024:
		return fmt.Errorf("max append entries %d must be in 1..1024", t.MaxAppendEntries)
	case t.SnapshotInterval < 5*time.Millisecond:
		return fmt.Errorf("snapshot interval %v is below 5ms", t.SnapshotInterval)
	case t.MaxInflightAppends < 0 || t.MaxInflightAppends == 1 || t.MaxInflightAppends > MaxInflightAppendsLimit:
		return fmt.Errorf("max in-flight appends %d must be 0 (off) or in 2..%d", t.MaxInflightAppends, MaxInflightAppendsLimit)
	case t.SnapshotThreshold == 0:
		return errors.New("snapshot threshold is 0")
	case t.SnapshotBytes < 0 || t.TrailingBytes < 0:
		return fmt.Errorf("snapshot bytes %d and trailing bytes %d must not be negative", t.SnapshotBytes, t.TrailingBytes)
	}
	return nil
}
