package broker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/partition"
	"github.com/minikafka/minikafka-go/txncoord"
)

// txnCoordinators are the transaction coordinators this node runs: one for
// each partition of __transaction_state it leads. Like the group
// coordinators, one starts once its partition's new leader has applied
// every entry of earlier terms (until then COORDINATOR_LOAD_IN_PROGRESS)
// and closes when the leadership is lost.
type txnCoordinators struct {
	n       *Node
	markers *markerWriter

	// mu guards slots and closed. Coordinators are created and closed
	// outside it.
	mu     sync.Mutex
	slots  map[int32]*txnSlot // by partition of __transaction_state
	closed bool
}

// txnSlot is one led partition's coordinator.
type txnSlot struct {
	term  uint64
	coord *txncoord.Coordinator // nil while loading
}

func newTxnCoordinators(n *Node) *txnCoordinators {
	return &txnCoordinators{n: n, markers: newMarkerWriter(n), slots: make(map[int32]*txnSlot)}
}

// leadership follows this node's leadership of one __transaction_state
// replica: a gain starts loading a coordinator, a loss closes it.
func (ts *txnCoordinators) leadership(lr *localReplica, leader bool, term uint64) {
	p := lr.info.Partition
	ts.mu.Lock()
	old := ts.slots[p]
	delete(ts.slots, p)
	if leader && !ts.closed {
		ts.slots[p] = &txnSlot{term: term}
	}
	ts.mu.Unlock()
	if old != nil && old.coord != nil {
		ts.n.wg.Add(1)
		go func() { // not on Raft's goroutine, which Close's writes may need
			defer ts.n.wg.Done()
			old.coord.Close()
		}()
	}
	if leader {
		ts.n.wg.Add(1)
		go ts.load(lr, term)
	}
}

// load starts the coordinator of a partition this node leads in term,
// once the leader has settled; it gives up when the term ends.
func (ts *txnCoordinators) load(lr *localReplica, term uint64) {
	defer ts.n.wg.Done()
	n := ts.n
	select { // the leadership callback can come before OpenReplica returns
	case <-lr.ready:
	case <-n.ctx.Done():
		return
	}
	for {
		if n.ctx.Err() != nil || !ts.current(lr.info.Partition, term) {
			return
		}
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Tuning.ProduceEnqueue)
		err := lr.rep.Settle(ctx, n.cfg.Tuning.ProduceEnqueue)
		cancel()
		if err == nil {
			break
		}
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(n.cfg.Tuning.LeaderReportRetry):
		}
	}
	c, err := txncoord.New(ts.config(), txnLog{lr.rep, n.cfg.Tuning.ProduceEnqueue}, lr.txnView, ts.markers, int32(term))
	if err != nil {
		n.logger.Error("transaction coordinator not started", "partition", lr.info.Partition, "err", err)
		return
	}
	ts.mu.Lock()
	slot := ts.slots[lr.info.Partition]
	if ts.closed || slot == nil || slot.term != term {
		ts.mu.Unlock()
		c.Close() // the leadership ended while loading
		return
	}
	slot.coord = c
	ts.mu.Unlock()
	n.logger.Debug("transaction coordinator started", "partition", lr.info.Partition, "epoch", term)
}

// current reports whether p is still led in term.
func (ts *txnCoordinators) current(p int32, term uint64) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	s := ts.slots[p]
	return s != nil && s.term == term
}

// config is the coordinators' configuration from the node's.
func (ts *txnCoordinators) config() txncoord.Config {
	n := ts.n
	return txncoord.Config{
		MaxTimeout:    n.cfg.TxnMaxTimeout,
		CommitTimeout: n.cfg.Tuning.ProduceEnqueue,
		AbortInterval: n.cfg.TxnAbortInterval,
		NewProducerID: func(ctx context.Context) (int64, error) {
			r, err := n.proposeMeta(ctx, metadata.AllocateProducerID{})
			return r.ProducerID, err
		},
		TopicExists: func(topic string, p int32) bool {
			_, ok := n.meta.fsm.State().Partition(topic, p)
			return ok
		},
		OffsetsPartition: func(group string) (txncoord.TopicPartition, bool) {
			t, ok := n.meta.fsm.State().Topic(metadata.ConsumerOffsetsTopic)
			if !ok {
				return txncoord.TopicPartition{}, false
			}
			return txncoord.TopicPartition{Topic: t.Name, Partition: metadata.GroupPartition(group, int32(len(t.Partitions)))}, true
		},
		Logger: n.logger.With("component", "txncoord"),
	}
}

// get returns the coordinator of partition p of __transaction_state, or
// the error to answer.
func (ts *txnCoordinators) get(p int32) (*txncoord.Coordinator, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	s := ts.slots[p]
	switch {
	case s == nil:
		return nil, fmt.Errorf("%w: node %d does not lead %s-%d", kerr.NotCoordinator, ts.n.cfg.NodeID, metadata.TransactionStateTopic, p)
	case s.coord == nil:
		return nil, fmt.Errorf("%w: %s-%d is loading", kerr.CoordinatorLoadInProgress, metadata.TransactionStateTopic, p)
	}
	return s.coord, nil
}

// all returns every running coordinator, and COORDINATOR_LOAD_IN_PROGRESS
// with them while one is loading.
func (ts *txnCoordinators) all() ([]kafkaapi.TxnDescriber, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var out []kafkaapi.TxnDescriber
	var err error
	for _, s := range ts.slots {
		if s.coord == nil {
			err = kerr.CoordinatorLoadInProgress
			continue
		}
		out = append(out, s.coord)
	}
	return out, err
}

// close closes every coordinator; no new one starts after it.
func (ts *txnCoordinators) close() {
	ts.mu.Lock()
	ts.closed = true
	slots := ts.slots
	ts.slots = make(map[int32]*txnSlot)
	ts.mu.Unlock()
	for _, s := range slots {
		if s.coord != nil {
			s.coord.Close()
		}
	}
	ts.markers.close()
}

// txnLog is the txncoord.Log of a __transaction_state replica.
type txnLog struct {
	rep     *partition.Replica
	enqueue time.Duration
}

func (l txnLog) Append(ctx context.Context, recs []txncoord.Record) error {
	grecs := make([]groupcoord.Record, len(recs))
	for i, r := range recs {
		grecs[i] = groupcoord.Record{Key: r.Key, Value: r.Value}
	}
	return offsetsLog(l).Append(ctx, grecs)
}

// txnViewSink feeds a __transaction_state replica's records to its view. A
// record the view cannot read leaves it unchanged on every replica alike.
type txnViewSink struct {
	view   *txncoord.View
	logger interface{ Warn(string, ...any) }
}

func (s txnViewSink) Reset() { s.view.Reset() }

func (s txnViewSink) Record(key, value []byte) {
	if err := s.view.Apply(key, value); err != nil {
		s.logger.Warn("record of __transaction_state skipped", "err", err)
	}
}
