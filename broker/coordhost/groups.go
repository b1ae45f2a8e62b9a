package coordhost

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

// groupCoord is a running group coordinator with the sweeper of its
// partition's pending transactional commits (txnsweep.go).
type groupCoord struct {
	*groupcoord.Coordinator
	stop context.CancelFunc // stops the sweeper
	done chan struct{}      // closed when the sweeper has returned
}

// startGroup starts the group coordinator of a settled partition this
// node leads, and its sweeper.
func (h *Host) startGroup(lr *Replica, _ uint64) (*groupCoord, error) {
	var verifier kafkaapi.TxnVerifier
	if h.cfg.TxnPartitionVerification {
		verifier = h.deps.Verifier
	}
	log := offsetsTxnLog{offsetsLog: offsetsLog{lr.Partition(), h.cfg.Tuning.Proposal}, lr: lr, verifier: verifier}
	c, err := groupcoord.New(h.groupConfig(), log, lr.Extra().view)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(h.ctx)
	g := &groupCoord{Coordinator: c, stop: stop, done: make(chan struct{})}
	s := &pendingSweeper{h: h, lr: lr, verifier: h.deps.Verifier, logger: h.logger.With("component", "groupcoord")}
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

// groupConfig is the group coordinators' configuration.
func (h *Host) groupConfig() groupcoord.Config {
	c := h.cfg
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
		CommitTimeout: c.Tuning.Proposal,
		TopicExists: func(topic string, p int32) bool {
			_, ok := h.deps.Meta.State().Partition(topic, p)
			return ok
		},
		Consumer: c.GroupConsumer,
		Share:    c.GroupShare,
		Topics:   metaTopics(h.deps.Meta.State),
		Logger:   h.logger.With("component", "groupcoord"),
	}
}

// metaTopics is the group coordinators' TopicSource: the node's current
// metadata state, read without copying any topic's partitions (every
// KIP-848 and share heartbeat looks its subscribed topics up).
type metaTopics func() *metadata.Snapshot

func (state metaTopics) Topic(name string) (groupcoord.TopicInfo, bool) {
	return topicInfo(state(), name)
}

func (state metaTopics) TopicByID(id groupcoord.TopicID) (groupcoord.TopicInfo, bool) {
	s := state()
	name, ok := s.TopicNameByID(metadata.TopicID(id))
	if !ok {
		return groupcoord.TopicInfo{}, false
	}
	return topicInfo(s, name)
}

// All lists every topic, sorted by name (regex subscriptions).
func (state metaTopics) All() []groupcoord.TopicInfo {
	s := state()
	names := s.TopicNames()
	out := make([]groupcoord.TopicInfo, 0, len(names))
	for _, name := range names {
		t, _ := topicInfo(s, name)
		out = append(out, t)
	}
	return out
}

// Version is the metadata's layout index (groupcoord.VersionedTopics): no
// topic is created, deleted or given partitions without it moving, and
// the leader reports that follow every fail-over leave it, and so a regex
// subscription's matches, alone.
func (state metaTopics) Version() uint64 { return state().LayoutIndex() }

func topicInfo(s *metadata.Snapshot, name string) (groupcoord.TopicInfo, bool) {
	id, ok := s.TopicID(name)
	if !ok {
		return groupcoord.TopicInfo{}, false
	}
	n, _ := s.TopicPartitions(name)
	return groupcoord.TopicInfo{Name: name, ID: groupcoord.TopicID(id), Partitions: n}, true
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
	return ProposalError(res, err)
}

// ProposalError is the error a coordinator answers for a proposal's
// outcome: REQUEST_TIMED_OUT if it may not have committed,
// NOT_LEADER_OR_FOLLOWER if the replica shut down, else the proposal's
// error or the batch's.
func ProposalError(res *fsm.ProduceResult, err error) error {
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
