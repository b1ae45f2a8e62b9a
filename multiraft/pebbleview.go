package multiraft

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"
)

// pebbleView is one group's part of the node-wide pebbleLog: its log
// entries under 'l' + name (length-prefixed) + the index in 8 bytes big
// endian, its stable state under 's' + name + the key. A length-prefixed
// name is never a prefix of another group's, so each group's keys are one
// contiguous range of their own.
type pebbleView struct {
	pl   *pebbleLog
	name string
	// logLo and logHi bound the group's log keys, stLo and stHi its stable
	// keys: [lo, hi).
	logLo, logHi, stLo, stHi []byte
	// flush is write caching's interval in nanoseconds (SetWriteCaching);
	// 0 means every StoreLogs is synced.
	flush atomic.Int64

	// edgesMu guards spans, the indexes the group's log holds, kept as
	// entries are stored and deleted and read from Pebble again once not
	// known: reading the first or last index from Pebble seeks over the
	// memtable's range deletions, and raft asks for both at every snapshot.
	edgesMu sync.Mutex
	spans   logSpans
}

var (
	_ logStore    = (*pebbleView)(nil)
	_ writeCacher = (*pebbleView)(nil)
)

func newPebbleView(pl *pebbleLog, name string) *pebbleView {
	prefix := func(kind byte) []byte {
		b := binary.AppendUvarint([]byte{kind}, uint64(len(name)))
		return append(b, name...)
	}
	lo, st := prefix('l'), prefix('s')
	return &pebbleView{pl: pl, name: name, logLo: lo, logHi: prefixEnd(lo), stLo: st, stHi: prefixEnd(st)}
}

// prefixEnd is the least key above every key that starts with p (p ends
// below 0xff, as the prefixes here start with a letter).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	panic("multiraft: prefix of 0xff bytes")
}

func (v *pebbleView) logKey(index uint64) []byte {
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, len(v.logLo)+8), v.logLo...), index)
}

// FirstIndex is the index of the group's first entry, 0 if none.
func (v *pebbleView) FirstIndex() (uint64, error) {
	first, _, err := v.edges()
	return first, err
}

// LastIndex is the index of the group's last entry, 0 if none.
func (v *pebbleView) LastIndex() (uint64, error) {
	_, last, err := v.edges()
	return last, err
}

// edges is the group's first and last index, from spans, read from Pebble
// if not known.
func (v *pebbleView) edges() (first, last uint64, err error) {
	v.edgesMu.Lock() // held across the read: a store meanwhile updates what it reads
	defer v.edgesMu.Unlock()
	if v.spans.known {
		first, last = v.spans.edges()
		return first, last, nil
	}
	runs, first, last, err := v.readSpans()
	if err == nil {
		v.spans.set(runs)
	}
	return first, last, err
}

// stored notes entries stored at indexes lo..hi.
func (v *pebbleView) stored(lo, hi uint64) {
	v.edgesMu.Lock()
	v.spans.add(lo, hi)
	v.edgesMu.Unlock()
}

// deleted notes the entries lo..hi deleted.
func (v *pebbleView) deleted(lo, hi uint64) {
	v.edgesMu.Lock()
	v.spans.remove(lo, hi)
	v.edgesMu.Unlock()
}

// forget notes that what the store holds is not known (a write that may
// or may not have happened): the next FirstIndex or LastIndex reads Pebble.
func (v *pebbleView) forget() {
	v.edgesMu.Lock()
	v.spans.forget()
	v.edgesMu.Unlock()
}

// readSpans reads the runs of indexes the group's log holds from Pebble,
// the first maxLogSpans+1 of them if there are more (logSpans.set then
// forgets them), and its first and last index. It reads keys only: raft reads every entry after its snapshot
// at start anyway.
func (v *pebbleView) readSpans() (runs []span, first, last uint64, err error) {
	err = v.pl.read(func() error {
		it, err := v.pl.db.NewIter(&pebble.IterOptions{LowerBound: v.logLo, UpperBound: v.logHi})
		if err != nil {
			return err
		}
		for ok := it.First(); ok; ok = it.Next() {
			i := binary.BigEndian.Uint64(it.Key()[len(v.logLo):])
			switch n := len(runs); {
			case n > 0 && runs[n-1].hi+1 == i:
				runs[n-1].hi = i
			case n <= maxLogSpans:
				runs = append(runs, span{i, i})
			}
			first, last = cmp.Or(first, i), i
		}
		return it.Close()
	})
	if err != nil {
		return nil, 0, 0, fmt.Errorf("multiraft: raft log %q: %w", v.name, err)
	}
	return runs, first, last, nil
}

// GetLog reads the entry at index into l; raft.ErrLogNotFound if there is
// none.
func (v *pebbleView) GetLog(index uint64, l *raft.Log) error {
	var derr error
	err := v.pl.read(func() error {
		val, closer, err := v.pl.db.Get(v.logKey(index))
		if err != nil {
			return err
		}
		derr = decodeLog(val, l) // copies out of val
		return closer.Close()
	})
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		return raft.ErrLogNotFound
	case err != nil:
		return fmt.Errorf("multiraft: raft log %q: %w", v.name, err)
	case derr != nil:
		return fmt.Errorf("multiraft: raft log %q entry %d: %w", v.name, index, derr)
	}
	l.Index = index
	return nil
}

