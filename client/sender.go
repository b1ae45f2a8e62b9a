package client

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/record"
)

// produceReq is one produce request the sender planned: at most one batch
// per partition (Kafka's rule for v2 batches).
type produceReq struct {
	node    int32
	batches []*batch
}

// run is the sender goroutine. Each turn it looks at the whole state under
// the lock (planLocked: close lingering batches, expire old ones, number
// and pick batches to send), then writes the requests outside the lock and
// sleeps until the next deadline or until something changes.
func (p *Producer) run() {
	defer p.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		p.mu.Lock()
		reqs, next, startInit := p.planLocked(time.Now())
		p.mu.Unlock()
		if startInit {
			p.wg.Add(1) // run holds a count, so this cannot race with Close's Wait
			go p.initProducerID()
		}
		for _, r := range reqs {
			p.send(r)
		}
		if next.IsZero() {
			timer.Stop()
		} else {
			timer.Reset(max(time.Until(next), 0))
		}
		select {
		case <-p.quit: // Close: everything is delivered or failed
			return
		case <-p.wake: // a record, a response, a Flush or new metadata
		case <-timer.C: // a linger, backoff or delivery deadline
		}
	}
}

// planLocked is one turn of the sender's decisions. It returns the requests
// to write, the next time it must look again (zero for none), and whether
// to start asking for a producer id.
func (p *Producer) planLocked(now time.Time) (reqs []produceReq, next time.Time, startInit bool) {
	consider := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}

	// P4: a partition's pending records close when the oldest has waited
	// Linger (or at once while a Flush runs).
	for _, ps := range p.order {
		if len(ps.pending) == 0 {
			continue
		}
		due := ps.oldest.Add(p.cfg.linger)
		if p.flushing > 0 || !now.Before(due) {
			p.closePendingLocked(ps)
		} else {
			consider(due)
		}
	}

	// Batches not in flight fail once their delivery timeout passes. One in
	// flight waits for its answer (bounded by RequestTimeout) first.
	for _, ps := range p.order {
		expired := false
		for _, b := range ps.queue {
			if b.done || b.inflight {
				continue
			}
			if dl := b.deadline(p.cfg.deliveryTimeout); now.Before(dl) {
				consider(dl)
			} else {
				p.failBatchLocked(b, &DeliveryTimeoutError{Topic: ps.tp.topic, Partition: ps.tp.partition, Last: b.lastErr})
				expired = true
			}
		}
		if expired {
			p.popDoneLocked(ps)
		}
	}
	if p.fatal != nil {
		return nil, next, false
	}

	if p.cfg.idempotent {
		if p.needReset && p.resetReadyLocked() {
			p.resetLocked()
		}
		if p.idState == idNone {
			p.idState = idPending
			startInit = true
		}
		if p.idState != idReady {
			return nil, next, startInit
		}
	}

	// A partition whose failed round has drained resumes from its first
	// unfinished batch; sequences freed by batches known not written are
	// given to the batches after them.
	for _, ps := range p.order {
		if ps.rewind && ps.inflight == 0 {
			ps.rewind = false
			p.resequenceLocked(ps)
		}
	}

	refresh := false
	for {
		byNode := map[int32]*produceReq{}
		var nodes []int32
		for _, ps := range p.order {
			b := p.sendableLocked(ps, now, consider)
			if b == nil {
				continue
			}
			node, _, ok := p.cl.leader(ps.tp.topic, ps.tp.partition)
			if !ok {
				refresh = true
				continue
			}
			if ps.inflight > 0 && ps.broker != node {
				// Keep a partition on one connection, where answers come
				// in order: wait for the old leader's answers first.
				continue
			}
			r := byNode[node]
			if r == nil {
				if p.inflight[node] >= p.cfg.maxInFlight {
					continue
				}
				p.inflight[node]++
				r = &produceReq{node: node}
				byNode[node] = r
				nodes = append(nodes, node)
			}
			p.numberLocked(b)
			b.inflight = true
			b.attempts++
			ps.inflight++
			ps.broker = node
			r.batches = append(r.batches, b)
		}
		if len(nodes) == 0 {
			break
		}
		for _, n := range nodes {
			reqs = append(reqs, *byNode[n])
		}
	}
	if refresh {
		p.cl.triggerRefresh()
	}
	return reqs, next, false
}

