package producerstate

import (
	"encoding/binary"
	"hash/crc32"
	"slices"

	"github.com/minikafka/minikafka-go/record"
)

// The encoding, version 3, all integers big endian:
//
//	u8   format version (3)
//	u16  window
//	u32  number of producers
//	per producer, in ascending producer id order:
//	  i64  producer id (>= 0, strictly ascending)
//	  i16  epoch (>= 0)
//	  u16  number of batches (1..window; 0..window from version 3)
//	  i64  last timestamp (from version 2)
//	  i64  first offset of the open transaction, or -1 (from version 3)
//	  i32  coordinator epoch of the last marker, or -1 (from version 3)
//	  per batch, oldest first:
//	    i32  first sequence (>= 0)
//	    i32  last sequence (first + count - 1, wrapping past MaxInt32 to 0)
//	    i64  base offset
//	    i32  count (>= 1)
//	u32  number of aborted transactions (from version 3)
//	per aborted transaction, in marker order (from version 3):
//	  i64  producer id (>= 0)
//	  i64  first offset (>= 0)
//	  i64  last offset (the marker's: >= first, strictly ascending)
//	u32  CRC32C (Castagnoli) of every byte before it
//
// Every field has a fixed width and Decode accepts only what AppendEncode
// can write, so a table has exactly one encoding. A new format gets a new
// version byte; Decode keeps reading the old ones: version 1, without last
// timestamps, decodes to a table whose Timed is false; versions 1 and 2,
// without transactions, decode to a table with none open or aborted.
const (
	formatVersion   = 3
	formatVersionV2 = 2
	formatVersionV1 = 1

	headerSize  = 1 + 2 + 4
	entrySize   = 8 + 2 + 2 // plus timeSize from version 2, txnSize from 3
	timeSize    = 8
	txnSize     = 8 + 4
	batchSize   = 4 + 4 + 8 + 4
	abortedSize = 8 + 8 + 8
	trailerSize = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// AppendEncode appends the table's deterministic binary form to dst and
// returns the extended slice. Equal tables encode to identical bytes,
// whatever order their producers were added in.
func (t *Table) AppendEncode(dst []byte) []byte {
	ids := t.ids()
	size := headerSize + 4 + trailerSize + len(ids)*(entrySize+timeSize+txnSize) + len(t.aborted)*abortedSize
	for _, e := range t.producers {
		size += len(e.batches) * batchSize
	}
	dst = slices.Grow(dst, size)
	start := len(dst)

	dst = append(dst, formatVersion)
	dst = binary.BigEndian.AppendUint16(dst, uint16(t.window))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(ids)))
	for _, pid := range ids {
		e := t.producers[pid]
		dst = binary.BigEndian.AppendUint64(dst, uint64(pid))
		dst = binary.BigEndian.AppendUint16(dst, uint16(e.epoch))
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(e.batches)))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.lastTS))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.txnFirst))
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.coordEpoch))
		for _, b := range e.batches {
			dst = binary.BigEndian.AppendUint32(dst, uint32(b.FirstSeq))
			dst = binary.BigEndian.AppendUint32(dst, uint32(b.LastSeq))
			dst = binary.BigEndian.AppendUint64(dst, uint64(b.BaseOffset))
			dst = binary.BigEndian.AppendUint32(dst, uint32(b.Count))
		}
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(t.aborted)))
	for _, a := range t.aborted {
		dst = binary.BigEndian.AppendUint64(dst, uint64(a.ProducerID))
		dst = binary.BigEndian.AppendUint64(dst, uint64(a.FirstOffset))
		dst = binary.BigEndian.AppendUint64(dst, uint64(a.LastOffset))
	}
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// Decode is the inverse of AppendEncode: b must hold exactly one encoded
// table. Any input that AppendEncode could not have written (truncated,
// garbled, trailing bytes, an unknown version) gives an error wrapping
// ErrCorrupt; Decode never panics and allocates no more than b's size
// warrants.
func Decode(b []byte) (*Table, error) {
	if len(b) == 0 {
		return nil, corrupt(0, "empty input")
	}
	version := b[0]
	if version != formatVersion && version != formatVersionV2 && version != formatVersionV1 {
		return nil, &VersionError{Version: version}
	}
	if len(b) < headerSize+trailerSize {
		return nil, corrupt(len(b), "truncated header")
	}
	body := b[:len(b)-trailerSize]
	if want, got := binary.BigEndian.Uint32(b[len(body):]), crc32.Checksum(body, castagnoli); want != got {
		return nil, corrupt(len(body), "checksum mismatch")
	}

	r := reader{b: body, off: 1}
	window := int(r.u16())
	if window == 0 {
		return nil, corrupt(1, "window 0")
	}
	n := int(r.u32())
	if n > r.left()/entryBytes(version) {
		return nil, corrupt(r.off-4, "more producers than bytes")
	}
	t := &Table{window: window, producers: make(map[int64]*entry, n), untimed: version == formatVersionV1}
	prev := int64(-1)
	for range n {
		pid, e, err := decodeEntry(&r, version, window, prev)
		if err != nil {
			return nil, err
		}
		t.producers[pid], prev = e, pid
	}
	if version >= 3 {
		if err := t.decodeAborted(&r); err != nil {
			return nil, err
		}
	}
	if r.left() != 0 {
		return nil, corrupt(r.off, "trailing bytes")
	}
	t.rebuildOngoing()
	return t, nil
}

