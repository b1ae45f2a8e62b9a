package e2e

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// GroupEventKind is the kind of a GroupEvent.
type GroupEventKind uint8

const (
	// EvAssigned: partitions were assigned to a member (its
	// OnPartitionsAssigned callback, which runs before the member fetches
	// their committed offsets).
	EvAssigned GroupEventKind = iota
	// EvRevoked: partitions were taken from a member in a rebalance.
	EvRevoked
	// EvLost: a member lost partitions on a fatal group error.
	EvLost
	// EvDelivered: a member received one record.
	EvDelivered
	// EvCommitted: the coordinator acknowledged a member's commit of one
	// partition's offset (the next offset to read).
	EvCommitted
	// EvObserved: an OffsetFetch of the group's committed offsets, sent
	// when the history held AsOf events.
	EvObserved
)

func (k GroupEventKind) String() string {
	switch k {
	case EvAssigned:
		return "assigned"
	case EvRevoked:
		return "revoked"
	case EvLost:
		return "lost"
	case EvDelivered:
		return "delivered"
	case EvCommitted:
		return "committed"
	case EvObserved:
		return "observed"
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// GroupEvent is one thing that happened to a consumer group, as its
// members and the test saw it.
type GroupEvent struct {
	Seq  int // position in the history: the events' total order
	Kind GroupEventKind
	// Round is the generation of consumers of the test that the member
	// belongs to: 0 for the first members, 1 for those started after all
	// of round 0 closed, and so on. Observed: the round running then, or
	// the one about to start.
	Round  int
	Member string // "" for Observed
	// Generation is the group generation the member was in
	// (Assigned, Revoked, Lost).
	Generation int32
	Partitions []int32         // Assigned, Revoked, Lost
	Partition  int32           // Delivered, Committed
	Offset     int64           // Delivered: the record's; Committed: the offset committed
	Value      []byte          // Delivered
	AsOf       int             // Observed: the number of events when the OffsetFetch was sent
	Offsets    map[int32]int64 // Observed: the committed offset by partition; absent if none
	Time       time.Time
	Sent       time.Time // Committed: when the commit was sent
}

func (e GroupEvent) String() string {
	s := fmt.Sprintf("#%d %s r%d", e.Seq, e.Kind, e.Round)
	if e.Member != "" {
		s += " " + e.Member
	}
	switch e.Kind {
	case EvAssigned, EvRevoked, EvLost:
		s += fmt.Sprintf(" gen %d %v", e.Generation, e.Partitions)
	case EvDelivered, EvCommitted:
		s += fmt.Sprintf(" [%d]@%d", e.Partition, e.Offset)
	case EvObserved:
		s += fmt.Sprintf(" as of #%d %v", e.AsOf, e.Offsets)
	}
	return s
}

// GroupHistory records a consumer group's events from many goroutines, in
// one total order. The zero value is ready to use.
type GroupHistory struct {
	mu     sync.Mutex // guards events
	events []GroupEvent
}

// add appends e, numbering it, and returns its Seq.
func (h *GroupHistory) add(e GroupEvent) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	e.Seq = len(h.events)
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	h.events = append(h.events, e)
	return e.Seq
}

// Assigned records partitions assigned to member. Record it when the
// assignment callback starts, before the member fetches offsets.
func (h *GroupHistory) Assigned(round int, member string, gen int32, ps []int32) {
	h.add(GroupEvent{Kind: EvAssigned, Round: round, Member: member, Generation: gen, Partitions: slices.Sorted(slices.Values(ps))})
}

// Revoked records partitions taken from member.
func (h *GroupHistory) Revoked(round int, member string, gen int32, ps []int32) {
	h.add(GroupEvent{Kind: EvRevoked, Round: round, Member: member, Generation: gen, Partitions: slices.Sorted(slices.Values(ps))})
}

// Lost records partitions member lost on a fatal group error.
func (h *GroupHistory) Lost(round int, member string, gen int32, ps []int32) {
	h.add(GroupEvent{Kind: EvLost, Round: round, Member: member, Generation: gen, Partitions: slices.Sorted(slices.Values(ps))})
}

// Delivered records one record member received.
func (h *GroupHistory) Delivered(round int, member string, partition int32, offset int64, value []byte) {
	h.add(GroupEvent{Kind: EvDelivered, Round: round, Member: member, Partition: partition, Offset: offset, Value: slices.Clone(value)})
}

// Committed records an acknowledged commit of offset on partition by
// member, sent at sent. Record it only once the coordinator answered
// without error.
func (h *GroupHistory) Committed(round int, member string, partition int32, offset int64, sent time.Time) {
	h.add(GroupEvent{Kind: EvCommitted, Round: round, Member: member, Partition: partition, Offset: offset, Sent: sent})
}

// Len is the number of events so far: the AsOf of an OffsetFetch about to
// be sent.
func (h *GroupHistory) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.events)
}

// Observed records the answer of an OffsetFetch sent when the history held
// asOf events (Len before sending it).
func (h *GroupHistory) Observed(round, asOf int, offsets map[int32]int64) {
	h.add(GroupEvent{Kind: EvObserved, Round: round, AsOf: asOf, Offsets: maps.Clone(offsets)})
}

// Events returns a copy of every event, in order.
func (h *GroupHistory) Events() []GroupEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

// Progress returns, by partition, the last offset committed (acknowledged)
// and the highest offset delivered plus one, and how many distinct
// workload records were delivered; for waiting until members caught up.
func (h *GroupHistory) Progress() (committed, delivered map[int32]int64, ids map[ID]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	committed, delivered, ids = map[int32]int64{}, map[int32]int64{}, map[ID]bool{}
	for _, e := range h.events {
		switch e.Kind {
		case EvCommitted:
			committed[e.Partition] = max(committed[e.Partition], e.Offset)
		case EvDelivered:
			delivered[e.Partition] = max(delivered[e.Partition], e.Offset+1)
			if id, ok := ParseValue(e.Value); ok {
				ids[id] = true
			}
		}
	}
	return committed, delivered, ids
}

// CommittedSince reports whether every partition in ps has a commit
// acknowledged at or after t.
func (h *GroupHistory) CommittedSince(ps []int32, t time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[int32]bool{}
	for _, e := range h.events {
		if e.Kind == EvCommitted && !e.Time.Before(t) {
			seen[e.Partition] = true
		}
	}
	for _, p := range ps {
		if !seen[p] {
			return false
		}
	}
	return true
}

// FirstCommitAfter is the time from t to the first acknowledgement of a
// commit sent at or after t (one a coordinator that died at t cannot have
// answered); ok is false if there is none.
func (h *GroupHistory) FirstCommitAfter(t time.Time) (d time.Duration, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.events {
		if e.Kind == EvCommitted && !e.Sent.Before(t) {
			return e.Time.Sub(t), true
		}
	}
	return 0, false
}
