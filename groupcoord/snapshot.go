package groupcoord

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// snapshotVersion is the first byte of a snapshot. A snapshot format, once
// shipped, is read forever: a new format takes the next number.
const snapshotVersion = 1

// AppendSnapshot appends the view's state to dst: the records that rebuild
// it (each group's metadata, then its offsets, groups and offsets sorted),
// re-encoded at the versions the coordinator writes. Its cost is
// proportional to the view's size; the partition's state machine calls it
// from its Snapshot, which raft runs serially with Apply, so the snapshot
// is of one point in the log.
func (v *View) AppendSnapshot(dst []byte) []byte {
	v.mu.RLock()
	defer v.mu.RUnlock()
	dst = append(dst, snapshotVersion)
	names := make([]string, 0, len(v.groups))
	for name := range v.groups {
		names = append(names, name)
	}
	slices.Sort(names)
	var key, value []byte
	for _, name := range names {
		g := v.groups[name]
		if g.meta != nil {
			key = AppendGroupKey(key[:0], name)
			value = AppendGroupValue(value[:0], g.meta)
			dst = appendPair(dst, key, value)
		}
		if g.cg != nil {
			dst = appendConsumerGroup(dst, name, g.cg)
		}
		if g.sg != nil {
			dst = appendShareGroup(dst, name, g.sg)
		}
		for _, po := range sortedOffsets(g) {
			key = AppendOffsetKey(key[:0], name, po.Topic, po.Partition)
			value = AppendOffsetValue(value[:0], po.Offset)
			dst = appendPair(dst, key, value)
		}
	}
	return dst
}

func appendPair(dst, key, value []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	dst = binary.AppendUvarint(dst, uint64(len(value)))
	return append(dst, value...)
}

// Restore replaces the view's state by a snapshot's. On error the view is
// unchanged.
func (v *View) Restore(snapshot []byte) error {
	if len(snapshot) == 0 || snapshot[0] != snapshotVersion {
		return fmt.Errorf("%w: no version %d header", ErrInvalidSnapshot, snapshotVersion)
	}
	fresh := NewView()
	b := snapshot[1:]
	for n := 0; len(b) > 0; n++ {
		key, rest, ok := readPart(b)
		if !ok {
			return fmt.Errorf("%w: record %d: truncated key", ErrInvalidSnapshot, n)
		}
		value, rest, ok := readPart(rest)
		if !ok {
			return fmt.Errorf("%w: record %d: truncated value", ErrInvalidSnapshot, n)
		}
		if err := fresh.applyLocked(key, value); err != nil {
			return fmt.Errorf("%w: record %d: %w", ErrInvalidSnapshot, n, err)
		}
		b = rest
	}
	v.mu.Lock()
	v.groups, v.pending, v.seq = fresh.groups, fresh.pending, fresh.seq
	v.mu.Unlock()
	return nil
}

func readPart(b []byte) (part, rest []byte, ok bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return nil, nil, false
	}
	b = b[w:]
	// A snapshot never holds tombstones: an empty part is an empty value.
	return b[:n:n], b[n:], true
}
