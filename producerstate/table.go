package producerstate

import (
	"iter"
	"math"
	"slices"

	"github.com/minikafka/minikafka-go/record"
)

// DefaultWindow is how many batches per producer Kafka retains for
// duplicate detection; it matches the producer's limit of five in-flight
// requests.
const DefaultWindow = 5

// MaxWindow is the largest window a Table keeps; New clamps larger values.
const MaxWindow = math.MaxUint16

// Batch is one retained batch of a producer.
type Batch struct {
	FirstSeq, LastSeq int32
	BaseOffset        int64
	Count             int32 // offsets the batch occupies (lastOffsetDelta+1)
}

// Entry is one producer's state.
type Entry struct {
	ProducerID int64
	Epoch      int16
	Batches    []Batch // oldest first, at most the window
	// LastTimestamp is the MaxTimestamp of the producer's last recorded
	// batch or marker (Kafka's lastTimestamp), which Expire compares with
	// the leader's clock; -1 when unknown (a table decoded from format 1).
	LastTimestamp int64
	// TxnFirstOffset is the offset of the first batch of the producer's
	// open transaction on this partition, or -1 when none is open.
	TxnFirstOffset int64
	// CoordinatorEpoch is the coordinator epoch of the last marker
	// recorded for the producer, or -1 before any.
	CoordinatorEpoch int32
}

// entry is the stored form of Entry. Its batches' sequences are
// contiguous when the caller keeps Record's contract; batches is empty only
// after a marker with a new epoch (RecordMarker).
type entry struct {
	epoch      int16
	batches    []Batch // oldest first, 0..window
	lastTS     int64
	txnFirst   int64 // first offset of the open transaction, or -1
	coordEpoch int32 // of the last marker, or -1
}

// Table is the producer state of one partition. The zero value is not
// usable; call New, Decode or Rebuild. A Table is not safe for concurrent
// use: its owner (the partition FSM) serialises every call.
type Table struct {
	window    int
	producers map[int64]*entry // by producer id; never iterated in an order that leaks out
	// limit bounds len(producers) (SetLimit); 0 is no bound.
	limit int
	// untimed is set on a table decoded from format 1, whose entries have
	// no LastTimestamp (see Timed).
	untimed bool
	// ongoing is the open transactions, oldest first: derived from the
	// entries' txnFirst, kept sorted because a transaction opens at the
	// log end, after every open one.
	ongoing []OngoingTxn
	// aborted is the aborted transactions index, in the order their
	// markers were written. Its elements are never changed in place: a
	// slice of it handed out by AbortedTxns stays valid.
	aborted []AbortedTxn
}

// New returns an empty table retaining window batches per producer.
// window <= 0 means DefaultWindow; a window above MaxWindow is clamped.
func New(window int) *Table {
	switch {
	case window <= 0:
		window = DefaultWindow
	case window > MaxWindow:
		window = MaxWindow
	}
	return &Table{window: window, producers: make(map[int64]*entry)}
}

// Rebuild replays stored batch headers, in log order, into a new table
// with the given window (see New). Every header is passed to Record, so
// the headers must be those of batches that were appended, each with its
// assigned BaseOffset, as a log holds them. A transaction marker's type is
// in its record, not its header: Record ignores control batches, so a log
// with markers is replayed with Record and RecordMarker in log order (as
// the partition FSM does).
func Rebuild(window int, headers iter.Seq[record.Header]) *Table {
	t := New(window)
	for h := range headers {
		t.Record(h)
	}
	return t
}

// Window is the number of batches retained per producer.
func (t *Table) Window() int { return t.window }

// Len is the number of producers in the table.
func (t *Table) Len() int { return len(t.producers) }

// SetLimit bounds the number of producers: a new producer's first batch
// gets the verdict TableFull while the table holds n. n <= 0 removes the
// bound. Like the window it decides verdicts, so every replica of a
// partition must use the same limit.
func (t *Table) SetLimit(n int) { t.limit = max(n, 0) }

// Timed reports whether every entry carries its LastTimestamp. A table
// decoded from format 1 does not; its owner rebuilds it from the log
// before relying on Expire.
func (t *Table) Timed() bool { return !t.untimed }

// Expire removes every producer whose LastTimestamp is below now - ttl
// (Kafka's producer.id.expiration.ms), and returns how many went. now is
// the leader's clock, carried in the command that asks for it, so every
// replica removes the same producers. ttl <= 0 removes nothing.
func (t *Table) Expire(now, ttl int64) int {
	if ttl <= 0 || now < math.MinInt64+ttl {
		return 0
	}
	n := 0
	for pid, e := range t.producers {
		// Kafka keeps a producer with an open transaction.
		if e.lastTS < now-ttl && e.txnFirst < 0 {
			delete(t.producers, pid)
			n++
		}
	}
	return n
}

// sequenceRange returns the first and last sequence of an idempotent
// batch, and false if the range is malformed: a negative base sequence,
// a negative last offset delta, or a count that does not fit an int32.
func sequenceRange(h record.Header) (first, last int32, ok bool) {
	if h.BaseSequence < 0 || h.LastOffsetDelta < 0 || h.LastOffsetDelta == math.MaxInt32 {
		return 0, 0, false
	}
	return h.BaseSequence, record.AddSequence(h.BaseSequence, h.LastOffsetDelta), true
}

