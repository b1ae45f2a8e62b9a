// Package compact is the log cleaner's rewrite of batches for
// cleanup.policy=compact (issue 30), as a pure function of the bytes and
// the parameters of one cleaning, so that every replica that cleans the
// same log with the same Params writes the same bytes.
//
// Kafka's rules, applied to the batches below the cleaning's end:
//   - of the records with one key, only the one at the highest offset is
//     kept (Map, built over the same batches);
//   - a tombstone (null value) is kept until the cleaning that first
//     reached it is delete.retention.ms old: that cleaning sets its
//     batch's delete horizon (KIP-534, record.FilterOptions) to its
//     Params.NowMs plus Params.DeleteRetentionMs, and a cleaning at or
//     past the horizon removes it. NowMs is the leader's clock, proposed
//     through Raft with the cleaning;
//   - the data batches of aborted transactions go;
//   - records without a key are kept (a compacted topic refuses them at
//     produce; ones written before the policy changed are not lost);
//   - a transaction marker stays while any record of its transaction
//     does (the producer's records since its previous marker); once none
//     does it is given a delete horizon as a tombstone is, and removed by a
//     cleaning past it (Kafka's rule: a consumer that read the
//     transaction's records has met the marker by then);
//   - a batch left with no record is dropped, unless it is its producer's
//     last (Params.KeepEmpty): then it stays, empty, spanning its offsets,
//     so that an idempotent producer's sequence survives (record.Filter).
//
// A cleaning may map only the dirty part of what it cleans (Params.
// DirtyFrom), as Kafka's does: below it the log must be clean already (no
// key twice, as an earlier cleaning left it), and a record there goes
// only if the map holds its key at a later offset. The result is then
// the bytes a map of the whole range gives. The map is bounded
// (Params.MapBytes): a cleaning whose dirty part holds more keys stops
// mapping at a batch's end and cleans only that far (Result.Reached).
//
// Offsets never change: a batch keeps its base offset and last offset
// delta, so the log's start and end and every later offset stay put.
// CleanAll puts one batch of no records (record.AppendGap) where a run of
// batches went, so that the log stays one contiguous run of offsets (the
// segment log checks that) and a reader asked for a removed offset moves
// on; a run of such gaps is merged into one, so a log cleaned again and
// again holds at most one gap per kept batch.
package compact

import (
	"bytes"
	"iter"
	"math"
	"sort"

	"github.com/minikafka/minikafka-go/producerstate"
	"github.com/minikafka/minikafka-go/record"
)

// Map is each key's latest offset over the batches a cleaning maps.
type Map map[string]int64

// MapEntryBytes is what a Map entry is counted to cost besides its key's
// bytes (Params.MapBytes): a Go map slot of a string and an int64 at the
// map's load, and the key's allocation.
const MapEntryBytes = 64

// Params are one cleaning's inputs besides the bytes.
type Params struct {
	// NowMs is the cleaning's time (the leader's clock, from Raft).
	NowMs int64
	// DeleteRetentionMs is the topic's delete.retention.ms.
	DeleteRetentionMs int64
	// Aborted is the partition's aborted transactions index, in marker
	// order (producerstate.Table.AbortedTxns).
	Aborted []producerstate.AbortedTxn
	// KeepEmpty reports whether a batch whose records all go must stay,
	// empty: it is its producer's last. Nil keeps none.
	KeepEmpty func(record.Header) bool
	// DirtyFrom is where the map begins: the batches ending at or below
	// it are clean already (no key twice) and are not mapped. 0 maps all.
	DirtyFrom int64
	// MapBytes bounds the map (its keys' bytes plus MapEntryBytes each):
	// mapping stops after the batch that takes it past, and the cleaning
	// ends there. 0 is no bound.
	MapBytes int64
}

// aborted reports whether the transactional data batch h belongs to an
// aborted transaction: one of its producer whose range holds it.
func (p *Params) aborted(h record.Header) bool {
	if !h.IsTransactional() || h.IsControl() {
		return false
	}
	i := sort.Search(len(p.Aborted), func(i int) bool { return p.Aborted[i].LastOffset > h.BaseOffset })
	for _, a := range p.Aborted[i:] {
		if a.ProducerID == h.ProducerID && a.FirstOffset <= h.BaseOffset {
			return true
		}
	}
	return false
}

// Stats count what a cleaning did.
type Stats struct {
	BatchesIn, BatchesOut int
	RecordsIn, RecordsOut int
	BytesIn, BytesOut     int64
	TombstonesRemoved     int
	AbortedRemoved        int // records of aborted transactions
	MarkersRemoved        int // markers of transactions with no record left
	MapFull               int // cleanings the map's bound ended before their range's end
}

