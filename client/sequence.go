package client

// numberLocked gives a batch its producer identity and sequence the first
// time it is sent (idempotence only).
func (p *Producer) numberLocked(b *batch) {
	if !p.cfg.idempotent || b.seqd {
		return
	}
	ps := b.part
	b.seqd, b.id, b.seq, b.wire = true, p.id, ps.nextSeq, nil
	ps.nextSeq = b.nextSeq()
}

// resequenceLocked renumbers a partition's numbered, unfinished batches to
// follow the last batch known written. Only batches after one that failed
// without being written change, and they cannot have been written either:
// the broker accepts only the next sequence.
func (p *Producer) resequenceLocked(ps *partState) {
	if !p.cfg.idempotent || p.needReset {
		return
	}
	next := ps.ackedSeq
	for _, b := range ps.queue {
		if b.done {
			if b.err == nil && b.seqd && b.id == p.id {
				next = b.nextSeq()
			}
			continue
		}
		if !b.seqd {
			break
		}
		if b.seq != next || b.id != p.id {
			b.seq, b.id, b.wire, b.maybeWritten = next, p.id, nil, false
		}
		next = b.nextSeq()
	}
	ps.nextSeq = next
}

// resetReadyLocked reports whether the producer can move to a new epoch:
// nothing is in flight and no unfinished batch may be in the log under the
// current one. Only a partition's first unfinished batch matters: a later
// one can be in the log only if the first is (the broker takes sequences
// in order), and the first, if it may be, is being retried to find out.
func (p *Producer) resetReadyLocked() bool {
	for _, ps := range p.order {
		if ps.inflight > 0 {
			return false
		}
		for _, b := range ps.queue {
			if b.done {
				continue
			}
			if b.seqd && b.maybeWritten && b.id == p.id {
				return false
			}
			break
		}
	}
	return true
}

// resetLocked moves to a new epoch after an ambiguous failure, so that the
// freed sequences can never be confused with a batch that was written:
// every partition starts again at sequence 0. A plain idempotent producer
// bumps its epoch itself (KIP-360); a transactional one asks its
// coordinator.
func (p *Producer) resetLocked() {
	p.resetSequencesLocked()
	if p.cfg.txnName != "" || p.id.id < 0 || p.id.epoch == 1<<15-1 {
		p.idState = idNone
	} else {
		p.id.epoch++
	}
	p.log.Info("producer epoch reset after an ambiguous failure", "producer_id", p.id.id, "epoch", p.id.epoch)
}

// resetSequencesLocked starts every partition again at sequence 0, for a
// new epoch: unfinished batches are numbered again when next sent.
func (p *Producer) resetSequencesLocked() {
	p.needReset = false
	for _, ps := range p.order {
		ps.nextSeq, ps.ackedSeq = 0, 0
		for _, b := range ps.queue {
			if !b.done {
				b.seqd, b.wire, b.maybeWritten = false, nil, false
			}
		}
	}
}