// StoreLog stores one entry.
func (v *pebbleView) StoreLog(l *raft.Log) error { return v.StoreLogs([]*raft.Log{l}) }

// StoreLogs stores entries in one commit: fsynced before it returns, or,
// with write caching on, within the flush interval by the flusher (until
// then a crash of the machine, or of the process before Pebble's WAL
// writer has written them, loses them).
func (v *pebbleView) StoreLogs(logs []*raft.Log) error {
	size := 0
	for _, l := range logs {
		size += len(v.logLo) + 8 + encodedLogSize(l) + 16
	}
	b := v.pl.db.NewBatchWithSize(size)
	for _, l := range logs {
		op := b.SetDeferred(len(v.logLo)+8, encodedLogSize(l))
		binary.BigEndian.PutUint64(op.Key[copy(op.Key, v.logLo):], l.Index)
		encodeLog(op.Value, l)
		if err := op.Finish(); err != nil {
			_ = b.Close()
			return fmt.Errorf("multiraft: raft log %q: %w", v.name, err)
		}
	}
	flush := time.Duration(v.flush.Load())
	opts := pebble.Sync
	if flush > 0 {
		opts = pebble.NoSync
	}
	// The batch belongs to the write from here on (pebbleLog.write).
	if err := v.pl.write(func() error { defer b.Close(); return v.pl.db.Apply(b, opts) }); err != nil {
		v.forget()
		return fmt.Errorf("multiraft: raft log %q: %w", v.name, err)
	}
	lo, hi := uint64(math.MaxUint64), uint64(0)
	for _, l := range logs {
		lo, hi = min(lo, l.Index), max(hi, l.Index)
	}
	if len(logs) > 0 {
		v.stored(lo, hi)
	}
	if flush > 0 {
		v.pl.noteUnsynced(flush)
	}
	return nil
}

// DeleteRange deletes the entries min..max (inclusive) with one range
// deletion. A suffix of the log (raft drops a follower's conflicting
// entries) is fsynced before DeleteRange returns, so that the entries
// that replace it can never sit on disk next to it, whatever write
// caching does to them. A head (raft's compaction below a snapshot it
// has persisted) is not: Pebble recovers a prefix of its WAL, so a crash
// that loses the deletion leaves the log as it was just before it (a
// state a crash a moment earlier leaves too), which raft compacts again;
// any later synced write makes it durable.
func (v *pebbleView) DeleteRange(min, max uint64) error {
	if min > max {
		return nil
	}
	last, err := v.LastIndex()
	if err != nil {
		return err
	}
	opts := pebble.Sync
	if max < last {
		opts = pebble.NoSync
	}
	end := append(v.logKey(max), 0) // the least key above max's
	start := v.logKey(min)
	err = v.pl.write(func() error { return v.pl.db.DeleteRange(start, end, opts) })
	if err != nil {
		v.forget() // the deletion may have happened
		return fmt.Errorf("multiraft: raft log %q: %w", v.name, err)
	}
	v.deleted(min, max)
	return nil
}

// errStableNotFound is Get's answer for a key never set: raft compares
// its text with "not found".
var errStableNotFound = errors.New("not found")

// Set stores the stable key k (raft's term, vote), fsynced.
func (v *pebbleView) Set(k, val []byte) error {
	key, val := append(append([]byte(nil), v.stLo...), k...), append([]byte(nil), val...)
	if err := v.pl.write(func() error { return v.pl.db.Set(key, val, pebble.Sync) }); err != nil {
		return fmt.Errorf("multiraft: raft stable state %q: %w", v.name, err)
	}
	return nil
}

// Get returns the value of stable key k, or an error "not found".
func (v *pebbleView) Get(k []byte) ([]byte, error) {
	var out []byte
	err := v.pl.read(func() error {
		val, closer, err := v.pl.db.Get(append(append([]byte(nil), v.stLo...), k...))
		if err != nil {
			return err
		}
		out = append([]byte(nil), val...)
		return closer.Close()
	})
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, errStableNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("multiraft: raft stable state %q: %w", v.name, err)
	}
	return out, nil
}

