package coordhost

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/txncoord"
)

// maxMarkersPerRequest bounds the markers of one WriteTxnMarkers.
const maxMarkersPerRequest = 256

// queuedMarker is one transaction's markers for the partitions a remote
// node leads, waiting for its WriteTxnMarkers.
type queuedMarker struct {
	ctx  context.Context // the caller's: a marker whose caller left is not sent
	m    txncoord.Marker
	tps  []txncoord.TopicPartition
	done chan error // buffered, one: the outcome
}

// markerQueue holds the markers waiting for one remote node.
type markerQueue struct {
	pending []*queuedMarker
	sending bool // a sender goroutine runs for the node
}

// writeRemote writes m into tps, led by the remote node leader, with
// WriteTxnMarkers. The markers of every transaction that waits for the
// same node while a request to it is in flight go in its next request,
// as Kafka's coordinator batches them per broker: a request per node at a
// time, however many transactions end.
func (w *markerWriter) writeRemote(ctx context.Context, leader int32, m txncoord.Marker, tps []txncoord.TopicPartition) error {
	q := &queuedMarker{ctx: ctx, m: m, tps: tps, done: make(chan error, 1)}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return fmt.Errorf("%w: the node is stopping", kerr.NotCoordinator)
	}
	mq := w.queues[leader]
	if mq == nil {
		mq = &markerQueue{}
		w.queues[leader] = mq
	}
	mq.pending = append(mq.pending, q)
	if !mq.sending {
		mq.sending = true
		w.senders.Add(1)
		go w.send(leader, mq)
	}
	w.mu.Unlock()
	select {
	case err := <-q.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// send sends the markers queued for leader, a request at a time, until
// none is left. Each request is bounded by the request timeout; close
// waits for the senders.
func (w *markerWriter) send(leader int32, mq *markerQueue) {
	defer w.senders.Done()
	for {
		w.mu.Lock()
		var batch, rest []*queuedMarker
		for _, q := range mq.pending {
			switch {
			case q.ctx.Err() != nil:
				q.done <- q.ctx.Err()
			case len(batch) < maxMarkersPerRequest:
				batch = append(batch, q)
			default:
				rest = append(rest, q)
			}
		}
		mq.pending = rest
		if len(batch) == 0 {
			mq.pending, mq.sending = nil, false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		errs := w.sendBatch(leader, batch)
		for i, q := range batch {
			q.done <- errs[i]
		}
	}
}

// sendBatch sends one WriteTxnMarkers to leader with a marker per queued
// transaction and returns each one's outcome, in order.
func (w *markerWriter) sendBatch(leader int32, batch []*queuedMarker) []error {
	errs := make([]error, len(batch))
	fail := func(err error) []error {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	cl, err := w.client(leader, true)
	if err != nil {
		return fail(err)
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	for _, q := range batch {
		req.Markers = append(req.Markers, markerRequest(q.m, q.tps))
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.h.cfg.Tuning.Request)
	defer cancel()
	resp, err := requestNode(ctx, cl, req)
	if err != nil {
		return fail(fmt.Errorf("WriteTxnMarkers to node %d: %w", leader, err))
	}
	markers := resp.(*kmsg.WriteTxnMarkersResponse).Markers
	if len(markers) != len(batch) {
		return fail(fmt.Errorf("%w: node %d answered %d markers of %d", kerr.UnknownServerError, leader, len(markers), len(batch)))
	}
	for i, rm := range markers {
		errs[i] = markerErrors(leader, rm)
	}
	return errs
}

// markerRequest is the WriteTxnMarkers marker of m for tps.
func markerRequest(m txncoord.Marker, tps []txncoord.TopicPartition) kmsg.WriteTxnMarkersRequestMarker {
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed, mk.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
	mk.TransactionVersion = int8(m.TxnVersion) // WriteTxnMarkers v2; older versions leave it out
	for _, tp := range tps {
		t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		t.Topic, t.Partitions = tp.Topic, []int32{tp.Partition}
		mk.Topics = append(mk.Topics, t)
	}
	return mk
}

// markerErrors joins the errors of one marker's partitions.
func markerErrors(leader int32, rm kmsg.WriteTxnMarkersResponseMarker) error {
	var errs []error
	for _, t := range rm.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				errs = append(errs, fmt.Errorf("%s-%d on node %d: %w", t.Topic, p.Partition, leader, err))
			}
		}
	}
	return errors.Join(errs...)
}