// entryBytes is the fixed part of a producer in the given version.
func entryBytes(version byte) int {
	switch version {
	case formatVersionV1:
		return entrySize
	case formatVersionV2:
		return entrySize + timeSize
	}
	return entrySize + timeSize + txnSize
}

// decodeEntry reads one producer whose id must be above prev.
func decodeEntry(r *reader, version byte, window int, prev int64) (int64, *entry, error) {
	at := r.off
	if r.left() < entryBytes(version) {
		return 0, nil, corrupt(at, "truncated producer")
	}
	pid := int64(r.u64())
	e := &entry{epoch: int16(r.u16()), lastTS: -1, txnFirst: -1, coordEpoch: -1}
	nb := int(r.u16())
	if version >= 2 {
		e.lastTS = int64(r.u64())
	}
	if version >= 3 {
		e.txnFirst, e.coordEpoch = int64(r.u64()), int32(r.u32())
	}
	minBatches := 1
	if version >= 3 {
		minBatches = 0 // a marker with a new epoch empties the window
	}
	switch {
	case pid <= prev:
		return 0, nil, corrupt(at, "producer ids not ascending and non-negative")
	case e.epoch < 0:
		return 0, nil, corrupt(at, "negative epoch")
	case nb < minBatches || nb > window:
		return 0, nil, corrupt(at, "batch count outside the window")
	case nb > r.left()/batchSize:
		return 0, nil, corrupt(at, "truncated batches")
	case e.txnFirst < -1 || e.coordEpoch < -1:
		return 0, nil, corrupt(at, "negative transaction offset or coordinator epoch")
	}
	e.batches = make([]Batch, nb)
	for i := range e.batches {
		at := r.off
		bt := Batch{
			FirstSeq:   int32(r.u32()),
			LastSeq:    int32(r.u32()),
			BaseOffset: int64(r.u64()),
			Count:      int32(r.u32()),
		}
		if bt.FirstSeq < 0 || bt.Count < 1 || bt.LastSeq != record.AddSequence(bt.FirstSeq, bt.Count-1) {
			return 0, nil, corrupt(at, "inconsistent batch sequence range")
		}
		e.batches[i] = bt
	}
	return pid, e, nil
}

// decodeAborted reads the aborted transactions index.
func (t *Table) decodeAborted(r *reader) error {
	if r.left() < 4 {
		return corrupt(r.off, "truncated aborted transactions")
	}
	n := int(r.u32())
	if n > r.left()/abortedSize {
		return corrupt(r.off-4, "more aborted transactions than bytes")
	}
	t.aborted = make([]AbortedTxn, n)
	prev := int64(-1)
	for i := range t.aborted {
		at := r.off
		a := AbortedTxn{ProducerID: int64(r.u64()), FirstOffset: int64(r.u64()), LastOffset: int64(r.u64())}
		if a.ProducerID < 0 || a.FirstOffset < 0 || a.LastOffset < a.FirstOffset || a.LastOffset <= prev {
			return corrupt(at, "inconsistent aborted transaction")
		}
		t.aborted[i], prev = a, a.LastOffset
	}
	return nil
}

func corrupt(off int, reason string) error {
	return &CorruptError{Offset: off, Reason: reason}
}

// reader reads fixed-width big-endian fields; the caller checks left()
// before reading.
type reader struct {
	b   []byte
	off int
}

func (r *reader) left() int { return len(r.b) - r.off }

func (r *reader) u16() uint16 {
	v := binary.BigEndian.Uint16(r.b[r.off:])
	r.off += 2
	return v
}

func (r *reader) u32() uint32 {
	v := binary.BigEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *reader) u64() uint64 {
	v := binary.BigEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}