// SetUint64 stores val under k, fsynced.
func (v *pebbleView) SetUint64(k []byte, val uint64) error {
	return v.Set(k, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns the value under k, 0 if it was never set.
func (v *pebbleView) GetUint64(k []byte) (uint64, error) {
	b, err := v.Get(k)
	if errors.Is(err, errStableNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(b) != 8 {
		return 0, fmt.Errorf("multiraft: raft stable state %q key %q: %d bytes: %w", v.name, k, len(b), errCorruptEntry)
	}
	return binary.BigEndian.Uint64(b), nil
}

// SetWriteCaching sets write caching (Group.SetWriteCaching).
func (v *pebbleView) SetWriteCaching(flush time.Duration) { v.flush.Store(int64(max(flush, 0))) }

// Close unregisters the view; the DB stays open for other groups.
func (v *pebbleView) Close() error { return v.pl.closeView(v) }

// clearPointKeys is the most keys of a range clear deletes one by one.
const clearPointKeys = 1024

// clear deletes every key of the group, fsynced: key by key where a range
// holds at most clearPointKeys, else with a range deletion; a group with
// no key costs no write (a new group's bind clears). Until a flush,
// Pebble fragments every range deletion in the memtable again on each
// read after a new one, so a range deletion per removed group made each
// read cost as much as all the groups removed so far: removing a
// 10,000-partition topic's replicas spent a tenth of a node's CPU there.
func (v *pebbleView) clear() error {
	b := v.pl.db.NewBatch()
	err := v.pl.read(func() error {
		for _, r := range [][2][]byte{{v.logLo, v.logHi}, {v.stLo, v.stHi}} {
			it, err := v.pl.db.NewIter(&pebble.IterOptions{LowerBound: r[0], UpperBound: r[1]})
			if err != nil {
				return err
			}
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				if n++; n > clearPointKeys {
					_ = b.DeleteRange(r[0], r[1], nil)
					break
				}
				_ = b.Delete(it.Key(), nil) // the batch copies the key
			}
			if err := it.Close(); err != nil {
				return err
			}
		}
		return nil
	})
	switch {
	case err == nil && !b.Empty():
		err = v.pl.write(func() error { defer b.Close(); return v.pl.db.Apply(b, pebble.Sync) })
		v.forget()
	default:
		_ = b.Close()
	}
	if err != nil {
		return fmt.Errorf("multiraft: clear raft log %q: %w", v.name, err)
	}
	return nil
}

// errCorruptEntry is wrapped by the error for a stored entry that does
// not decode.
var errCorruptEntry = errors.New("corrupt entry")

// An entry's value (its index is in the key): a format byte (1), the term
// (uvarint), the type (byte), Data and Extensions (each a uvarint length
// then the bytes), and AppendedAt in Unix nanoseconds (varint; 0 for the
// zero time).
const logFormat = 1

func encodedLogSize(l *raft.Log) int {
	at := appendedAt(l)
	return 1 + uvarintLen(l.Term) + 1 + uvarintLen(uint64(len(l.Data))) + len(l.Data) +
		uvarintLen(uint64(len(l.Extensions))) + len(l.Extensions) + uvarintLen(uint64(at<<1)^uint64(at>>63))
}

// appendedAt is l.AppendedAt in Unix nanoseconds, 0 for the zero time.
func appendedAt(l *raft.Log) int64 {
	if l.AppendedAt.IsZero() {
		return 0
	}
	return l.AppendedAt.UnixNano()
}

func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// encodeLog writes l into b, of encodedLogSize(l) bytes.
func encodeLog(b []byte, l *raft.Log) {
	b[0] = logFormat
	n := 1 + binary.PutUvarint(b[1:], l.Term)
	b[n] = byte(l.Type)
	n++
	n += binary.PutUvarint(b[n:], uint64(len(l.Data)))
	n += copy(b[n:], l.Data)
	n += binary.PutUvarint(b[n:], uint64(len(l.Extensions)))
	n += copy(b[n:], l.Extensions)
	binary.PutVarint(b[n:], appendedAt(l))
}

// decodeLog fills l (but Index) from b, copying Data and Extensions.
func decodeLog(b []byte, l *raft.Log) error {
	if len(b) < 3 || b[0] != logFormat {
		return errCorruptEntry
	}
	term, n := binary.Uvarint(b[1:])
	if n <= 0 || 1+n >= len(b) {
		return errCorruptEntry
	}
	b = b[1+n:]
	typ := raft.LogType(b[0])
	b = b[1:]
	data, b, ok := cutBytes(b)
	ext, b, ok2 := cutBytes(b)
	at, n := binary.Varint(b)
	if !ok || !ok2 || n <= 0 || n != len(b) {
		return errCorruptEntry
	}
	buf := make([]byte, len(data)+len(ext)) // one allocation for both
	*l = raft.Log{Term: term, Type: typ}
	if data != nil {
		l.Data = buf[:len(data):len(data)]
		copy(l.Data, data)
	}
	if ext != nil {
		l.Extensions = buf[len(data):]
		copy(l.Extensions, ext)
	}
	if at != 0 {
		l.AppendedAt = time.Unix(0, at)
	}
	return nil
}

// cutBytes splits a uvarint-length-prefixed field off b; the field is
// nil when empty.
func cutBytes(b []byte) (field, rest []byte, ok bool) {
	size, n := binary.Uvarint(b)
	if n <= 0 || size > math.MaxInt32 || uint64(len(b)-n) < size {
		return nil, nil, false
	}
	if size > 0 {
		field = b[n : n+int(size)]
	}
	return field, b[n+int(size):], true
}
