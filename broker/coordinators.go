package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/partition"
	"github.com/minikafka/minikafka-go/record"
)

// coordinators are the group coordinators this node runs: one for each
// partition of __consumer_offsets it leads. A coordinator starts once its
// partition's new leader has applied every entry of earlier terms (until
// then its view is behind, and requests are answered
// COORDINATOR_LOAD_IN_PROGRESS), and closes when the leadership is lost.
type coordinators struct {
	n *Node

	// mu guards slots and closed. Coordinators are created and closed
	// outside it.
	mu     sync.Mutex
	slots  map[int32]*coordSlot // by partition of __consumer_offsets
	closed bool
}

// coordSlot is one led partition's coordinator.
type coordSlot struct {
	term  uint64
	coord *groupcoord.Coordinator // nil while loading
}

func newCoordinators(n *Node) *coordinators {
	return &coordinators{n: n, slots: make(map[int32]*coordSlot)}
}

// leadership follows this node's leadership of one __consumer_offsets
// replica (replicaSet.onLeader): a gain starts loading a coordinator, a
// loss closes it.
func (cs *coordinators) leadership(lr *localReplica, leader bool, term uint64) {
	p := lr.info.Partition
	cs.mu.Lock()
	old := cs.slots[p]
	delete(cs.slots, p)
	if leader && !cs.closed {
		cs.slots[p] = &coordSlot{term: term}
	}
	cs.mu.Unlock()
	if old != nil && old.coord != nil {
		// Not on this goroutine, which Raft may need to resolve the
		// writes Close waits for.
		cs.n.wg.Add(1)
		go func() {
			defer cs.n.wg.Done()
			old.coord.Close()
		}()
	}
	if leader {
		cs.n.wg.Add(1)
		go cs.load(lr, term)
	}
}

// load starts the coordinator of a partition this node leads in term,
// once the leader has settled; it gives up when the term ends.
func (cs *coordinators) load(lr *localReplica, term uint64) {
	defer cs.n.wg.Done()
	select { // the leadership callback can come before OpenReplica returns
	case <-lr.ready:
	case <-cs.n.ctx.Done():
		return
	}
	for {
		if cs.n.ctx.Err() != nil || !cs.current(lr.info.Partition, term) {
			return
		}
		ctx, cancel := context.WithTimeout(cs.n.ctx, cs.n.cfg.Tuning.ProduceEnqueue)
		err := lr.rep.Settle(ctx, cs.n.cfg.Tuning.ProduceEnqueue)
		cancel()
		if err == nil {
			break
		}
		cs.n.logger.Debug("group coordinator waits for its partition to settle", "partition", lr.info.Partition, "err", err)
		select {
		case <-cs.n.ctx.Done():
			return
		case <-time.After(cs.n.cfg.Tuning.LeaderReportRetry):
		}
	}
	c, err := groupcoord.New(cs.config(), offsetsLog{lr.rep, cs.n.cfg.Tuning.ProduceEnqueue}, lr.view)
	if err != nil {
		cs.n.logger.Error("group coordinator not started", "partition", lr.info.Partition, "err", err)
		return
	}
	cs.mu.Lock()
	slot := cs.slots[lr.info.Partition]
	if cs.closed || slot == nil || slot.term != term {
		cs.mu.Unlock()
		c.Close() // the leadership ended while loading
		return
	}
	slot.coord = c
	cs.mu.Unlock()
	cs.n.logger.Debug("group coordinator started", "partition", lr.info.Partition, "epoch", term)
}

// current reports whether p is still led in term.
func (cs *coordinators) current(p int32, term uint64) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	s := cs.slots[p]
	return s != nil && s.term == term
}

// config is the coordinators' configuration from the node's.
func (cs *coordinators) config() groupcoord.Config {
	c := cs.n.cfg
	delay := c.GroupInitialRebalanceDelay
	if delay == 0 {
		delay = -1 // groupcoord: negative is none, zero its default
	}
	return groupcoord.Config{
		MinSessionTimeout:     c.GroupMinSessionTimeout,
		MaxSessionTimeout:     c.GroupMaxSessionTimeout,
		InitialRebalanceDelay: delay,
		// MaxRecordBytes keeps Kafka's message.max.bytes (1 MiB), which
		// bounds a group's protocol metadata in Kafka too.
		CommitTimeout: c.Tuning.ProduceEnqueue,
		TopicExists: func(topic string, p int32) bool {
			_, ok := cs.n.meta.fsm.State().Partition(topic, p)
			return ok
		},
		Logger: cs.n.logger.With("component", "groupcoord"),
	}
}