// Validate decides what to do with a batch; it does not change the table.
// The rules are in the package documentation.
func (t *Table) Validate(h record.Header) Result {
	if !h.Idempotent() || h.IsControl() {
		return Result{Verdict: Append}
	}
	e := t.producers[h.ProducerID]
	if h.ProducerEpoch < 0 || (e != nil && h.ProducerEpoch < e.epoch) {
		r := Result{Verdict: Fenced, Epoch: record.NoProducerEpoch}
		if e != nil {
			r.Epoch = e.epoch
		}
		return r
	}
	if e == nil && t.limit > 0 && len(t.producers) >= t.limit {
		return Result{Verdict: TableFull}
	}
	sameEpoch := e != nil && h.ProducerEpoch == e.epoch
	var expected int32 // an unknown producer, a new epoch or an empty window starts at 0
	if sameEpoch && len(e.batches) > 0 {
		expected = record.NextSequence(e.batches[len(e.batches)-1].LastSeq)
	}
	first, last, ok := sequenceRange(h)
	if !ok {
		return Result{Verdict: OutOfOrder, Expected: expected}
	}
	if sameEpoch {
		for _, b := range e.batches {
			if b.FirstSeq == first && b.LastSeq == last {
				return Result{Verdict: Duplicate, Original: b}
			}
		}
	}
	if first != expected {
		return Result{Verdict: OutOfOrder, Expected: expected}
	}
	if e != nil && e.txnFirst >= 0 && !h.IsTransactional() {
		return Result{Verdict: TxnStateInvalid}
	}
	return Result{Verdict: Append}
}

// Record adds an appended batch to its producer's window; h.BaseOffset must
// be the offset the batch was given. Call it only after Validate returned
// Append for h: Record does not check sequences. A batch with an epoch
// other than the recorded one starts a fresh window under that epoch.
// Record ignores what carries no producer sequence (no producer id, a
// control batch) and what Validate never accepts (a negative epoch, a
// malformed sequence range).
func (t *Table) Record(h record.Header) {
	if !h.Idempotent() || h.ProducerEpoch < 0 || h.IsControl() {
		return
	}
	first, last, ok := sequenceRange(h)
	if !ok {
		return
	}
	b := Batch{FirstSeq: first, LastSeq: last, BaseOffset: h.BaseOffset, Count: h.LastOffsetDelta + 1}
	e := t.producers[h.ProducerID]
	switch {
	case e == nil:
		batches := make([]Batch, 1, min(t.window, DefaultWindow))
		batches[0] = b
		e = &entry{epoch: h.ProducerEpoch, batches: batches, lastTS: h.MaxTimestamp, txnFirst: -1, coordEpoch: -1}
		t.producers[h.ProducerID] = e
		t.maybeBegin(h, e)
		return
	case e.epoch != h.ProducerEpoch:
		e.epoch = h.ProducerEpoch
		e.batches = e.batches[:0]
	}
	t.maybeBegin(h, e)
	e.lastTS = h.MaxTimestamp
	if len(e.batches) < t.window {
		e.batches = append(e.batches, b)
		return
	}
	// Full: drop the oldest in place so a steady producer never allocates.
	copy(e.batches, e.batches[1:])
	e.batches[len(e.batches)-1] = b
}

// Lookup returns a copy of a producer's state.
func (t *Table) Lookup(pid int64) (Entry, bool) {
	e, ok := t.producers[pid]
	if !ok {
		return Entry{}, false
	}
	return e.export(pid), true
}

func (e *entry) export(pid int64) Entry {
	return Entry{ProducerID: pid, Epoch: e.epoch, Batches: slices.Clone(e.batches), LastTimestamp: e.lastTS,
		TxnFirstOffset: e.txnFirst, CoordinatorEpoch: e.coordEpoch}
}

// ids returns the producer ids in ascending order.
func (t *Table) ids() []int64 {
	ids := make([]int64, 0, len(t.producers))
	for pid := range t.producers {
		ids = append(ids, pid)
	}
	slices.Sort(ids)
	return ids
}

// All yields a copy of every producer's state in ascending producer id
// order (for DescribeProducers, debugging and tests).
func (t *Table) All() iter.Seq[Entry] {
	return func(yield func(Entry) bool) {
		for _, pid := range t.ids() {
			if !yield(t.producers[pid].export(pid)) {
				return
			}
		}
	}
}

// Clone returns a deep copy that shares nothing with t.
func (t *Table) Clone() *Table {
	c := &Table{window: t.window, producers: make(map[int64]*entry, len(t.producers)), limit: t.limit, untimed: t.untimed,
		ongoing: slices.Clone(t.ongoing), aborted: t.aborted[:len(t.aborted):len(t.aborted)]}
	for pid, e := range t.producers {
		c.producers[pid] = &entry{epoch: e.epoch, batches: slices.Clone(e.batches), lastTS: e.lastTS,
			txnFirst: e.txnFirst, coordEpoch: e.coordEpoch}
	}
	return c
}

// Equal reports whether two tables hold the same window and the same
// state for every producer, so that they decide every batch alike.
func (t *Table) Equal(o *Table) bool {
	if t.window != o.window || len(t.producers) != len(o.producers) ||
		!slices.Equal(t.ongoing, o.ongoing) || !slices.Equal(t.aborted, o.aborted) {
		return false
	}
	for pid, e := range t.producers {
		f, ok := o.producers[pid]
		if !ok || e.epoch != f.epoch || e.lastTS != f.lastTS || !slices.Equal(e.batches, f.batches) ||
			e.txnFirst != f.txnFirst || e.coordEpoch != f.coordEpoch {
			return false
		}
	}
	return true
}
