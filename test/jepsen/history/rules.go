package history

import (
	"cmp"
	"slices"
)

// partition is one partition's version order: the values known at each
// offset (from acknowledgements and reads), and each value's offsets.
type partition struct {
	byOffset map[int64]int64   // offset → the first value known there
	offsets  map[int64][]int64 // value → the distinct offsets it was seen or acknowledged at
	sorted   []int64           // the known offsets, ascending
	index    map[int64]int     // offset → its position in sorted
	maxRead  int64             // the highest offset any read saw; -1 for none
}

// order builds every partition's version order and reports the
// inconsistent offsets and duplicates it meets.
func order(ops []Op, r *Result) map[string]*partition {
	parts := map[string]*partition{}
	get := func(name string) *partition {
		p := parts[name]
		if p == nil {
			p = &partition{byOffset: map[int64]int64{}, offsets: map[int64][]int64{}, maxRead: -1}
			parts[name] = p
		}
		return p
	}
	note := func(name string, offset, value int64) {
		p := get(name)
		if v, ok := p.byOffset[offset]; !ok {
			p.byOffset[offset] = value
		} else if v != value {
			r.add(InconsistentOffset, "%s offset %d holds %d and %d", name, offset, v, value)
		}
		if !slices.Contains(p.offsets[value], offset) {
			p.offsets[value] = append(p.offsets[value], offset)
		}
	}
	for _, op := range ops {
		for _, w := range op.Writes {
			if op.Outcome == OK && w.Offset >= 0 {
				note(w.Partition, w.Offset, w.Value)
			}
		}
		for _, rd := range op.Reads {
			note(rd.Partition, rd.Offset, rd.Value)
			p := get(rd.Partition)
			p.maxRead = max(p.maxRead, rd.Offset)
		}
	}
	for _, name := range sortedKeys(parts) {
		p := parts[name]
		for _, v := range sortedKeys(p.offsets) {
			if offs := p.offsets[v]; len(offs) > 1 {
				r.add(Duplicate, "%s value %d at offsets %v", name, v, offs)
			}
		}
		p.sorted = sortedKeys(p.byOffset)
		p.index = make(map[int64]int, len(p.sorted))
		for i, o := range p.sorted {
			p.index[o] = i
		}
	}
	return parts
}

// failedValues maps each value that only failed operations wrote to the
// kind of the first of them (an aborted transaction, a refused send).
func failedValues(ops []Op) map[int64]Kind {
	failed := map[int64]Kind{}
	written := map[int64]bool{} // by an operation that did not fail
	for _, op := range ops {
		for _, w := range op.Writes {
			switch {
			case op.Outcome != Fail:
				written[w.Value] = true
			case failed[w.Value] == 0:
				failed[w.Value] = op.Kind
			}
		}
	}
	for v := range written {
		delete(failed, v)
	}
	return failed
}

// checkWrites reports lost writes (acknowledged, never read, while a read
// saw a later offset of its partition), unseen writes (acknowledged, never
// read, past every read of a partition the final reads read to its end)
// and aborted reads (a value of a failed send read by any poll, or of an
// aborted transaction read by a read_committed poll).
func checkWrites(ops []Op, parts map[string]*partition, failed map[int64]Kind, r *Result) {
	read := map[int64]bool{}
	finished := map[string]bool{} // partitions the final reads read
	for _, op := range ops {
		for _, rd := range op.Reads {
			read[rd.Value] = true
			finished[rd.Partition] = finished[rd.Partition] || op.Final
			if k := failed[rd.Value]; k == Send || k == Txn && op.ReadCommitted {
				r.add(AbortedRead, "process %d read %s offset %d value %d, written only by failed operations",
					op.Process, rd.Partition, rd.Offset, rd.Value)
			}
		}
	}
	for _, op := range ops {
		for _, w := range op.Writes {
			if op.Outcome != OK || w.Offset < 0 || read[w.Value] {
				continue
			}
			p := parts[w.Partition]
			switch {
			case p != nil && p.maxRead > w.Offset:
				r.add(LostWrite, "%s value %d acknowledged at offset %d by process %d, never read; reads reached offset %d",
					w.Partition, w.Value, w.Offset, op.Process, p.maxRead)
			case finished[w.Partition]:
				r.add(Unseen, "%s value %d acknowledged at offset %d by process %d, past the end the final reads found (offset %d)",
					w.Partition, w.Value, w.Offset, op.Process, p.maxRead)
			}
		}
	}
}

