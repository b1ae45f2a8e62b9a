// Package raftgroup opens one hashicorp/raft group on disk: a raft-boltdb
// log and stable store, a file snapshot store, a quiet per-group logger and
// the node's timing. The metadata group and every partition replica use it.
//
// The caller owns the transport it passes in and the FSM; Close shuts raft
// down, then closes the store and the transport (if it can be closed).
package raftgroup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/minikafka/minikafka-go/logging"
)

// Timing holds the Raft timing knobs a node configures.
type Timing struct {
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	MaxAppendEntries   int
	SnapshotInterval   time.Duration
	SnapshotThreshold  uint64
	TrailingLogs       uint64

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
}

// MaxLeaderHeartbeatFactor bounds Timing.LeaderHeartbeatTimeout: a leader
// then heartbeats every 0.3–0.6 follower heartbeat timeouts.
const MaxLeaderHeartbeatFactor = 3

// DefaultTiming is tuned for fail-over within about two seconds on a LAN:
// a follower notices a silent leader after 0.5–1 s and an election takes a
// few round trips. The leader lease equals the heartbeat timeout: a
// shorter lease made leaders on a loaded host step down for 250 ms without
// follower contact (seen in the bench), which costs an election for nothing.
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
	case t.SnapshotThreshold == 0:
		return errors.New("snapshot threshold is 0")
	}
	return nil
}

// Config opens one group.
type Config struct {
	// Dir holds raft.db and snapshots/. Created if missing.
	Dir string
	// LocalID is this node's server ID in the group.
	LocalID raft.ServerID
	// Servers is the group's initial configuration, used by Bootstrap.
	Servers []raft.Server
	// Bootstrap writes Servers as the first configuration when the group
	// has no state on disk yet. Every member must bootstrap the same list.
	Bootstrap bool
	// Transport carries the group's RPCs. Close closes it if it implements
	// raft.WithClose.
	Transport raft.Transport
	Timing    Timing
	// NoSnapshotRestoreOnStart is for FSMs that keep their own state on
	// disk (see package fsm).
	NoSnapshotRestoreOnStart bool
	// WrapSnapshots, if set, wraps the file snapshot store.
	WrapSnapshots func(raft.SnapshotStore) raft.SnapshotStore
	// BeforeStart, if set, is called with the (wrapped) snapshot store
	// after bootstrapping and before raft starts; an error aborts Open.
	BeforeStart func(raft.SnapshotStore) error
	// NotifyCh receives true/false on gaining and losing leadership.
	NotifyCh chan<- bool
	// Logger receives raft's messages at Warn and above. Nil discards.
	Logger *slog.Logger
	// LogLevel is the lowest level of raft's own messages passed on;
	// zero means Warn.
	LogLevel slog.Level
	// CampaignDelay, when positive and this Open bootstraps the group (it
	// had no state on disk), holds this member back from campaigning in
	// the group's first election: raft starts with heartbeat and election
	// timeouts of CampaignDelay instead of Timing's, and Timing's are put
	// back (raft.ReloadConfig) when the hold ends: when CampaignDelay has
	// passed, at the deadline the caller sets with Group.ReleaseCampaign,
	// 8 of Timing's heartbeat timeouts after this member first hears of a
	// leader (not at once: a held follower rides out the stalls of nodes
	// busy electing many new groups instead of starting elections of its
	// own), or as soon as this member becomes a candidate or the leader (a
	// leader heartbeats every tenth of its heartbeat timeout). A new group's members are held so that none
	// campaigns before its peers have opened the group, and so that its
	// preferred member can be released first and win in one round
	// instead of three candidates splitting votes. A group reopened from
	// disk is never held, so fail-over keeps Timing's speed.
	CampaignDelay time.Duration
}

// Group is an open Raft group.
type Group struct {
	Raft  *raft.Raft
	store *raftboltdb.BoltStore
	trans raft.Transport

	// restored is closed once the group runs with Timing's timeouts (at
	// once unless CampaignDelay applied). release carries ReleaseCampaign's
	// requests to the goroutine that lifts the hold and then (with
	// Timing.LeaderHeartbeatTimeout) follows the member's role; stopHold
	// (closed once, by Close) and holdDone stop and await that goroutine.
	restored     chan struct{}
	release      chan time.Duration
	stopHold     chan struct{}
	stopHoldOnce sync.Once
	holdDone     chan struct{}
}