// sendableLocked returns the partition's next batch to send, if it may be
// sent now.
func (p *Producer) sendableLocked(ps *partState, now time.Time, consider func(time.Time)) *batch {
	if ps.rewind {
		return nil
	}
	var b *batch
	for _, c := range ps.queue {
		if c.inflight && c.attempts > 1 {
			return nil // a retry is in flight: it goes alone (see below)
		}
		if !c.done && !c.inflight {
			b = c
			break
		}
	}
	if b == nil {
		return nil
	}
	if b.attempts > 0 && ps.inflight > 0 {
		// A retry goes alone, with nothing of its partition in flight
		// before or after it. Only the batches that were in flight when it
		// failed (at most 4) can have been written after it, so if it was
		// written too the broker still holds it in its window of the last
		// 5 batches and answers the retry as a duplicate.
		return nil
	}
	if now.Before(ps.retryAt) {
		consider(ps.retryAt)
		return nil
	}
	if p.needReset && !(b.seqd && b.maybeWritten && b.id == p.id) {
		// Before the epoch moves on, only batches that may already be in
		// the log are retried, under their old numbers, to learn their
		// fate; nothing new is numbered.
		return nil
	}
	return b
}

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
	p.needReset = false
	for _, ps := range p.order {
		ps.nextSeq, ps.ackedSeq = 0, 0
		for _, b := range ps.queue {
			if !b.done {
				b.seqd, b.wire, b.maybeWritten = false, nil, false
			}
		}
	}
	if p.cfg.txnName != "" || p.id.id < 0 || p.id.epoch == 1<<15-1 {
		p.idState = idNone
	} else {
		p.id.epoch++
	}
	p.log.Info("producer epoch reset after an ambiguous failure", "producer_id", p.id.id, "epoch", p.id.epoch)
}

