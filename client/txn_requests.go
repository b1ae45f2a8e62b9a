package client

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnRetriable reports whether a transactional request may succeed if
// sent again: IsRetriable's errors (the coordinator moved, is loading or
// unavailable; a lost connection), a request timeout, and
// CONCURRENT_TRANSACTIONS (the coordinator is still ending the previous
// transaction).
func txnRetriable(err error) bool {
	return IsRetriable(err) || errors.Is(err, ErrConcurrentTransactions) || errors.Is(err, context.DeadlineExceeded)
}

// initTxnID asks the transaction coordinator for the producer's identity
// (cur invalid) or for the next epoch of cur, retrying txnRetriable errors.
func (p *Producer) initTxnID(ctx context.Context, cur producerID) (producerID, error) {
	var id producerID
	err := retryWhile(ctx, p.cfg, txnRetriable, func(ctx context.Context) error {
		rctx, cancel := context.WithTimeout(ctx, p.cfg.requestTimeout)
		defer cancel()
		var err error
		id, err = p.requestProducerID(rctx, cur)
		return err
	})
	return id, err
}

// currentID is the producer's identity.
func (p *Producer) currentID() producerID {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.id
}

// txnRequest sends req to the transaction coordinator and returns the
// answer's error, as errOf reads it; an answer saying the coordinator
// moved makes the next request look it up again.
func (p *Producer) txnRequest(ctx context.Context, req kmsg.Request, errOf func(kmsg.Response) error) error {
	resp, err := p.txnCoord.request(ctx, classDefault, req, 0)
	if err != nil {
		return err
	}
	if err := errOf(resp); err != nil {
		p.txnCoord.noteErr(err)
		return err
	}
	return nil
}

// endTxn commits or aborts the open transaction (EndTxn), retrying
// txnRetriable errors until ctx ends.
func (p *Producer) endTxn(ctx context.Context, commit bool) error {
	return retryWhile(ctx, p.cfg, txnRetriable, func(ctx context.Context) error {
		id := p.currentID()
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = p.cfg.txnID, id.id, id.epoch, commit
		return p.txnRequest(ctx, req, func(r kmsg.Response) error {
			return kafkaErr(r.(*kmsg.EndTxnResponse).ErrorCode, nil)
		})
	})
}

// partsToAddLocked picks the partitions with records in the open
// transaction that are not added to it yet, and marks an addPartitions
// goroutine as running for them; nil when there is nothing to add or one
// already runs. The context bounds that goroutine: DeliveryTimeout, Close
// or AbortTransaction.
func (p *Producer) partsToAddLocked() ([]tp, context.Context) {
	if p.cfg.txnID == "" || p.adding || p.fatal != nil || p.txnErr != nil || p.idState != idReady {
		return nil, nil
	}
	var add []tp
	for _, ps := range p.order {
		if p.txnParts[ps.tp] {
			continue
		}
		if len(ps.pending) > 0 || slices.ContainsFunc(ps.queue, func(b *batch) bool { return !b.done }) {
			add = append(add, ps.tp)
		}
	}
	if len(add) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.deliveryTimeout)
	p.adding, p.addDone, p.addCancel, p.txnMaybe = true, make(chan struct{}), cancel, true
	return add, ctx
}

// addPartitions adds partitions to the open transaction
// (AddPartitionsToTxn), retrying txnRetriable errors until ctx ends; the
// sender then sends their batches. A failure makes the transaction
// abortable, or the producer fenced.
func (p *Producer) addPartitions(ctx context.Context, parts []tp) {
	defer p.wg.Done()
	err := retryWhile(ctx, p.cfg, txnRetriable, func(ctx context.Context) error {
		return p.addPartitionsOnce(ctx, parts)
	})
	p.mu.Lock()
	p.addCancel()
	p.adding, p.addCancel = false, nil
	close(p.addDone)
	switch {
	case err == nil:
		for _, t := range parts {
			p.txnParts[t] = true
		}
		p.log.Debug("partitions added to the transaction", "partitions", len(parts))
	case p.ctx.Err() == nil:
		p.txnFailLocked(err)
	}
	p.mu.Unlock()
	p.wakeSender()
}

// addPartitionsOnce sends one AddPartitionsToTxn. Its error is the first
// partition's failure other than OPERATION_NOT_ATTEMPTED (which the
// coordinator gives the others of a request it refused).
func (p *Producer) addPartitionsOnce(ctx context.Context, parts []tp) error {
	id := p.currentID()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = p.cfg.txnID, id.id, id.epoch
	idx := map[string]int{}
	for _, t := range parts {
		i, ok := idx[t.topic]
		if !ok {
			i = len(req.Topics)
			idx[t.topic] = i
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic = t.topic
			req.Topics = append(req.Topics, rt)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, t.partition)
	}
	return p.txnRequest(ctx, req, func(r kmsg.Response) error {
		var first error
		for _, rt := range r.(*kmsg.AddPartitionsToTxnResponse).Topics {
			for _, rp := range rt.Partitions {
				err := kafkaErr(rp.ErrorCode, nil)
				if err != nil && (first == nil || errors.Is(first, ErrOperationNotAttempted)) {
					first = fmt.Errorf("add %s[%d] to the transaction: %w", rt.Topic, rp.Partition, err)
				}
			}
		}
		return first
	})
}