// Open opens (and, if asked and new, bootstraps) the group.
func Open(cfg Config, fsm raft.FSM) (*Group, error) {
	if err := cfg.Timing.Validate(); err != nil {
		return nil, fmt.Errorf("raftgroup: %w", err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("raftgroup: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = logging.Discard()
	}
	level := cfg.LogLevel
	if level == 0 {
		level = slog.LevelWarn
	}
	hl := logging.HCLog(logger, "raft", level)

	rc := raft.DefaultConfig()
	rc.LocalID = cfg.LocalID
	rc.HeartbeatTimeout = cfg.Timing.HeartbeatTimeout
	rc.ElectionTimeout = cfg.Timing.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.Timing.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.Timing.CommitTimeout
	rc.MaxAppendEntries = cfg.Timing.MaxAppendEntries
	rc.SnapshotInterval = cfg.Timing.SnapshotInterval
	rc.SnapshotThreshold = cfg.Timing.SnapshotThreshold
	rc.TrailingLogs = cfg.Timing.TrailingLogs
	rc.BatchApplyCh = true
	rc.NoSnapshotRestoreOnStart = cfg.NoSnapshotRestoreOnStart
	rc.NotifyCh = cfg.NotifyCh
	rc.Logger = hl
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, fmt.Errorf("raftgroup: %w", err)
	}

	store, err := raftboltdb.New(raftboltdb.Options{
		Path: filepath.Join(cfg.Dir, "raft.db"),
		// A zero timeout blocks forever on a file another process holds.
		BoltOptions: &bbolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType},
	})
	if err != nil {
		return nil, fmt.Errorf("raftgroup: open %s: %w", filepath.Join(cfg.Dir, "raft.db"), err)
	}
	var snaps raft.SnapshotStore
	snaps, err = raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, hl)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("raftgroup: snapshot store: %w", err)
	}
	if cfg.WrapSnapshots != nil {
		snaps = cfg.WrapSnapshots(snaps)
	}
	logs, err := raft.NewLogCache(256, store)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("raftgroup: %w", err)
	}
	hold := false
	if cfg.Bootstrap {
		has, err := raft.HasExistingState(logs, store, snaps)
		if err != nil {
			store.Close()
			return nil, fmt.Errorf("raftgroup: %w", err)
		}
		if !has {
			if err := raft.BootstrapCluster(rc, logs, store, snaps, cfg.Transport, raft.Configuration{Servers: cfg.Servers}); err != nil {
				store.Close()
				return nil, fmt.Errorf("raftgroup: bootstrap: %w", err)
			}
			hold = cfg.CampaignDelay > max(rc.HeartbeatTimeout, rc.ElectionTimeout)
		}
	}
	normal := raft.ReloadableConfig{
		TrailingLogs:      rc.TrailingLogs,
		SnapshotInterval:  rc.SnapshotInterval,
		SnapshotThreshold: rc.SnapshotThreshold,
		HeartbeatTimeout:  rc.HeartbeatTimeout,
		ElectionTimeout:   rc.ElectionTimeout,
	}
	if hold {
		rc.HeartbeatTimeout = cfg.CampaignDelay
		rc.ElectionTimeout = cfg.CampaignDelay
	}
	if cfg.BeforeStart != nil {
		if err := cfg.BeforeStart(snaps); err != nil {
			store.Close()
			return nil, err
		}
	}
	r, err := raft.NewRaft(rc, fsm, logs, store, snaps, cfg.Transport)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("raftgroup: %w", err)
	}
	g := &Group{Raft: r, store: store, trans: cfg.Transport,
		restored: make(chan struct{}), release: make(chan time.Duration, 1),
		stopHold: make(chan struct{}), holdDone: make(chan struct{})}
	leaderHB := cfg.Timing.LeaderHeartbeatTimeout
	roles := leaderHB > normal.HeartbeatTimeout
	if !hold {
		close(g.restored)
		if !roles {
			close(g.holdDone)
			return g, nil
		}
		go func() {
			defer close(g.holdDone)
			g.followRole(normal, leaderHB, logger)
		}()
		return g, nil
	}
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
	r.RegisterObserver(obs)
	go func() {
		defer close(g.holdDone)
		if g.liftHold(obs, obsCh, normal, cfg.CampaignDelay, logger) && roles {
			g.followRole(normal, leaderHB, logger)
		}
	}()
	return g, nil
}

// roleRecheck is how often followRole looks at the member's state even
// without an observation (raft drops observations a full channel cannot
// take).
const roleRecheck = 5 * time.Second

