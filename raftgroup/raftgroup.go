// Package raftgroup opens one hashicorp/raft group on disk: a raft-boltdb
// log and stable store, a file snapshot store, a quiet per-group logger and
// the node's timing. The metadata group and every partition replica use it.
//
// The caller owns the transport it passes in and the FSM; Close shuts raft
// down, then closes the store and the transport (if it can be closed).
package raftgroup

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
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
}

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
}

// Group is an open Raft group.
type Group struct {
	Raft  *raft.Raft
	store *raftboltdb.BoltStore
	trans raft.Transport
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
		}
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
	return &Group{Raft: r, store: store, trans: cfg.Transport}, nil
}

// Close shuts raft down and closes the store and the transport.
func (g *Group) Close() error {
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
