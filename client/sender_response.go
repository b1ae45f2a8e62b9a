package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

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
			p.recycleWireLocked(b)
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
		p.recycleWireLocked(b)
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