// followRole runs the member with Timing.LeaderHeartbeatTimeout while it
// leads and with its normal timeouts otherwise, until Close. It is owned
// by the Group (it runs on the goroutine that holdDone awaits).
func (g *Group) followRole(normal raft.ReloadableConfig, leaderHB time.Duration, logger *slog.Logger) {
	obsCh := make(chan raft.Observation, 8)
	obs := raft.NewObserver(obsCh, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.RaftState)
		return ok
	})
	g.Raft.RegisterObserver(obs)
	defer g.Raft.DeregisterObserver(obs)
	leading := normal
	leading.HeartbeatTimeout = leaderHB
	leading.ElectionTimeout = max(normal.ElectionTimeout, leaderHB) // raft wants election >= heartbeat
	inForce := false                                                // leading's timeouts are set
	tick := time.NewTicker(roleRecheck)
	defer tick.Stop()
	for {
		if want := g.Raft.State() == raft.Leader; want != inForce {
			cfg := normal
			if want {
				cfg = leading
			}
			// Going back to normal shortens the heartbeat timeout, which
			// raft passes on to a running follower loop at once.
			if err := g.Raft.ReloadConfig(cfg); err != nil {
				logger.Warn("could not set the raft timeouts for the member's role", "leader", want, "err", err)
			} else {
				inForce = want
			}
		}
		select {
		case <-g.stopHold:
			return
		case <-obsCh:
		case <-tick.C:
		}
	}
}

// liftHold puts the group's normal timeouts back once this member
// campaigns or leads, holdAfterLeader heartbeat timeouts after it first
// hears of a leader, or when the hold's deadline passes (bound, moved by
// ReleaseCampaign). It returns false, early, on Close; it runs on the
// Group's own goroutine.
func (g *Group) liftHold(obs *raft.Observer, obsCh <-chan raft.Observation, normal raft.ReloadableConfig, bound time.Duration, logger *slog.Logger) bool {
	defer g.Raft.DeregisterObserver(obs)
	deadline := time.Now().Add(bound)
	timer := time.NewTimer(bound)
	defer timer.Stop()
	sawLeader := false
	leaderSeen := func() {
		if sawLeader {
			return
		}
		sawLeader = true
		if d := time.Now().Add(holdAfterLeader * normal.HeartbeatTimeout); d.Before(deadline) {
			deadline = d
			timer.Reset(time.Until(d))
		}
	}
	// The observer was registered after raft started: look once, in case
	// what it waits for has already happened.
	if _, id := g.Raft.LeaderWithID(); id != "" {
		leaderSeen()
	}
wait:
	for g.Raft.State() == raft.Follower {
		select {
		case <-g.stopHold:
			return false
		case o := <-obsCh:
			if _, ok := o.Data.(raft.RaftState); ok {
				break wait
			}
			leaderSeen()
		case <-timer.C:
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
	if err := g.Raft.ReloadConfig(normal); err != nil {
		logger.Warn("could not restore the raft timeouts after holding a new group's campaign", "err", err)
	}
	close(g.restored)
	return true
}

// holdAfterLeader is how long, in heartbeat timeouts, a held member keeps
// its long timeouts after it first hears of a leader: a new group's
// followers ride out the stalls of nodes still electing hundreds of other
// new groups instead of starting elections of their own.
const holdAfterLeader = 8

// ReleaseCampaign ends a new group's campaign hold (Config.CampaignDelay)
// after d instead, or at once if d <= 0: the group then runs with its
// Timing, and campaigns at once unless it has heard from a leader within
// a heartbeat timeout. A later call replaces an earlier one's deadline.
// It does nothing when the group is not held (any more).
func (g *Group) ReleaseCampaign(d time.Duration) {
	for {
		select {
		case <-g.restored:
			return
		case <-g.holdDone:
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

// TransferLeadership asks raft to hand this member's leadership to member
// to (at addr) and waits for the outcome or ctx. It does nothing unless
// this member leads.
func (g *Group) TransferLeadership(ctx context.Context, to raft.ServerID, addr raft.ServerAddress) error {
	if g.Raft.State() != raft.Leader {
		return nil
	}
	f := g.Raft.LeadershipTransferToServer(to, addr)
	done := make(chan error, 1)
	go func() { done <- f.Error() }() // ends when raft resolves the future
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Held reports whether the group is still held back from campaigning.
func (g *Group) Held() bool {
	select {
	case <-g.restored:
		return false
	default:
		return true
	}
}

// TimingRestored returns a channel closed once the group runs with its
// configured Timing: at once, unless Config.CampaignDelay held it back.
func (g *Group) TimingRestored() <-chan struct{} { return g.restored }

// Close shuts raft down and closes the store and the transport.
func (g *Group) Close() error {
	g.stopHoldOnce.Do(func() { close(g.stopHold) })
	<-g.holdDone
	err := g.Raft.Shutdown().Error()
	if cerr := g.store.Close(); err == nil {
		err = cerr
	}
	if c, ok := g.trans.(raft.WithClose); ok {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// HasState reports whether dir holds a group's Raft state.
func HasState(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "raft.db"))
	return err == nil
}

var _ io.Closer = (*Group)(nil)
