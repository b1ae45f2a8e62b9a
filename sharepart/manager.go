package sharepart

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/internal/changes"
)

// Store persists share-partition snapshots: the __share_group_state
// partition of each key, through its Raft log (broker/kafkabackend).
type Store interface {
	// Read returns key's latest snapshot, or false if it has no state
	// (then the snapshot may still carry the state epoch of a reset),
	// for the data partition's leader of leaderEpoch: from then on a
	// write of an older leader epoch is refused (FENCED_LEADER_EPOCH),
	// so a deposed leader cannot overwrite what the new one loaded.
	Read(ctx context.Context, key Key, leaderEpoch int32) (Snapshot, bool, error)
	// Write returns once s is committed as key's snapshot.
	Write(ctx context.Context, key Key, s Snapshot) error
}

// Log is what the Manager needs of the data partition's local replica.
type Log interface {
	IsLeader() bool
	LeaderEpoch() int32
	HighWatermark() int64
	LogStartOffset() int64
}

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	Partition Config
	// ResetEarliest starts a new share partition at the log start offset
	// (share.auto.offset.reset=earliest); else at the high watermark.
	ResetEarliest bool
	// Now is the leader's clock.
	Now func() time.Time
}

// Manager holds the share partitions of the data partitions this node
// leads, loading each from the Store on first use in a leader epoch and
// writing every change to the Store before the caller answers.
type Manager struct {
	cfg   ManagerConfig
	store Store
	// mu guards parts (not the entries, which have their own locks).
	mu    sync.Mutex
	parts map[Key]*entry
	gens  atomic.Uint64 // the last Partition.Generation given
}

// entry is one share partition; mu serialises its operations, including
// their Store writes, so snapshots are written in the order they change.
type entry struct {
	mu    sync.Mutex
	p     *Partition // nil until loaded, or after a failed write
	epoch int32      // the leader epoch p was loaded in
	// released fires when records become Available again, for the
	// fetches waiting for some.
	released changes.Signal
}

// NewManager returns an empty Manager.
func NewManager(cfg ManagerConfig, store Store) *Manager {
	return &Manager{cfg: cfg, store: store, parts: make(map[Key]*entry)}
}

func (m *Manager) entry(k Key) *entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.parts[k]
	if e == nil {
		e = &entry{}
		m.parts[k] = e
	}
	return e
}

// Do runs fn on key's share partition, whose data partition log must be
// led by this node (else NOT_LEADER_OR_FOLLOWER): it loads the partition
// if needed, releases expired locks, runs fn, and writes the state if it
// changed. If the write fails, fn's changes are dropped with the
// in-memory state (reloaded next time) and Do returns the error.
func (m *Manager) Do(ctx context.Context, key Key, log Log, fn func(p *Partition, now int64) error) error {
	e := m.entry(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	if !log.IsLeader() {
		e.p = nil
		return kerr.NotLeaderForPartition
	}
	epoch := log.LeaderEpoch()
	if e.p == nil || e.epoch != epoch {
		p, err := m.load(ctx, key, log)
		if err != nil {
			e.p = nil
			return err
		}
		p.gen = m.gens.Add(1)
		e.p, e.epoch = p, epoch
	}
	now := m.cfg.Now().UnixMilli()
	before := e.p.Available()
	e.p.ExpireLocks(now)
	ferr := fn(e.p, now)
	if e.p.Dirty() {
		if err := m.store.Write(ctx, key, e.p.Snapshot(epoch)); err != nil {
			e.p = nil
			return err
		}
	}
	if e.p.Available() > before {
		e.released.Fire()
	}
	return ferr
}

// Reset makes key's share partition, whose data partition log this node
// leads, start again at start (-1: no state, started anew by the next
// request where share.auto.offset.reset says), forgetting every record's
// state: it writes the next state epoch's snapshot, which fences any
// other writer of the old one, and replaces the in-memory state.
func (m *Manager) Reset(ctx context.Context, key Key, log Log, start int64) error {
	e := m.entry(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.p = nil
	if !log.IsLeader() {
		return kerr.NotLeaderForPartition
	}
	epoch := log.LeaderEpoch()
	cur, _, err := m.store.Read(ctx, key, epoch)
	if err != nil {
		return err
	}
	s := Snapshot{StateEpoch: cur.StateEpoch + 1, LeaderEpoch: epoch, StartOffset: start}
	if err := m.store.Write(ctx, key, s); err != nil {
		return err
	}
	if start >= 0 {
		e.p, e.epoch = New(m.cfg.Partition, start, s.StateEpoch), epoch
		e.p.gen = m.gens.Add(1)
	}
	e.released.Fire() // records below the old start may be there to acquire
	return nil
}

// Released is the signal that fires when records of key's share
// partition become Available again (released, or their locks expired):
// take its channel before Do, and wait on it for new records to acquire.
func (m *Manager) Released(key Key) *changes.Signal { return &m.entry(key).released }

// load reads key's state from the Store, or starts it where
// share.auto.offset.reset says.
func (m *Manager) load(ctx context.Context, key Key, log Log) (*Partition, error) {
	s, ok, err := m.store.Read(ctx, key, log.LeaderEpoch())
	if err != nil {
		return nil, err
	}
	if !ok {
		start := log.HighWatermark()
		if m.cfg.ResetEarliest {
			start = log.LogStartOffset()
		}
		return New(m.cfg.Partition, start, s.StateEpoch), nil // a reset's marker keeps its state epoch
	}
	p, err := Load(m.cfg.Partition, s)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", kerr.UnknownServerError, key, err)
	}
	return p, nil
}

// ExpireAll releases the expired locks of every loaded share partition
// whose log this node still leads, writing each change; the leader calls
// it on its clock so expired records become available without a fetch.
// It returns the first error.
func (m *Manager) ExpireAll(ctx context.Context, logs func(Key) (Log, bool)) error {
	m.mu.Lock()
	keys := make([]Key, 0, len(m.parts))
	for k := range m.parts {
		keys = append(keys, k)
	}
	m.mu.Unlock()
	var first error
	for _, k := range keys {
		log, ok := logs(k)
		if !ok {
			m.forget(k)
			continue
		}
		err := m.Do(ctx, k, log, func(*Partition, int64) error { return nil })
		switch {
		case errors.Is(err, kerr.NotLeaderForPartition):
			m.forget(k)
		case err != nil && first == nil:
			first = err
		}
	}
	return first
}

// forget drops key's share partition (its log is gone or led elsewhere).
func (m *Manager) forget(k Key) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.parts, k)
}