// backoff is the wait before the attempt after `attempts`, with jitter.
func (p *Producer) backoff(attempts int) time.Duration {
	d := p.cfg.retryBackoff
	for i := 1; i < attempts && d < p.cfg.retryBackoffMax; i++ {
		d *= 2
	}
	d = min(d, p.cfg.retryBackoffMax)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// send encodes and writes one planned request. Called without the lock.
func (p *Producer) send(r produceReq) {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = int16(p.cfg.acks)
	req.TimeoutMillis = int32(p.cfg.requestTimeout / time.Millisecond)
	var failed []*batch
	var failErrs []error
	var sent []*batch
	topicIdx := map[string]int{}
	for _, b := range r.batches {
		if b.wire == nil {
			wire, err := p.build(b)
			if err != nil {
				failed, failErrs = append(failed, b), append(failErrs, err)
				continue
			}
			b.wire = wire
		}
		i, ok := topicIdx[b.part.tp.topic]
		if !ok {
			i = len(req.Topics)
			topicIdx[b.part.tp.topic] = i
			t := kmsg.NewProduceRequestTopic()
			t.Topic = b.part.tp.topic
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = b.part.tp.partition
		rp.Records = b.wire
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		sent = append(sent, b)
	}
	if len(failed) > 0 {
		p.mu.Lock()
		for i, b := range failed {
			b.inflight = false
			b.part.inflight--
			p.failBatchLocked(b, failErrs[i])
			p.popDoneLocked(b.part)
		}
		if len(sent) == 0 {
			p.inflight[r.node]--
		}
		p.mu.Unlock()
		if len(sent) == 0 {
			return
		}
		r.batches = sent
	}
	p.cl.send(r.node, &call{req: req, cb: func(resp kmsg.Response, err error) {
		p.handleProduce(r, resp, err)
	}})
}

// build encodes a batch for its current identity and sequence.
func (p *Producer) build(b *batch) ([]byte, error) {
	opts := record.PlainBatch(int(p.cfg.compression))
	if b.seqd {
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = b.id.id, b.id.epoch, b.seq
	}
	recs := make([]record.Record, len(b.recs))
	for i, pr := range b.recs {
		r := pr.r
		rec := record.Record{Timestamp: r.Timestamp.UnixMilli(), Key: r.Key, Value: r.Value}
		if len(r.Headers) > 0 {
			rec.Headers = make([]record.RecordHeader, len(r.Headers))
			for j, h := range r.Headers {
				rec.Headers[j] = record.RecordHeader{Key: h.Key, Value: h.Value}
			}
		}
		recs[i] = rec
	}
	return record.AppendBatch(nil, opts, recs)
}

// handleProduce applies a produce response (or the request's failure) to
// its batches. It runs on a connection goroutine.
func (p *Producer) handleProduce(r produceReq, resp kmsg.Response, err error) {
	p.mu.Lock()
	p.inflight[r.node]--
	now := time.Now()
	refresh := false
	presp, _ := resp.(*kmsg.ProduceResponse)
	for _, b := range r.batches {
		ps := b.part
		b.inflight = false
		ps.inflight--
		if b.done {
			continue // failed while in flight (fenced or closed)
		}
		switch {
		case err != nil:
			var ve *VersionError
			if errors.As(err, &ve) {
				p.failBatchLocked(b, err)
				break
			}
			var ce *ConnError
			if !errors.As(err, &ce) || ce.written {
				b.maybeWritten = true
			}
			refresh = true
			p.retryLocked(b, err, now)
		case presp == nil: // acks=0: written is all we learn
			p.succeedLocked(b, -1)
		default:
			pr, ok := findProduced(presp, ps.tp)
			if !ok {
				b.maybeWritten = true
				p.retryLocked(b, fmt.Errorf("client: produce response lacks %s[%d]", ps.tp.topic, ps.tp.partition), now)
				break
			}
			if p.applyCodeLocked(b, pr, now) {
				refresh = true
			}
		}
		p.popDoneLocked(ps)
	}
	p.mu.Unlock()
	if refresh {
		p.cl.triggerRefresh()
	}
	p.wakeSender()
}

func findProduced(resp *kmsg.ProduceResponse, t tp) (*kmsg.ProduceResponseTopicPartition, bool) {
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		if rt.Topic != t.topic {
			continue
		}
		for j := range rt.Partitions {
			if rt.Partitions[j].Partition == t.partition {
				return &rt.Partitions[j], true
			}
		}
	}
	return nil, false
}

// applyCodeLocked applies one partition's answer. It reports whether the
// answer says our metadata is stale.
func (p *Producer) applyCodeLocked(b *batch, pr *kmsg.ProduceResponseTopicPartition, now time.Time) bool {
	ps := b.part
	code := pr.ErrorCode
	err := kafkaErr(code, pr.ErrorMessage)
	switch code {
	case 0:
		p.succeedLocked(b, pr.BaseOffset)
	case ErrDuplicateSequence.Code:
		// Written before; the broker no longer knows where.
		p.succeedLocked(b, -1)
	case ErrOutOfOrderSequence.Code:
		// Had any attempt been written, this one would be a duplicate.
		b.maybeWritten = false
		if ps.rewind || p.needReset {
			// An earlier batch of this partition failed in this round,
			// or one whose fate was unknown failed: this one was refused
			// for following it. It is now known not written, and is
			// resent (renumbered if need be) after the failed one.
			p.retryLocked(b, err, now)
		} else {
			// The broker lost track of us: fail the batch (as Kafka's
			// producer does) and continue under a new epoch.
			p.needReset = p.cfg.idempotent
			p.failBatchLocked(b, err)
		}
	case ErrInvalidProducerEpoch.Code, ErrProducerFencedCode.Code:
		p.setFatalLocked(&FencedError{ProducerID: b.id.id, ProducerEpoch: b.id.epoch, Err: err})
	case ErrUnknownProducerID.Code:
		p.needReset = p.cfg.idempotent
		p.retryLocked(b, err, now)
	default:
		switch code {
		case ErrRequestTimedOut.Code, ErrNotEnoughReplicasAfter.Code, ErrNetworkException.Code, ErrUnknownServerError.Code:
			b.maybeWritten = true // the broker may have appended before failing
		}
		if !IsRetriable(err) {
			p.failBatchLocked(b, err)
			return false
		}
		p.retryLocked(b, err, now)
		switch code {
		case ErrUnknownTopicOrPartition.Code, ErrLeaderNotAvailable.Code, ErrNotLeaderOrFollower.Code,
			ErrFencedLeaderEpoch.Code, ErrUnknownLeaderEpoch.Code, ErrKafkaStorageError.Code:
			return true
		}
	}
	return false
}

// succeedLocked completes a batch: record i gets offset base+i (P6).
func (p *Producer) succeedLocked(b *batch, base int64) {
	b.done = true
	for i, pr := range b.recs {
		if base >= 0 {
			pr.r.Offset = base + int64(i)
		} else {
			pr.r.Offset = -1
		}
	}
}

// retryLocked schedules a batch for another attempt after a backoff, or
// fails it if its delivery timeout has passed. Everything of the partition
// behind it waits and is resent after it, in order.
func (p *Producer) retryLocked(b *batch, err error, now time.Time) {
	ps := b.part
	b.lastErr = err
	ps.rewind = true
	if !now.Before(b.deadline(p.cfg.deliveryTimeout)) {
		p.failBatchLocked(b, &DeliveryTimeoutError{Topic: ps.tp.topic, Partition: ps.tp.partition, Last: err})
		return
	}
	if t := now.Add(p.backoff(b.attempts)); t.After(ps.retryAt) {
		ps.retryAt = t
	}
	p.log.Debug("retrying batch", "topic", ps.tp.topic, "partition", ps.tp.partition, "attempt", b.attempts, "err", err)
}

// failBatchLocked fails every record of a batch with the same error (P7).
// Its sequence is not acknowledged: the partition's later batches are
// renumbered once its in-flight batches are back. If the batch may be in
// the log, its sequences are ambiguous and the producer moves to a new
// epoch first.
func (p *Producer) failBatchLocked(b *batch, err error) {
	b.done, b.err = true, err
	if b.seqd {
		b.part.rewind = true
		if b.maybeWritten && p.cfg.idempotent {
			p.needReset = true
		}
	}
}

// setFatalLocked makes the producer unusable: err fails every record.
func (p *Producer) setFatalLocked(err error) {
	if p.fatal != nil {
		return
	}
	p.fatal = err
	p.log.Error("producer failed", "err", err)
	p.failAllLocked(err)
}
