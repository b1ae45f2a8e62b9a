package client

import (
	"math/rand/v2"
	"sync"
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
		add, addCtx := p.partsToAddLocked()
		p.mu.Unlock()
		if startInit {
			p.wg.Add(1) // run holds a count, so this cannot race with Close's Wait
			go p.initProducerID()
		}
		if add != nil {
			p.wg.Add(1) // as above
			go p.addPartitions(addCtx, add)
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
	p.closeLingeredLocked(now, consider)
	p.expireLocked(now, consider)
	if p.fatal != nil {
		return nil, next, false
	}

	if p.cfg.idempotent {
		switch {
		case p.cfg.txnID != "":
			// InitTransactions gets the identity; an abort moves the epoch on.
			p.planTxnLocked()
		case p.needReset && p.resetReadyLocked():
			p.resetLocked()
		}
		if p.idState == idNone && p.cfg.txnID == "" {
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

	reqs = p.assignLocked(now, consider)
	return reqs, next, false
}

// closeLingeredLocked closes a partition's pending records when the oldest
// has waited Linger, or at once while a Flush runs (P4).
func (p *Producer) closeLingeredLocked(now time.Time, consider func(time.Time)) {
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
}

// expireLocked fails the batches not in flight whose delivery timeout has
// passed. One in flight waits for its answer (bounded by RequestTimeout)
// first.
func (p *Producer) expireLocked(now time.Time, consider func(time.Time)) {
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
}

// assignLocked puts each partition's next sendable batch into a request to
// its leader, at most one batch per partition per request and MaxInFlight
// requests per broker, and repeats while that adds requests. A partition
// without a known leader asks for a metadata refresh.
func (p *Producer) assignLocked(now time.Time, consider func(time.Time)) []produceReq {
	var reqs []produceReq
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
	return reqs
}

// sendableLocked returns the partition's next batch to send, if it may be
// sent now.
func (p *Producer) sendableLocked(ps *partState, now time.Time, consider func(time.Time)) *batch {
	if ps.rewind || (p.cfg.txnID != "" && !p.txnParts[ps.tp]) {
		return nil // a transaction's partition is sent to once it is added
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
	if p.cfg.txnID != "" {
		// Kafka checks a transactional batch against the request's id
		// (and its ACLs, and whether the partition is in the transaction).
		req.TransactionID = kmsg.StringPtr(p.cfg.txnID)
	}
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
		opts.Transactional = p.cfg.txnID != ""
	}
	recs := make([]record.Record, len(b.recs))
	size := record.HeaderSize
	for i, pr := range b.recs {
		r := pr.r
		rec := record.Record{Timestamp: r.Timestamp.UnixMilli(), Key: r.Key, Value: r.Value}
		size += pr.size
		if len(r.Headers) > 0 {
			rec.Headers = make([]record.RecordHeader, len(r.Headers))
			for j, h := range r.Headers {
				rec.Headers[j] = record.RecordHeader{Key: h.Key, Value: h.Value}
				size += maxVarintLen*2 + len(h.Key) + len(h.Value)
			}
		}
		recs[i] = rec
	}
	// Uncompressed, the estimate (39 bytes of framing per record, more
	// than a record takes) sizes the buffer once: growing a MiB batch by
	// doubling copied and allocated about twice its size.
	var dst []byte
	if p.cfg.compression == NoCompression {
		dst = wireBuffer(size)
	}
	return record.AppendBatch(dst, opts, recs)
}

// wirePool holds the encoded batches of completed ones (*[]byte), so that
// a busy producer does not allocate, zero and collect a batch's MiB for
// every request: at 1 KiB records that was about a fifth of its CPU.
var wirePool sync.Pool

// wireBuffer is an empty buffer of at least size bytes, from the pool if
// it holds one large enough.
func wireBuffer(size int) []byte {
	if v, ok := wirePool.Get().(*[]byte); ok && cap(*v) >= size {
		return (*v)[:0]
	}
	return make([]byte, 0, size)
}

// recycleWireLocked gives a done batch's encoding back to the pool. Only
// once no request holds it: a request's frame is encoded when its
// connection writes it, and its callback (handleProduce, where this is
// called) comes after that or instead of it (conn.die takes the queued
// requests under the lock the encoding holds). Called with p.mu.
func (p *Producer) recycleWireLocked(b *batch) {
	if !b.done || b.inflight || b.wire == nil {
		return
	}
	w := b.wire[:0]
	b.wire = nil
	wirePool.Put(&w)
}

// maxVarintLen is the most bytes a varint of a 32-bit length takes.
const maxVarintLen = 5
