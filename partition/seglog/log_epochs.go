package seglog

// EpochEndOffset answers Kafka's OffsetForLeaderEpoch from the leader
// epochs stamped into the stored batches (for the FSM's batches, the Raft
// term of the entry that appended them). It returns the largest epoch at or
// below epoch that a batch carries (-1 if none does) and the base offset of
// the first batch whose epoch is larger (EndOffset if none is). Epochs never
// decrease along a partition's log; -1 (no epoch) is ignored.
//
// It reads only the in-memory epoch marks of the segment indexes, which
// Open rebuilds from the index files (or the batch headers), so the
// answer is a function of the stored batches alone: the same on every
// replica and after a restart.
func (l *Log) EpochEndOffset(epoch int32) (floor int32, end int64, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return -1, -1, ErrClosed
	}
	floor = -1
	for _, s := range l.segs {
		for _, m := range s.idx.epochs {
			if m.epoch > epoch {
				return floor, s.base + int64(m.rel), nil
			}
			floor = m.epoch
		}
	}
	return floor, l.end, nil
}
