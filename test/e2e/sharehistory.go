package e2e

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// ShareEventKind is the kind of a ShareEvent.
type ShareEventKind uint8

const (
	// ShareDelivered: a poll gave the member a record, with the delivery
	// count the broker reported.
	ShareDelivered ShareEventKind = iota
	// ShareAcked: the member acknowledged a record it was delivered
	// (accept or release), with the outcome the client reported.
	ShareAcked
)

// ShareAckType is what a member answered for a record: Kafka's
// acknowledge types accept (1) and release (2).
type ShareAckType int8

// The acknowledge types the share members use.
const (
	ShareAccept  ShareAckType = 1
	ShareRelease ShareAckType = 2
)

func (a ShareAckType) String() string {
	switch a {
	case ShareAccept:
		return "accept"
	case ShareRelease:
		return "release"
	}
	return fmt.Sprintf("ack(%d)", int8(a))
}

// AckOutcome is what the client reported about an acknowledgement.
type AckOutcome uint8

const (
	// AckOK: the broker answered the partition's acknowledgements without
	// error: they were applied (all or none per partition).
	AckOK AckOutcome = iota
	// AckFailed: an error was reported for the partition (by the broker,
	// or by the client for a lost connection or a moved partition). It may
	// or may not have been applied.
	AckFailed
	// AckUnknown: no result came back in time.
	AckUnknown
)

func (o AckOutcome) String() string {
	switch o {
	case AckOK:
		return "ok"
	case AckFailed:
		return "failed"
	case AckUnknown:
		return "unknown"
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// ShareEvent is one delivery or acknowledgement of a share member.
type ShareEvent struct {
	Kind      ShareEventKind
	Member    string
	Partition int32
	Offset    int64
	ID        ID   // parsed from the value (ShareDelivered)
	IDOK      bool // the value was a workload value
	Count     int32
	Ack       ShareAckType // ShareAcked
	Outcome   AckOutcome   // ShareAcked
	Err       string       // ShareAcked, not AckOK: the error reported
	At        time.Time
}

func (e ShareEvent) String() string {
	at := e.At.Format("15:04:05.000")
	if e.Kind == ShareDelivered {
		return fmt.Sprintf("%s %s delivered [%d]@%d %v count %d", at, e.Member, e.Partition, e.Offset, e.ID, e.Count)
	}
	s := fmt.Sprintf("%s %s %v [%d]@%d count %d: %v", at, e.Member, e.Ack, e.Partition, e.Offset, e.Count, e.Outcome)
	if e.Err != "" {
		s += " (" + e.Err + ")"
	}
	return s
}

// ShareHistory records share members' events from many goroutines, in the
// order they happened in the test process. The zero value is ready.
type ShareHistory struct {
	mu     sync.Mutex // guards events
	events []ShareEvent
}

// Add appends events.
func (h *ShareHistory) Add(es ...ShareEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, es...)
}

// Events returns a copy of the events so far.
func (h *ShareHistory) Events() []ShareEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

// FirstAcceptAfter returns the time from t to the first successful accept
// of a record delivered after t on one of ps (nil: any partition).
func (h *ShareHistory) FirstAcceptAfter(ps []int32, t time.Time) (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	type rec struct {
		p   int32
		off int64
	}
	fresh := map[rec]bool{}
	for _, e := range h.events {
		if e.At.Before(t) || (ps != nil && !slices.Contains(ps, e.Partition)) {
			continue
		}
		k := rec{e.Partition, e.Offset}
		switch {
		case e.Kind == ShareDelivered:
			fresh[k] = true
		case fresh[k] && e.Ack == ShareAccept && e.Outcome == AckOK:
			return e.At.Sub(t), true
		}
	}
	return 0, false
}

// AcceptedOn reports whether every partition of ps has a successful
// accept, of a record delivered after t.
func (h *ShareHistory) AcceptedOn(ps []int32, t time.Time) bool {
	for _, p := range ps {
		if _, ok := h.FirstAcceptAfter([]int32{p}, t); !ok {
			return false
		}
	}
	return true
}