// checkPolls follows each assign consumer's polls of each partition in
// completion order: the next poll must start right after where the last
// one ended in the version order (a later start skips values, an earlier
// one goes back), and within one poll offsets must rise without skips.
// Subscribe consumers may rewind after a rebalance, as Kafka allows.
// Skipping values of failed writes (aborted transactions, which
// read_committed consumers do not see) is no skip; nor is a
// read_committed consumer's skipping a value not known to be committed
// (of a transaction whose outcome is unknown, that no read_committed
// read saw).
func checkPolls(ops []Op, parts map[string]*partition, failed map[int64]Kind, r *Result) {
	committed := committedValues(ops)
	last := map[cursor]int{} // position in the version order of the last value read
	for _, op := range byCompletion(ops) {
		if !op.Assign || op.Outcome != OK {
			continue
		}
		for _, rd := range op.Reads {
			p := parts[rd.Partition]
			at := p.index[rd.Offset]
			c := cursor{op.Process, rd.Partition}
			prev, ok := last[c]
			last[c] = at
			switch {
			case !ok:
			case at <= prev:
				r.add(NonMonotonicPoll, "process %d read %s offset %d after offset %d",
					op.Process, rd.Partition, rd.Offset, p.sorted[prev])
			case at > prev+1:
				if n := p.skipped(prev, at, failed, committed, op.ReadCommitted); n > 0 {
					r.add(PollSkip, "process %d read %s offset %d after offset %d, skipping %d known value(s)",
						op.Process, rd.Partition, rd.Offset, p.sorted[prev], n)
				}
			}
		}
	}
}

// skipped counts the values strictly between positions from and to of the
// version order that a failed write did not put there and, for a
// read_committed reader, that are known committed.
func (p *partition) skipped(from, to int, failed map[int64]Kind, committed map[int64]bool, readCommitted bool) int {
	n := 0
	for _, o := range p.sorted[from+1 : to] {
		v := p.byOffset[o]
		if failed[v] == 0 && (!readCommitted || committed[v]) {
			n++
		}
	}
	return n
}

// committedValues are the values known committed: written by an
// operation that succeeded, or read by a read_committed poll.
func committedValues(ops []Op) map[int64]bool {
	c := map[int64]bool{}
	for _, op := range ops {
		if op.Outcome == OK {
			for _, w := range op.Writes {
				c[w.Value] = true
			}
		}
		if op.ReadCommitted {
			for _, rd := range op.Reads {
				c[rd.Value] = true
			}
		}
	}
	return c
}

// checkSendOrder reports a process whose acknowledged sends to a partition
// got offsets that do not rise in the order it sent them (by completion,
// and within an operation in order).
func checkSendOrder(ops []Op, r *Result) {
	last := map[cursor]int64{}
	for _, op := range byCompletion(ops) {
		if op.Outcome != OK {
			continue
		}
		for _, w := range op.Writes {
			if w.Offset < 0 {
				continue
			}
			c := cursor{op.Process, w.Partition}
			if prev, ok := last[c]; ok && w.Offset <= prev {
				r.add(NonMonotonicSend, "process %d sent %d to %s at offset %d after offset %d",
					op.Process, w.Value, w.Partition, w.Offset, prev)
			}
			last[c] = w.Offset
		}
	}
}

// cursor is one process's position in one partition.
type cursor struct {
	proc int
	part string
}

// byCompletion is ops ordered by completion time, ties by invocation.
func byCompletion(ops []Op) []Op {
	s := slices.Clone(ops)
	slices.SortStableFunc(s, func(a, b Op) int {
		return cmp.Or(cmp.Compare(a.Complete, b.Complete), cmp.Compare(a.Invoke, b.Invoke))
	})
	return s
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