// Add adds o's counts to s.
func (s *Stats) Add(o Stats) {
	s.BatchesIn += o.BatchesIn
	s.BatchesOut += o.BatchesOut
	s.RecordsIn += o.RecordsIn
	s.RecordsOut += o.RecordsOut
	s.BytesIn += o.BytesIn
	s.BytesOut += o.BytesOut
	s.TombstonesRemoved += o.TombstonesRemoved
	s.AbortedRemoved += o.AbortedRemoved
	s.MarkersRemoved += o.MarkersRemoved
	s.MapFull += o.MapFull
}

// build maps each key to the offset of its latest record in the batches
// from p.DirtyFrom on, leaving out control batches and aborted
// transactions' batches. It stops after the batch that takes the map past
// p.MapBytes; reached is that batch's next offset, math.MaxInt64 when
// every batch was mapped.
func build(batches iter.Seq2[[]byte, error], p Params) (m Map, reached int64, err error) {
	m = Map{}
	var recs []record.Record
	var size int64
	for b, err := range batches {
		if err != nil {
			return nil, 0, err
		}
		h, err := record.ParseHeader(b)
		if err != nil {
			return nil, 0, err
		}
		if h.NextOffset() <= p.DirtyFrom || h.IsControl() || p.aborted(h) {
			continue
		}
		if recs, err = record.AppendRecords(recs[:0], b); err != nil {
			return nil, 0, err
		}
		for _, r := range recs {
			if r.Key == nil {
				continue
			}
			n := len(m)
			if m[string(r.Key)] = r.Offset; len(m) > n { // a new key: one lookup, not two
				size += int64(len(r.Key)) + MapEntryBytes
			}
		}
		if p.MapBytes > 0 && size > p.MapBytes {
			return m, h.NextOffset(), nil
		}
	}
	return m, math.MaxInt64, nil
}

// clean appends batch b as the cleaning leaves it to dst: unchanged, with
// fewer records, empty, or not at all. A record goes when m holds its key
// at another offset; a key m lacks is one below p.DirtyFrom, clean.
func clean(dst, b []byte, m Map, p Params) ([]byte, Stats, error) {
	h, err := record.ParseHeader(b)
	if err != nil {
		return dst, Stats{}, err
	}
	st := Stats{BatchesIn: 1, RecordsIn: int(h.NumRecords), BytesIn: int64(h.Size())}
	if h.IsControl() {
		st.BatchesOut, st.RecordsOut, st.BytesOut = 1, st.RecordsIn, st.BytesIn
		return append(dst, b[:h.Size()]...), st, nil // CleanAll decides on markers
	}
	abort := p.aborted(h)
	horizon, hasHorizon := h.DeleteHorizon()
	dropTombstones := hasHorizon && horizon <= p.NowMs
	keptTombstone := false
	keep := func(r record.Record) bool {
		switch {
		case abort:
			st.AbortedRemoved++
			return false
		case r.Key == nil:
			return true
		case !latest(m, r):
			return false
		case r.Value == nil && dropTombstones:
			st.TombstonesRemoved++
			return false
		}
		keptTombstone = keptTombstone || r.Value == nil
		return true
	}
	start := len(dst)
	out, kept, err := record.Filter(dst, b[:h.Size()], record.FilterOptions{Keep: keep, DeleteHorizon: p.NowMs + p.DeleteRetentionMs})
	if err != nil {
		return dst, Stats{}, err
	}
	switch {
	case kept == 0 && (p.KeepEmpty == nil || !p.KeepEmpty(h)):
		return out[:start], st, nil
	case kept == int(h.NumRecords) && (hasHorizon || !keptTombstone):
		// Nothing changed (no horizon set): the very bytes, so that
		// cleaning again changes nothing.
		out = append(out[:start], b[:h.Size()]...)
	}
	st.BatchesOut, st.RecordsOut, st.BytesOut = 1, kept, int64(len(out)-start)
	return out, st, nil
}

// latest reports whether r is its key's latest record: m holds its key at
// its offset, or not at all.
func latest(m Map, r record.Record) bool {
	o, ok := m[string(r.Key)]
	return !ok || o == r.Offset
}

// cleanMarker appends the marker batch b (header h) as the cleaning
// leaves it: unchanged while its transaction keeps a record (live), else
// with a delete horizon, or not at all once that horizon has passed.
func cleanMarker(dst, b []byte, h record.Header, live bool, p Params) ([]byte, Stats, error) {
	st := Stats{BatchesIn: 1, RecordsIn: int(h.NumRecords), BytesIn: int64(h.Size())}
	horizon, has := h.DeleteHorizon()
	switch {
	case !live && has && horizon <= p.NowMs:
		st.MarkersRemoved = 1
		return dst, st, nil
	case !live && !has:
		start := len(dst)
		out, kept, err := record.Filter(dst, b[:h.Size()], record.FilterOptions{Keep: func(record.Record) bool { return true },
			DeleteHorizon: p.NowMs + p.DeleteRetentionMs, HorizonAlways: true})
		if err != nil {
			return dst, Stats{}, err
		}
		st.BatchesOut, st.RecordsOut, st.BytesOut = 1, kept, int64(len(out)-start)
		return out, st, nil
	}
	st.BatchesOut, st.RecordsOut, st.BytesOut = 1, st.RecordsIn, st.BytesIn
	return append(dst, b[:h.Size()]...), st, nil
}