// get returns the coordinator of partition p of __consumer_offsets, or
// the error to answer.
func (cs *coordinators) get(p int32) (*groupcoord.Coordinator, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	s := cs.slots[p]
	switch {
	case s == nil:
		return nil, fmt.Errorf("%w: node %d does not lead %s-%d", kerr.NotCoordinator, cs.n.cfg.NodeID, metadata.ConsumerOffsetsTopic, p)
	case s.coord == nil:
		return nil, fmt.Errorf("%w: %s-%d is loading", kerr.CoordinatorLoadInProgress, metadata.ConsumerOffsetsTopic, p)
	}
	return s.coord, nil
}

// all returns every running coordinator, and COORDINATOR_LOAD_IN_PROGRESS
// with them while one is loading.
func (cs *coordinators) all() ([]kafkaapi.GroupCoordinator, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var out []kafkaapi.GroupCoordinator
	var err error
	for _, s := range cs.slots {
		if s.coord == nil {
			err = kerr.CoordinatorLoadInProgress
			continue
		}
		out = append(out, s.coord)
	}
	return out, err
}

// close closes every coordinator; no new one starts after it.
func (cs *coordinators) close() {
	cs.mu.Lock()
	cs.closed = true
	slots := cs.slots
	cs.slots = make(map[int32]*coordSlot)
	cs.mu.Unlock()
	for _, s := range slots {
		if s.coord != nil {
			s.coord.Close()
		}
	}
}

// offsetsLog is the groupcoord.Log of a __consumer_offsets replica: it
// proposes the records as one batch and returns once it is applied, which
// feeds the coordinator's view (partition.RecordSink).
type offsetsLog struct {
	rep     *partition.Replica
	enqueue time.Duration
}

func (l offsetsLog) Append(ctx context.Context, recs []groupcoord.Record) error {
	batch, err := groupcoord.AppendBatch(nil, recs, time.Now().UnixMilli())
	if err != nil {
		return err
	}
	enqueue := l.enqueue
	if d, ok := ctx.Deadline(); ok {
		enqueue = max(time.Until(d), time.Millisecond)
	}
	res, err := l.rep.Propose(batch, enqueue).Wait()
	return proposalError(res, err)
}

// AppendTxn implements groupcoord.TxnLog: the records go as one
// transactional batch of the producer, written as its coordinator
// (partition.Replica.ProposeCoordinator: sequence -1, epoch checked).
func (l offsetsLog) AppendTxn(ctx context.Context, pid int64, epoch int16, recs []groupcoord.Record) error {
	rs := make([]record.Record, len(recs))
	now := time.Now().UnixMilli()
	for i, r := range recs {
		rs[i] = record.Record{Timestamp: now, Key: r.Key, Value: r.Value}
	}
	batch, err := record.AppendBatch(nil, record.BatchOptions{ProducerID: pid, ProducerEpoch: epoch,
		BaseSequence: record.NoSequence, Transactional: true}, rs)
	if err != nil {
		return err
	}
	enqueue := l.enqueue
	if d, ok := ctx.Deadline(); ok {
		enqueue = max(time.Until(d), time.Millisecond)
	}
	res, err := l.rep.ProposeCoordinator(batch, enqueue).Wait()
	return proposalError(res, err)
}

// proposalError is the error of a proposal's outcome for a coordinator.
func proposalError(res *fsm.ProduceResult, err error) error {
	switch {
	case errors.Is(err, partition.ErrTimeout), errors.Is(err, partition.ErrMaybeCommitted):
		return fmt.Errorf("%w: %w", kerr.RequestTimedOut, err)
	case errors.Is(err, partition.ErrShutdown):
		return fmt.Errorf("%w: %w", kerr.NotLeaderForPartition, err)
	case err != nil:
		return err
	case res.Err != nil:
		return res.Err
	}
	return nil
}

// viewSink feeds a __consumer_offsets replica's records to its view. A
// record the view cannot read leaves it unchanged on every replica alike.
type viewSink struct {
	view   *groupcoord.View
	logger interface{ Warn(string, ...any) }
}

func (s viewSink) Reset() {
	if err := s.view.Restore(groupcoord.NewView().AppendSnapshot(nil)); err != nil {
		s.logger.Warn("reset of the group view failed", "err", err)
	}
}

var _ partition.TxnRecordSink = viewSink{}

func (s viewSink) TxnRecord(pid int64, key, value []byte) {
	if err := s.view.ApplyTxn(pid, key, value); err != nil && !errors.Is(err, groupcoord.ErrUnknownRecord) {
		s.logger.Warn("transactional record of __consumer_offsets skipped", "err", err)
	}
}

func (s viewSink) Marker(pid int64, commit bool) { s.view.Marker(pid, commit) }

func (s viewSink) Record(key, value []byte) {
	if err := s.view.Apply(key, value); err != nil && !errors.Is(err, groupcoord.ErrUnknownRecord) {
		s.logger.Warn("record of __consumer_offsets skipped", "err", err)
	}
}
