package broker

import (
	"context"
	"errors"
	"fmt"
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
// partition of __consumer_offsets it leads (ledCoords).
type coordinators struct {
	ledCoords[*groupCoord]
}

func newCoordinators(n *Node) *coordinators {
	cs := &coordinators{}
	cs.ledCoords = newLedCoords(n, metadata.ConsumerOffsetsTopic, "group coordinator", cs.start)
	return cs
}

// groupCoord is a running group coordinator with the sweeper of its
// partition's pending transactional commits (txnsweep.go).
type groupCoord struct {
	*groupcoord.Coordinator
	stop context.CancelFunc // stops the sweeper
	done chan struct{}      // closed when the sweeper has returned
}

// start starts the coordinator of a settled partition this node leads,
// and its sweeper.
func (cs *coordinators) start(lr *localReplica, _ uint64) (*groupCoord, error) {
	n := cs.n
	var verifier kafkaapi.TxnVerifier
	if n.cfg.TxnPartitionVerification {
		verifier = n.backend
	}
	log := offsetsTxnLog{offsetsLog: offsetsLog{lr.Partition(), n.cfg.Tuning.ProduceEnqueue}, lr: lr, verifier: verifier}
	c, err := groupcoord.New(cs.config(), log, lr.Extra().view)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(n.ctx)
	g := &groupCoord{Coordinator: c, stop: stop, done: make(chan struct{})}
	s := &pendingSweeper{n: n, lr: lr, verifier: n.backend, logger: n.logger.With("component", "groupcoord")}
	go func() { // owned by g: Close stops it
		defer close(g.done)
		s.run(ctx)
	}()
	return g, nil
}

// Close stops the sweeper, then the coordinator.
func (g *groupCoord) Close() {
	g.stop()
	<-g.done
	g.Coordinator.Close()
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
			_, ok := cs.n.meta.State().Partition(topic, p)
			return ok
		},
		Logger: cs.n.logger.With("component", "groupcoord"),
	}
}

// all returns every running coordinator, and COORDINATOR_LOAD_IN_PROGRESS
// with them while one is loading.
func (cs *coordinators) all() ([]kafkaapi.GroupCoordinator, error) {
	running, err := cs.running()
	out := make([]kafkaapi.GroupCoordinator, len(running))
	for i, c := range running {
		out[i] = c
	}
	return out, err
}

// close closes every coordinator; no new one starts after it.
func (cs *coordinators) close() { cs.closeAll() }

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

func (s viewSink) TxnRecord(pid int64, epoch int16, r record.Record) {
	if err := s.view.ApplyTxn(pid, epoch, r); err != nil && !errors.Is(err, groupcoord.ErrUnknownRecord) {
		s.logger.Warn("transactional record of __consumer_offsets skipped", "err", err)
	}
}

func (s viewSink) Marker(pid int64, commit bool) { s.view.Marker(pid, commit) }

func (s viewSink) Record(key, value []byte) {
	if err := s.view.Apply(key, value); err != nil && !errors.Is(err, groupcoord.ErrUnknownRecord) {
		s.logger.Warn("record of __consumer_offsets skipped", "err", err)
	}
}
