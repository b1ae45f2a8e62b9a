package sharepart

// Acquire gives member up to max records at or above the log start
// offset and below end (the high watermark): first the Available records
// between SPSO and SPEO, in offset order (redeliveries), then new offsets
// from SPEO while SPEO-SPSO stays within MaxLocks. Each acquired record's
// delivery count grows by one and its lock expires LockDurationMs after
// now.
func (p *Partition) Acquire(member string, now, logStart, end int64, max int) []AcquiredRange {
	p.skipTo(logStart)
	var out []AcquiredRange
	take := func(i int) {
		r := &p.recs[i]
		r.state, r.member, r.deadline = Acquired, member, now+p.cfg.LockDurationMs
		r.count++
		off := p.start + int64(i)
		if n := len(out); n > 0 && out[n-1].Last == off-1 && out[n-1].DeliveryCount == r.count {
			out[n-1].Last = off
		} else {
			out = append(out, AcquiredRange{First: off, Last: off, DeliveryCount: r.count})
		}
		max--
		p.dirty = true
	}
	for i := range p.recs {
		if max <= 0 || p.start+int64(i) >= end {
			break
		}
		if p.recs[i].state == Available {
			take(i)
		}
	}
	for max > 0 && p.EndOffset() < end && len(p.recs) < p.cfg.MaxLocks {
		p.recs = append(p.recs, rec{})
		take(len(p.recs) - 1)
	}
	return out
}

// Ack is one acknowledgement batch: Types holds one type for the whole
// range or one per offset.
type Ack struct {
	First, Last int64
	Types       []AckType
}

// Acknowledge applies one acknowledgement batch of member (AcknowledgeAll).
func (p *Partition) Acknowledge(member string, first, last int64, types []AckType, now int64) error {
	return p.AcknowledgeAll(member, []Ack{{First: first, Last: last, Types: types}}, now)
}

// AcknowledgeAll applies a partition's acknowledgement batches of member
// together: batches must be in ascending order without overlap and their
// types known (else ErrInvalidAck), and every offset must be Acquired by
// member (else ErrInvalidRecordState); on an error nothing changes.
func (p *Partition) AcknowledgeAll(member string, acks []Ack, now int64) error {
	prev := p.start - 1
	for i, a := range acks {
		if err := p.checkAck(member, a); err != nil {
			return err
		}
		if i > 0 && a.First <= prev {
			return ErrInvalidAck
		}
		prev = a.Last
	}
	for _, a := range acks {
		p.applyAck(a, now)
	}
	p.advance()
	return nil
}

// checkAck validates one batch without changing anything.
func (p *Partition) checkAck(member string, a Ack) error {
	n := a.Last - a.First + 1
	if a.First > a.Last || (len(a.Types) != 1 && int64(len(a.Types)) != n) {
		return ErrInvalidAck
	}
	for _, t := range a.Types {
		if t < AckGap || t > AckRenew {
			return ErrInvalidAck
		}
	}
	if a.First < p.start || a.Last >= p.EndOffset() {
		return ErrInvalidRecordState
	}
	for off := a.First; off <= a.Last; off++ {
		if r := p.recs[off-p.start]; r.state != Acquired || r.member != member {
			return ErrInvalidRecordState
		}
	}
	return nil
}

// applyAck applies one checked batch.
func (p *Partition) applyAck(a Ack, now int64) {
	for off := a.First; off <= a.Last; off++ {
		t := a.Types[0]
		if len(a.Types) > 1 {
			t = a.Types[off-a.First]
		}
		r := &p.recs[off-p.start]
		switch t {
		case AckAccept:
			*r = rec{state: Acknowledged, count: r.count}
		case AckRelease:
			p.release(r)
		case AckReject, AckGap:
			*r = rec{state: Archived, count: r.count}
		case AckRenew:
			r.deadline = now + p.cfg.LockDurationMs
			continue // a renewal is not persisted: a new leader redelivers anyway
		}
		p.dirty = true
	}
}

// release makes an acquired record Available again, or Archived once it
// has been delivered DeliveryLimit times.
func (p *Partition) release(r *rec) {
	st := Available
	if r.count >= p.cfg.DeliveryLimit {
		st = Archived
	}
	*r = rec{state: st, count: r.count}
}

// ExpireLocks releases every record whose lock expired at or before now;
// it reports how many.
func (p *Partition) ExpireLocks(now int64) int {
	n := 0
	for i := range p.recs {
		if r := &p.recs[i]; r.state == Acquired && r.deadline <= now {
			p.release(r)
			n++
		}
	}
	if n > 0 {
		p.dirty = true
		p.advance()
	}
	return n
}

// NextExpiry is the earliest lock expiry, or false with nothing acquired.
func (p *Partition) NextExpiry() (int64, bool) {
	var at int64
	found := false
	for _, r := range p.recs {
		if r.state == Acquired && (!found || r.deadline < at) {
			at, found = r.deadline, true
		}
	}
	return at, found
}

// ReleaseMember releases every record member holds (its share session
// ended); it reports how many.
func (p *Partition) ReleaseMember(member string) int {
	n := 0
	for i := range p.recs {
		if r := &p.recs[i]; r.state == Acquired && r.member == member {
			p.release(r)
			n++
		}
	}
	if n > 0 {
		p.dirty = true
		p.advance()
	}
	return n
}

// skipTo moves SPSO up to the log start offset: records the log no
// longer holds cannot be delivered.
func (p *Partition) skipTo(logStart int64) {
	if logStart <= p.start {
		return
	}
	drop := min(logStart-p.start, int64(len(p.recs)))
	p.recs = p.recs[drop:]
	p.start = logStart
	p.dirty = true
	p.advance()
}

// advance moves SPSO past the leading Acknowledged and Archived records.
func (p *Partition) advance() {
	i := 0
	for i < len(p.recs) && (p.recs[i].state == Acknowledged || p.recs[i].state == Archived) {
		i++
	}
	if i == 0 {
		return
	}
	p.start += int64(i)
	p.dirty = true
	if len(p.recs) == i {
		p.recs = nil // the whole window is done: let the array go
		return
	}
	p.recs = p.recs[i:]
	if cap(p.recs) > 2*p.cfg.MaxLocks {
		p.recs = append([]rec(nil), p.recs...)
	}
}

// Snapshot returns the state to persist and clears Dirty: SPSO and the
// window as runs of equal state and delivery count, acquired records as
// Available (a lock does not outlive its leader).
func (p *Partition) Snapshot(leaderEpoch int32) Snapshot {
	s := Snapshot{StateEpoch: p.stateEpoch, LeaderEpoch: leaderEpoch, StartOffset: p.start}
	for i, r := range p.recs {
		st := r.state
		if st == Acquired {
			st = Available
		}
		off := p.start + int64(i)
		if n := len(s.Batches); n > 0 && s.Batches[n-1].State == st && s.Batches[n-1].DeliveryCount == r.count {
			s.Batches[n-1].Last = off
			continue
		}
		s.Batches = append(s.Batches, Batch{First: off, Last: off, State: st, DeliveryCount: r.count})
	}
	p.dirty = false
	return s
}

// NextAcquirable is the first offset at or above logStart that Acquire
// would take: the first Available record between SPSO and SPEO, else
// SPEO. The caller reads the log from there.
func (p *Partition) NextAcquirable(logStart int64) int64 {
	for i, r := range p.recs {
		if off := p.start + int64(i); off >= logStart && r.state == Available {
			return off
		}
	}
	return max(p.EndOffset(), logStart)
}
