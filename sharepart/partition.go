package sharepart

import (
	"errors"
	"fmt"
)

// RecordState is a record's state in a share partition, with Kafka's ids.
type RecordState int8

// Kafka's record states (RecordState.java).
const (
	Available    RecordState = 0
	Acquired     RecordState = 1
	Acknowledged RecordState = 2
	Archived     RecordState = 4
)

// AckType is an acknowledgement's type on the wire.
type AckType int8

// Kafka's acknowledge types (AcknowledgeType.java; 0 marks a gap, and
// Renew is KIP-1222's lock renewal).
const (
	AckGap     AckType = 0
	AckAccept  AckType = 1
	AckRelease AckType = 2
	AckReject  AckType = 3
	AckRenew   AckType = 4
)

// Errors, each answered with Kafka's code by the API layer.
var (
	// ErrInvalidRecordState: an acknowledged offset is not acquired by
	// the member (INVALID_RECORD_STATE).
	ErrInvalidRecordState = errors.New("sharepart: record not acquired by the member")
	// ErrInvalidAck: a malformed acknowledgement batch (INVALID_REQUEST).
	ErrInvalidAck = errors.New("sharepart: invalid acknowledgement batch")
	// ErrCorrupt: a snapshot that cannot be loaded.
	ErrCorrupt = errors.New("sharepart: corrupt share-partition snapshot")
)

// Config bounds a share partition; every field must be positive.
type Config struct {
	// LockDurationMs is share.record.lock.duration.ms: how long an
	// acquired record stays with its member.
	LockDurationMs int64
	// DeliveryLimit is share.delivery.count.limit: a record released
	// with this many deliveries is archived instead.
	DeliveryLimit int16
	// MaxLocks is group.share.partition.max.record.locks: the most
	// offsets between the start offset and the end offset.
	MaxLocks int
}

// rec is one offset's state.
type rec struct {
	state    RecordState
	count    int16  // deliveries so far
	member   string // the holder while Acquired
	deadline int64  // lock expiry (unix ms) while Acquired
}

// Partition is a share partition's in-memory state on the data
// partition's leader. It is not safe for concurrent use.
type Partition struct {
	cfg        Config
	start      int64 // SPSO: every offset below is done with
	recs       []rec // recs[i] is offset start+i; start+len(recs) is SPEO
	stateEpoch int32
	dirty      bool
	gen        uint64 // which load this is (Generation)
}

// Generation names this load of the share partition: the Manager gives
// each load its own, so that a session can tell the deliveries it made
// from those of an earlier load (Sessions.CheckGeneration).
func (p *Partition) Generation() uint64 { return p.gen }

// AcquiredRange is a range of records acquired together, with their delivery
// count.
type AcquiredRange struct {
	First, Last   int64
	DeliveryCount int16
}

// New starts a share partition at offset start (where
// share.auto.offset.reset puts a new one); it is dirty, so the caller
// persists its start before serving.
func New(cfg Config, start int64, stateEpoch int32) *Partition {
	return &Partition{cfg: cfg, start: start, stateEpoch: stateEpoch, dirty: true}
}

// Load rebuilds a share partition from its persisted snapshot: acquired
// records come back Available, keeping their delivery counts, or Archived
// once delivered DeliveryLimit times.
func Load(cfg Config, s Snapshot) (*Partition, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	if s.Uninitialised() {
		return nil, fmt.Errorf("%w: an uninitialised snapshot", ErrCorrupt)
	}
	p := &Partition{cfg: cfg, start: s.StartOffset, stateEpoch: s.StateEpoch}
	for _, b := range s.Batches {
		st := b.State
		if st == Acquired {
			st = Available
		}
		if st == Available && b.DeliveryCount >= cfg.DeliveryLimit {
			st = Archived // its last delivery ended with its leader, as a release would
		}
		for range b.Last - b.First + 1 {
			p.recs = append(p.recs, rec{state: st, count: b.DeliveryCount})
		}
	}
	p.advance()
	p.dirty = false
	return p, nil
}

// Uninitialised reports a snapshot that only fences older leader epochs
// (StartOffset -1): the share partition has no state yet.
func (s Snapshot) Uninitialised() bool { return s.StartOffset == -1 }

// Check reports a snapshot Load cannot take (ErrCorrupt): batches not
// contiguous from StartOffset, spanning more than MaxWindow offsets, or
// of an unknown state.
func (s Snapshot) Check() error {
	if s.Uninitialised() && len(s.Batches) == 0 {
		return nil
	}
	if s.StartOffset < 0 {
		return fmt.Errorf("%w: start offset %d", ErrCorrupt, s.StartOffset)
	}
	next := s.StartOffset
	for _, b := range s.Batches {
		if b.First != next || b.Last < b.First || b.Last-s.StartOffset >= MaxWindow {
			return fmt.Errorf("%w: batch %d-%d after offset %d", ErrCorrupt, b.First, b.Last, next)
		}
		switch b.State {
		case Available, Acquired, Acknowledged, Archived:
		default:
			return fmt.Errorf("%w: state %d", ErrCorrupt, b.State)
		}
		next = b.Last + 1
	}
	return nil
}

// MaxWindow bounds the offsets a snapshot may span: the largest MaxLocks
// a node may be configured with (Kafka's bound on
// group.share.partition.max.record.locks), whatever it was when the
// snapshot was written.
const MaxWindow = 10000

// StartOffset is the share-partition start offset (SPSO).
func (p *Partition) StartOffset() int64 { return p.start }

// EndOffset is the share-partition end offset (SPEO): the next offset to
// acquire for the first time.
func (p *Partition) EndOffset() int64 { return p.start + int64(len(p.recs)) }

// StateEpoch is the epoch the partition's state was initialised with.
func (p *Partition) StateEpoch() int32 { return p.stateEpoch }

// Dirty reports a change not yet taken by Snapshot.
func (p *Partition) Dirty() bool { return p.dirty }

// InFlight counts the offsets between SPSO and SPEO that are Acquired.
func (p *Partition) InFlight() int {
	n := 0
	for _, r := range p.recs {
		if r.state == Acquired {
			n++
		}
	}
	return n
}

// Available counts the offsets between SPSO and SPEO that are Available
// (released, or back from an expired lock or a failover).
func (p *Partition) Available() int {
	n := 0
	for _, r := range p.recs {
		if r.state == Available {
			n++
		}
	}
	return n
}

// State returns offset's state and delivery count; offsets below SPSO are
// Archived or Acknowledged for good (reported Archived), offsets at or
// past SPEO Available with no delivery.
func (p *Partition) State(offset int64) (RecordState, int16) {
	switch {
	case offset < p.start:
		return Archived, 0
	case offset >= p.EndOffset():
		return Available, 0
	}
	r := p.recs[offset-p.start]
	return r.state, r.count
}
