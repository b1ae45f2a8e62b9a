package producerstate

import (
	"cmp"
	"slices"
	"sort"

	"github.com/minikafka/minikafka-go/record"
)

// OngoingTxn is a transaction open on the partition: a transactional batch
// of the producer was recorded and no marker has ended it yet.
type OngoingTxn struct {
	ProducerID  int64
	FirstOffset int64 // offset of its first batch on the partition
}

// AbortedTxn is one entry of the aborted transactions index: producer
// ProducerID's transaction from FirstOffset (its first batch) to
// LastOffset (its ABORT marker). A read_committed consumer skips the
// producer's transactional records in that range.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// Marker is a transaction marker as RecordMarker takes it.
type Marker struct {
	ProducerID       int64
	Epoch            int16
	Commit           bool // COMMIT, else ABORT
	CoordinatorEpoch int32
	Offset           int64 // the marker's offset in the log
	Timestamp        int64 // the marker's timestamp (the leader's clock)
}

// maybeBegin opens e's transaction at h when h is transactional and none
// is open (Kafka's appendDataBatch); a later transactional batch continues
// it.
func (t *Table) maybeBegin(h record.Header, e *entry) {
	if h.IsTransactional() && e.txnFirst < 0 {
		e.txnFirst = h.BaseOffset
		t.ongoing = append(t.ongoing, OngoingTxn{ProducerID: h.ProducerID, FirstOffset: h.BaseOffset})
	}
}

// ValidateMarker decides whether a marker of producer pid with the given
// producer and coordinator epochs may be written (Kafka's
// appendEndTxnMarker checks): an epoch below the recorded one, or a
// negative one, is Fenced; a coordinator epoch below the last marker's is
// CoordinatorFenced (an unknown producer's is -1, so one below that
// always is); anything else is Append, with or without an open
// transaction (a marker that ends nothing is still written, as Kafka
// does). It does not change the table.
func (t *Table) ValidateMarker(pid int64, epoch int16, coordinatorEpoch int32) Result {
	e := t.producers[pid]
	if epoch < 0 || (e != nil && epoch < e.epoch) {
		r := Result{Verdict: Fenced, Epoch: record.NoProducerEpoch}
		if e != nil {
			r.Epoch = e.epoch
		}
		return r
	}
	last := int32(-1) // an unknown producer's, as Kafka's new entry
	if e != nil {
		last = e.coordEpoch
	}
	if coordinatorEpoch < last {
		return Result{Verdict: CoordinatorFenced, CoordinatorEpoch: last}
	}
	// The table's limit is not applied: markers come from the coordinator,
	// not from clients, and the entry a marker makes fences the
	// producer's older epochs here.
	return Result{Verdict: Append}
}

// ValidateMarkerV2 is ValidateMarker for a marker of transactions v2
// (KIP-890 part 2), whose epoch is the one its EndTxn bumped: it ends the
// producer's transaction of the epoch below. A transaction open at the
// marker's own epoch is the producer's next one, begun after this
// marker was first written, and a late copy of the marker must not end
// it: Fenced, as Kafka refuses a v2 marker whose epoch is not above the
// producer's. A copy with no transaction open ends nothing and is
// written like any marker.
func (t *Table) ValidateMarkerV2(pid int64, epoch int16, coordinatorEpoch int32) Result {
	if e := t.producers[pid]; e != nil && epoch == e.epoch && e.txnFirst >= 0 {
		return Result{Verdict: Fenced, Epoch: e.epoch}
	}
	return t.ValidateMarker(pid, epoch, coordinatorEpoch)
}

// RecordMarker records a written marker (after ValidateMarker returned
// Append, or from the log): it ends the producer's open transaction, adds
// it to the aborted index if m aborts it, and takes m's epoch (a new one
// empties the batch window, so the next batch starts at sequence 0) and
// coordinator epoch. It reports whether a transaction ended. An unknown
// producer gets an entry with no batches. A marker without a producer id
// (negative, as Kafka's hasProducerId) changes nothing, nor does one
// ValidateMarker never accepts (a negative epoch, a coordinator epoch
// below -1), which only an older node's log can hold: the table stays
// one that Decode reads back.
func (t *Table) RecordMarker(m Marker) bool {
	if m.ProducerID < 0 || m.Epoch < 0 || m.CoordinatorEpoch < -1 {
		return false
	}
	e := t.producers[m.ProducerID]
	if e == nil {
		e = &entry{epoch: m.Epoch, txnFirst: -1}
		t.producers[m.ProducerID] = e
	}
	if e.epoch != m.Epoch {
		e.epoch = m.Epoch
		e.batches = e.batches[:0]
	}
	e.coordEpoch, e.lastTS = m.CoordinatorEpoch, m.Timestamp
	if e.txnFirst < 0 {
		return false
	}
	if !m.Commit {
		t.aborted = append(t.aborted, AbortedTxn{ProducerID: m.ProducerID, FirstOffset: e.txnFirst, LastOffset: m.Offset})
	}
	if i := slices.IndexFunc(t.ongoing, func(o OngoingTxn) bool { return o.ProducerID == m.ProducerID }); i >= 0 {
		t.ongoing = slices.Delete(t.ongoing, i, i+1)
	}
	e.txnFirst = -1
	return true
}

// FirstUnstableOffset is the first offset of the oldest open transaction;
// ok is false when none is open. The last stable offset is the smaller of
// it and the high watermark.
func (t *Table) FirstUnstableOffset() (offset int64, ok bool) {
	if len(t.ongoing) == 0 {
		return 0, false
	}
	return t.ongoing[0].FirstOffset, true
}

// Ongoing returns the open transactions, oldest first.
func (t *Table) Ongoing() []OngoingTxn { return slices.Clone(t.ongoing) }

// AbortedTxns returns the aborted transactions index in marker order. The
// table never changes the returned elements: the slice may be read by
// other goroutines while the table goes on.
func (t *Table) AbortedTxns() []AbortedTxn { return t.aborted[:len(t.aborted):len(t.aborted)] }

// TrimAborted drops the aborted transactions whose marker lies below start
// (the new log start offset): no fetch can return their records any more.
func (t *Table) TrimAborted(start int64) {
	i := sort.Search(len(t.aborted), func(i int) bool { return t.aborted[i].LastOffset >= start })
	if i > 0 {
		t.aborted = slices.Clone(t.aborted[i:])
	}
}

// AbortedIn returns the aborted transactions of index that a fetch of the
// offsets [from, to) must report: those whose range overlaps it (marker at
// or after from, first batch before to), in index order. index is a slice
// AbortedTxns returned.
func AbortedIn(index []AbortedTxn, from, to int64) []AbortedTxn {
	i := sort.Search(len(index), func(i int) bool { return index[i].LastOffset >= from })
	var out []AbortedTxn
	for _, a := range index[i:] {
		if a.FirstOffset < to {
			out = append(out, a)
		}
	}
	return out
}

// rebuildOngoing derives ongoing from the entries, oldest first.
func (t *Table) rebuildOngoing() {
	t.ongoing = t.ongoing[:0]
	for pid, e := range t.producers {
		if e.txnFirst >= 0 {
			t.ongoing = append(t.ongoing, OngoingTxn{ProducerID: pid, FirstOffset: e.txnFirst})
		}
	}
	slices.SortFunc(t.ongoing, func(a, b OngoingTxn) int {
		if a.FirstOffset != b.FirstOffset {
			return cmp.Compare(a.FirstOffset, b.FirstOffset)
		}
		return cmp.Compare(a.ProducerID, b.ProducerID)
	})
}
