package seglog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"
)

// indexEntry locates one batch inside a segment. The sparse index holds one
// entry for the segment's first batch and then one for the first batch that
// starts at least IndexIntervalBytes after the previous entry, so a lookup
// reads at most about one interval of headers.
type indexEntry struct {
	rel uint32 // the batch's base offset minus the segment's base offset
	pos uint32 // the batch's byte position in the segment file
	// maxTS is the largest MaxTimestamp of every batch from the segment's
	// start up to (not including) the next entry's batch: a running maximum,
	// so it never decreases along the index and supports a binary search
	// for "first batch with MaxTimestamp >= ts".
	maxTS int64
}

// offsetIndex is a segment's sparse offset and time index, and its leader
// epoch marks, kept in memory. It is a plain value: the Log guards it with
// Log.mu.
type offsetIndex struct {
	entries []indexEntry
	// epochs marks where the partition leader epoch stamped in the
	// segment's batches changes: one mark for the first batch with an
	// epoch (>= 0), then one for each batch whose epoch differs from the
	// previous mark's. A function of the segment's bytes alone.
	epochs []epochMark
}

// epochMark is the first batch of a run of batches with one leader epoch.
type epochMark struct {
	rel   uint32 // the batch's base offset minus the segment's base offset
	epoch int32
}

// noteEpoch records the leader epoch of a batch appended at relative
// offset rel. Batches must be noted in file order; -1 (no epoch) is
// skipped.
func (x *offsetIndex) noteEpoch(rel uint32, epoch int32) {
	if epoch < 0 || (len(x.epochs) > 0 && x.epochs[len(x.epochs)-1].epoch == epoch) {
		return
	}
	x.epochs = append(x.epochs, epochMark{rel: rel, epoch: epoch})
}

// note records that a batch with base offset base+rel and the given max
// timestamp was appended at file position pos. Batches must be noted in
// file order.
func (x *offsetIndex) note(rel, pos uint32, maxTS int64, interval int) {
	n := len(x.entries)
	if n > 0 && int64(pos)-int64(x.entries[n-1].pos) < int64(interval) {
		last := &x.entries[n-1]
		last.maxTS = max(last.maxTS, maxTS)
		return
	}
	if n > 0 {
		maxTS = max(maxTS, x.entries[n-1].maxTS)
	}
	x.entries = append(x.entries, indexEntry{rel: rel, pos: pos, maxTS: maxTS})
}

// find returns the entry to start a header scan from when looking for
// relative offset rel: the last entry whose rel is <= rel. The index must
// not be empty (its first entry has rel 0).
func (x *offsetIndex) find(rel uint32) indexEntry {
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].rel > rel })
	return x.entries[max(i-1, 0)]
}

// findTime returns the entry whose interval holds the first batch with
// MaxTimestamp >= ts, and false when no batch in the segment qualifies.
func (x *offsetIndex) findTime(ts int64) (indexEntry, bool) {
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].maxTS >= ts })
	if i == len(x.entries) {
		return indexEntry{}, false
	}
	return x.entries[i], true
}

// cutBefore returns a copy of the entries whose batches start before pos,
// minus the last of them, together with that dropped entry: the caller
// re-notes the batches from its position up to pos, so that the last
// interval's running maximum timestamp forgets the dropped batches. The
// copy leaves the shared slice untouched for concurrent readers.
func (x *offsetIndex) cutBefore(pos uint32) (kept offsetIndex, redo indexEntry, ok bool) {
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].pos >= pos })
	if i == 0 {
		return offsetIndex{}, indexEntry{}, false
	}
	redo = x.entries[i-1]
	kept.entries = append([]indexEntry(nil), x.entries[:i-1]...)
	// The re-noted batches note their epochs again.
	j := sort.Search(len(x.epochs), func(j int) bool { return x.epochs[j].rel >= redo.rel })
	kept.epochs = append([]epochMark(nil), x.epochs[:j]...)
	return kept, redo, true
}

// Index file format (version 2), big endian:
//
//	 0 magic    "MKIX"
//	 4 version  uint32 (2)
//	 8 base     int64  segment base offset (must match the file name)
//	16 size     int64  segment bytes the index covers (must equal the .log size)
//	24 next     int64  offset just past the segment's last batch
//	32 count    uint32 number of entries
//	36 entries  count × {rel uint32, pos uint32, maxTS int64}
//	 … ecount   uint32 number of epoch marks
//	 … epochs   ecount × {rel uint32, epoch int32}
//	 … crc      uint32 CRC32C of every byte before it
//
// Version 1 had no epoch marks; such a file is rejected like a damaged one,
// so the segment is rescanned and its index rewritten once.
//
// The relative offset and position are uint32: Open refuses
// SegmentBytes above math.MaxUint32, and Append rolls the segment before a
// base offset would be more than math.MaxUint32 past the segment's base.
const (
	indexMagic       = "MKIX"
	indexVersion     = 2
	indexHeaderSize  = 36
	indexEntrySize   = 16
	epochMarkSize    = 8
	indexTrailerSize = 4
)

// errBadIndex means an index file cannot be used; the segment is rescanned.
var errBadIndex = errors.New("partition: unusable index file")

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// indexFile is the decoded content of a sealed segment's index file.
type indexFile struct {
	base, size, next int64
	idx              offsetIndex
}

