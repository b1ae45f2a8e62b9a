package client

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// initProducerID gets the producer's identity (or, for a transactional
// producer after an ambiguous failure, a bumped epoch), retrying retriable
// failures with backoff until it succeeds, fails for good, or Close.
func (p *Producer) initProducerID() {
	defer p.wg.Done()
	for attempt := 1; ; attempt++ {
		p.mu.Lock()
		cur := p.id
		p.mu.Unlock()

		ctx, cancel := context.WithTimeout(p.ctx, p.cfg.requestTimeout)
		id, err := p.requestProducerID(ctx, cur)
		cancel()
		if p.ctx.Err() != nil {
			return
		}
		if err == nil {
			p.mu.Lock()
			p.id = id
			p.idState = idReady
			p.mu.Unlock()
			p.log.Debug("producer id", "producer_id", id.id, "epoch", id.epoch)
			p.wakeSender()
			return
		}
		if !IsRetriable(err) && !errors.Is(err, context.DeadlineExceeded) {
			if errors.Is(err, ErrInvalidProducerEpoch) || errors.Is(err, ErrProducerFencedCode) {
				err = &FencedError{ProducerID: cur.id, ProducerEpoch: cur.epoch, Err: err}
			}
			p.mu.Lock()
			p.setFatalLocked(err)
			p.mu.Unlock()
			p.wakeSender()
			return
		}
		p.log.Debug("InitProducerID failed, retrying", "err", err, "attempt", attempt)
		t := time.NewTimer(p.backoff(attempt))
		select {
		case <-p.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// requestProducerID sends InitProducerID: to the transaction coordinator
// for a transactional producer, else to any broker. cur (if valid) asks
// for an epoch bump of that identity (KIP-360).
func (p *Producer) requestProducerID(ctx context.Context, cur producerID) (producerID, error) {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis = int32(p.cfg.txnTimeout / time.Millisecond)
	req.ProducerID, req.ProducerEpoch = cur.id, cur.epoch
	var resp kmsg.Response
	var err error
	if name := p.cfg.txnName + p.cfg.txnID; name != "" { // at most one is set
		req.TransactionalID = &name
		var node int32
		if node, err = p.cl.findCoordinator(ctx, 1, name); err != nil {
			return cur, err
		}
		resp, err = p.cl.request(ctx, node, req, 0)
	} else {
		resp, err = p.cl.requestAny(ctx, req)
	}
	if err != nil {
		return cur, err
	}
	r := resp.(*kmsg.InitProducerIDResponse)
	if err := kafkaErr(r.ErrorCode, nil); err != nil {
		return cur, err
	}
	return producerID{id: r.ProducerID, epoch: r.ProducerEpoch}, nil
}

// findCoordinator returns the node coordinating a group (keyType 0) or a
// transactional id (keyType 1), and makes sure the cluster can reach it.
func (c *cluster) findCoordinator(ctx context.Context, keyType int8, key string) (int32, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = keyType
	req.CoordinatorKey = key            // v0-3
	req.CoordinatorKeys = []string{key} // v4+
	resp, err := c.requestAny(ctx, req)
	if err != nil {
		return -1, err
	}
	r := resp.(*kmsg.FindCoordinatorResponse)
	code, msg, node, host, port := r.ErrorCode, r.ErrorMessage, r.NodeID, r.Host, r.Port
	if r.GetVersion() >= 4 {
		if len(r.Coordinators) != 1 {
			return -1, errors.New("client: FindCoordinator answered for no key")
		}
		k := r.Coordinators[0]
		code, msg, node, host, port = k.ErrorCode, k.ErrorMessage, k.NodeID, k.Host, k.Port
	}
	if err := kafkaErr(code, msg); err != nil {
		return -1, err
	}
	c.mu.Lock()
	if _, ok := c.brokers[node]; !ok {
		c.brokers[node] = brokerMeta{id: node, host: host, port: port}
	}
	c.mu.Unlock()
	return node, nil
}
