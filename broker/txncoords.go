package broker

import (
	"context"
	"time"

	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/partition"
	"github.com/minikafka/minikafka-go/txncoord"
)

// txnCoordinators are the transaction coordinators this node runs: one
// for each partition of __transaction_state it leads (ledCoords), and the
// writer of their transactions' markers.
type txnCoordinators struct {
	ledCoords[*txncoord.Coordinator]
	markers *markerWriter
}

func newTxnCoordinators(n *Node) *txnCoordinators {
	ts := &txnCoordinators{markers: newMarkerWriter(n)}
	ts.ledCoords = newLedCoords(n, metadata.TransactionStateTopic, "transaction coordinator",
		func(lr *localReplica, term uint64) (*txncoord.Coordinator, error) {
			return txncoord.New(ts.config(), txnLog{lr.Partition(), n.cfg.Tuning.ProduceEnqueue}, lr.Extra().txnView, ts.markers, int32(term))
		})
	return ts
}

// config is the coordinators' configuration from the node's.
func (ts *txnCoordinators) config() txncoord.Config {
	n := ts.n
	return txncoord.Config{
		MaxTimeout:    n.cfg.TxnMaxTimeout,
		CommitTimeout: n.cfg.Tuning.ProduceEnqueue,
		AbortInterval: n.cfg.TxnAbortInterval,
		NewProducerID: func(ctx context.Context) (int64, error) {
			r, err := n.meta.NewProducerID(ctx)
			return r.ProducerID, err
		},
		TopicExists: func(topic string, p int32) bool {
			_, ok := n.meta.State().Partition(topic, p)
			return ok
		},
		OffsetsPartition: func(ctx context.Context, group string) (txncoord.TopicPartition, bool) {
			ctx, cancel := context.WithTimeout(ctx, n.cfg.Tuning.MetaProposal)
			defer cancel()
			p, err := n.backend.OffsetsPartition(ctx, group)
			return txncoord.TopicPartition{Topic: metadata.ConsumerOffsetsTopic, Partition: p}, err == nil
		},
		Logger: n.logger.With("component", "txncoord"),
	}
}

// all returns every running coordinator, and COORDINATOR_LOAD_IN_PROGRESS
// with them while one is loading.
func (ts *txnCoordinators) all() ([]kafkaapi.TxnCoordinator, error) {
	cs, err := ts.running()
	out := make([]kafkaapi.TxnCoordinator, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out, err
}

// close closes every coordinator, then the marker writer; no new
// coordinator starts after it.
func (ts *txnCoordinators) close() {
	ts.closeAll()
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
