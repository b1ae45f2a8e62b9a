package e2e

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// ID names one record a workload sent: the producer that sent it, its key
// and its sequence number among that producer's records with that key.
// It is carried in the record's value, so that a record read back can be
// matched with its attempt.
type ID struct {
	Producer int
	Key      string
	Seq      int64
}

func (id ID) String() string { return fmt.Sprintf("p%d/%s/%d", id.Producer, id.Key, id.Seq) }

// valuePrefix starts every value a workload writes.
const valuePrefix = "e2e|"

// Value encodes id as a record value: "e2e|<producer>|<key>|<seq>|"
// followed by pad bytes of filler. Keys must not contain '|'.
func (id ID) Value(pad int) []byte {
	b := fmt.Appendf(nil, "%s%d|%s|%d|", valuePrefix, id.Producer, id.Key, id.Seq)
	return append(b, bytes.Repeat([]byte{'.'}, pad)...)
}

// ParseValue decodes a value written by ID.Value. ok is false for any
// other value.
func ParseValue(v []byte) (id ID, ok bool) {
	rest, found := bytes.CutPrefix(v, []byte(valuePrefix))
	if !found {
		return ID{}, false
	}
	parts := bytes.SplitN(rest, []byte{'|'}, 4)
	if len(parts) != 4 || len(parts[1]) == 0 {
		return ID{}, false
	}
	p, err := strconv.Atoi(string(parts[0]))
	if err != nil {
		return ID{}, false
	}
	s, err := strconv.ParseInt(string(parts[2]), 10, 64)
	if err != nil {
		return ID{}, false
	}
	return ID{Producer: p, Key: string(parts[1]), Seq: s}, true
}

// Outcome is what a producer learned about one record.
type Outcome uint8

const (
	// Pending: produced, no result yet. At the end of a run it means the
	// same as Unknown.
	Pending Outcome = iota
	// Acked: the cluster acknowledged the record at Attempt.Offset (-1 if
	// the broker did not say where, as for a duplicate it no longer
	// places). It must be present exactly once, there.
	Acked
	// Unknown: the record failed with an error after it may have been sent
	// (a timeout, a lost connection): it may be present, at most once.
	Unknown
	// NotSent: Produce refused the record; it must not be present.
	NotSent
)

func (o Outcome) String() string {
	switch o {
	case Pending:
		return "pending"
	case Acked:
		return "acked"
	case Unknown:
		return "unknown"
	case NotSent:
		return "not-sent"
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// Attempt is one record a producer tried to write, and what became of it.
type Attempt struct {
	ID        ID
	Topic     string
	Partition int32 // where the producer placed it; -1 if it never did
	Outcome   Outcome
	Offset    int64 // Acked only; -1 if unknown
	Err       error // Unknown and NotSent: the error the producer gave
	Sent      time.Time
	Done      time.Time // when the outcome arrived; zero while Pending
}

// History records attempts from many goroutines. The zero value is ready
// to use.
type History struct {
	mu       sync.Mutex // guards attempts
	attempts []Attempt
}

// Begin records a new attempt, Pending and not yet placed, sent now, and
// returns its handle for Place, Ack and Fail. Call it before handing the
// record to a producer, so that an acknowledgement can never come first.
func (h *History) Begin(id ID, topic string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.attempts = append(h.attempts, Attempt{ID: id, Topic: topic, Partition: -1, Offset: -1, Sent: time.Now()})
	return len(h.attempts) - 1
}

// Place records the partition the producer chose for attempt i.
func (h *History) Place(i int, partition int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.attempts[i].Partition = partition
}

// Ack records that attempt i was acknowledged at partition and offset.
func (h *History) Ack(i int, partition int32, offset int64, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := &h.attempts[i]
	a.Outcome, a.Partition, a.Offset, a.Done = Acked, partition, offset, at
}

// Fail records that attempt i ended with err: Unknown, or NotSent when
// the producer never took the record.
func (h *History) Fail(i int, o Outcome, err error, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := &h.attempts[i]
	a.Outcome, a.Err, a.Done = o, err, at
}

// Attempts returns a copy of every attempt, in the order they began.
func (h *History) Attempts() []Attempt {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Attempt(nil), h.attempts...)
}

// AckedSince counts the attempts on topic/partition produced at or after
// since and acknowledged (partition < 0: any partition).
func (h *History) AckedSince(topic string, partition int32, since time.Time) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for i := range h.attempts {
		a := &h.attempts[i]
		if a.Outcome == Acked && !a.Sent.Before(since) && a.Topic == topic && (partition < 0 || a.Partition == partition) {
			n++
		}
	}
	return n
}

// FailoverTime is the time from a fault at t0 to the first acknowledgement
// on topic/partition of a record produced at or after t0: such a record
// cannot have been answered by a leader that died at t0. ok is false if
// there is none.
func FailoverTime(attempts []Attempt, topic string, partition int32, t0 time.Time) (d time.Duration, ok bool) {
	for _, a := range attempts {
		if a.Outcome != Acked || a.Topic != topic || a.Partition != partition || a.Sent.Before(t0) {
			continue
		}
		if dd := a.Done.Sub(t0); !ok || dd < d {
			d, ok = dd, true
		}
	}
	return d, ok
}

// Add records a finished attempt made outside a workload, such as a
// hand-built produce request.
func (h *History) Add(a Attempt) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.attempts = append(h.attempts, a)
}