// encodeIndex serializes a segment's index in the version 2 format.
func encodeIndex(base, size, next int64, x *offsetIndex) []byte {
	b := make([]byte, 0, indexHeaderSize+len(x.entries)*indexEntrySize+4+len(x.epochs)*epochMarkSize+indexTrailerSize)
	b = append(b, indexMagic...)
	b = binary.BigEndian.AppendUint32(b, indexVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(base))
	b = binary.BigEndian.AppendUint64(b, uint64(size))
	b = binary.BigEndian.AppendUint64(b, uint64(next))
	b = binary.BigEndian.AppendUint32(b, uint32(len(x.entries)))
	for _, e := range x.entries {
		b = binary.BigEndian.AppendUint32(b, e.rel)
		b = binary.BigEndian.AppendUint32(b, e.pos)
		b = binary.BigEndian.AppendUint64(b, uint64(e.maxTS))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(x.epochs)))
	for _, m := range x.epochs {
		b = binary.BigEndian.AppendUint32(b, m.rel)
		b = binary.BigEndian.AppendUint32(b, uint32(m.epoch))
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32c))
}

// decodeIndex parses and checks an index file: framing, CRC, and that the
// entries are the index of some sequence of batches (first entry at
// position 0, offsets and positions strictly increasing, positions inside
// the covered size, timestamps non-decreasing).
func decodeIndex(b []byte) (indexFile, error) {
	bad := func(format string, args ...any) (indexFile, error) {
		return indexFile{}, fmt.Errorf("%w: "+format, append([]any{errBadIndex}, args...)...)
	}
	if len(b) < indexHeaderSize+indexTrailerSize {
		return bad("%d bytes is too short", len(b))
	}
	body, trailer := b[:len(b)-indexTrailerSize], b[len(b)-indexTrailerSize:]
	if got, want := crc32.Checksum(body, crc32c), binary.BigEndian.Uint32(trailer); got != want {
		return bad("crc %08x, want %08x", got, want)
	}
	if string(b[0:4]) != indexMagic {
		return bad("magic %q", b[0:4])
	}
	if v := binary.BigEndian.Uint32(b[4:]); v != indexVersion {
		return bad("version %d", v)
	}
	f := indexFile{
		base: int64(binary.BigEndian.Uint64(b[8:])),
		size: int64(binary.BigEndian.Uint64(b[16:])),
		next: int64(binary.BigEndian.Uint64(b[24:])),
	}
	count := binary.BigEndian.Uint32(b[32:])
	marksAt := indexHeaderSize + uint64(count)*indexEntrySize
	if uint64(len(body)) < marksAt+4 {
		return bad("%d entries do not fit %d bytes", count, len(b))
	}
	marks := binary.BigEndian.Uint32(body[marksAt:])
	if uint64(len(body)) != marksAt+4+uint64(marks)*epochMarkSize {
		return bad("%d entries and %d epoch marks do not fit %d bytes", count, marks, len(b))
	}
	if f.base < 0 || f.size < 0 || f.next < f.base {
		return bad("base %d, size %d, next %d", f.base, f.size, f.next)
	}
	if (count == 0) != (f.size == 0) || (f.size == 0) != (f.next == f.base) {
		return bad("%d entries for %d bytes and %d offsets", count, f.size, f.next-f.base)
	}
	f.idx.entries = make([]indexEntry, count)
	for i := range f.idx.entries {
		p := b[indexHeaderSize+i*indexEntrySize:]
		e := indexEntry{
			rel:   binary.BigEndian.Uint32(p),
			pos:   binary.BigEndian.Uint32(p[4:]),
			maxTS: int64(binary.BigEndian.Uint64(p[8:])),
		}
		switch {
		case i == 0 && (e.rel != 0 || e.pos != 0):
			return bad("first entry {%d, %d} is not the segment start", e.rel, e.pos)
		case i > 0 && (e.rel <= f.idx.entries[i-1].rel || e.pos <= f.idx.entries[i-1].pos || e.maxTS < f.idx.entries[i-1].maxTS):
			return bad("entry %d out of order", i)
		case int64(e.pos) >= f.size || f.base+int64(e.rel) >= f.next:
			return bad("entry %d {%d, %d} past the segment end", i, e.rel, e.pos)
		}
		f.idx.entries[i] = e
	}
	if err := decodeEpochMarks(&f, body[marksAt+4:], int(marks)); err != nil {
		return indexFile{}, err
	}
	return f, nil
}

// decodeEpochMarks reads n epoch marks, which must lie inside the segment
// in increasing offset order with non-negative epochs that change at each.
func decodeEpochMarks(f *indexFile, b []byte, n int) error {
	if n == 0 {
		return nil
	}
	f.idx.epochs = make([]epochMark, n)
	for i := range f.idx.epochs {
		m := epochMark{
			rel:   binary.BigEndian.Uint32(b[i*epochMarkSize:]),
			epoch: int32(binary.BigEndian.Uint32(b[i*epochMarkSize+4:])),
		}
		if m.epoch < 0 || f.base+int64(m.rel) >= f.next ||
			(i > 0 && (m.rel <= f.idx.epochs[i-1].rel || m.epoch == f.idx.epochs[i-1].epoch)) {
			return fmt.Errorf("%w: epoch mark %d {%d, %d} out of place", errBadIndex, i, m.rel, m.epoch)
		}
		f.idx.epochs[i] = m
	}
	return nil
}