// CleanAll cleans every batch of batches in order, building the Map over
// them first (batches is walked twice), and appends the result to dst,
// with a gap for each run of batches that went.
func CleanAll(dst []byte, batches iter.Seq2[[]byte, error], p Params) ([]byte, Stats, error) {
	res, err := CleanTo(batches, p, nil, func(b []byte) error { dst = append(dst, b...); return nil })
	return dst, res.Stats, err
}

// Result is what a CleanTo did.
type Result struct {
	Stats
	// Changed reports whether the output differs from the input.
	Changed bool
	// Reached is where the cleaning ended, as Params.MapBytes bounds it:
	// the batches from it on passed unchanged. math.MaxInt64 when none
	// was left.
	Reached int64
}

// CleanTo is CleanAll handing the result to emit one batch at a time
// (valid only during the call), so that its memory is the Map and a batch
// whatever the log's size. The batches keep reports pass unchanged and
// count neither in the Map nor in the Stats (nil: none).
func CleanTo(batches iter.Seq2[[]byte, error], p Params, keep func(record.Header) bool,
	emit func([]byte) error) (Result, error) {
	kept := func(h record.Header) bool { return keep != nil && keep(h) }
	cleaned := func(yield func([]byte, error) bool) {
		for b, err := range batches {
			if err == nil {
				if h, herr := record.ParseHeader(b); herr == nil && kept(h) {
					continue
				}
			}
			if !yield(b, err) || err != nil {
				return
			}
		}
	}
	m, reached, err := build(cleaned, p)
	if err != nil {
		return Result{}, err
	}
	c := streamCleaner{m: m, p: p, emit: emit, live: map[int64]bool{}}
	pass := func(h record.Header) bool { return kept(h) || h.BaseOffset >= reached }
	for b, err := range batches {
		if err != nil {
			return c.result(reached), err
		}
		if err := c.add(b, pass); err != nil {
			return c.result(reached), err
		}
	}
	err = c.closeGap()
	return c.result(reached), err
}

// streamCleaner is one CleanTo's state between batches.
type streamCleaner struct {
	m       Map
	p       Params
	emit    func([]byte) error
	live    map[int64]bool // producer id → a record of its transaction since its last marker is kept
	out     []byte         // the current batch's result
	total   Stats
	changed bool
	gap     struct { // the run of batches that went, not yet emitted
		open      bool
		base      int64
		next      int64
		epoch     int32
		timestamp int64
	}
}

// add cleans batch b (or passes it when keep says so) and emits what is
// due: the gap before it and its result.
func (c *streamCleaner) add(b []byte, keep func(record.Header) bool) error {
	h, err := record.ParseHeader(b)
	if err != nil {
		return err
	}
	if keep(h) {
		if err := c.closeGap(); err != nil {
			return err
		}
		return c.emit(b[:h.Size()])
	}
	var st Stats
	if h.IsControl() {
		c.out, st, err = cleanMarker(c.out[:0], b, h, c.live[h.ProducerID], c.p)
		delete(c.live, h.ProducerID)
	} else {
		c.out, st, err = clean(c.out[:0], b, c.m, c.p)
		if h.IsTransactional() && st.RecordsOut > 0 {
			c.live[h.ProducerID] = true
		}
	}
	if err != nil {
		return err
	}
	c.total.Add(st)
	if len(c.out) == 0 { // the whole batch went
		if !c.gap.open {
			c.gap.open, c.gap.base = true, h.BaseOffset
		}
		c.gap.next, c.gap.epoch, c.gap.timestamp = h.NextOffset(), h.PartitionLeaderEpoch, h.MaxTimestamp
		return nil
	}
	if !bytes.Equal(c.out, b[:h.Size()]) {
		c.changed = true
	}
	if err := c.closeGap(); err != nil { // the kept batch goes after the gap before it
		return err
	}
	return c.emit(c.out)
}

func (c *streamCleaner) result(reached int64) Result {
	st := c.total
	if reached < math.MaxInt64 {
		st.MapFull = 1
	}
	return Result{Stats: st, Changed: c.changed, Reached: reached}
}

// closeGap emits the open gap, if any.
func (c *streamCleaner) closeGap() error {
	if !c.gap.open {
		return nil
	}
	c.gap.open, c.changed = false, true
	c.total.BatchesOut++
	c.total.BytesOut += int64(record.HeaderSize) // one gap batch (or more past 2^31 offsets)
	for gap := record.AppendGap(nil, c.gap.base, c.gap.next, c.gap.epoch, c.gap.timestamp); len(gap) > 0; gap = gap[record.HeaderSize:] {
		if err := c.emit(gap[:record.HeaderSize]); err != nil {
			return err
		}
	}
	return nil
}
