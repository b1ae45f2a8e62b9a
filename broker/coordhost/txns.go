package coordhost

import (
	"context"
	"time"

	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/partition"
	"github.com/minikafka/minikafka-go/txncoord"
)

// startTxn starts the transaction coordinator of a settled partition
// this node leads in term, whose markers carry term as their coordinator
// epoch.
func (h *Host) startTxn(lr *Replica, term uint64) (*txncoord.Coordinator, error) {
	return txncoord.New(h.txnConfig(), txnLog{lr.Partition(), h.cfg.Tuning.Proposal}, lr.Extra().txnView, h.markers, int32(term))
}

// txnConfig is the transaction coordinators' configuration.
func (h *Host) txnConfig() txncoord.Config {
	return txncoord.Config{
		MaxTimeout:    h.cfg.TxnMaxTimeout,
		CommitTimeout: h.cfg.Tuning.Proposal,
		AbortInterval: h.cfg.TxnAbortInterval,
		NewProducerID: func(ctx context.Context) (int64, error) {
			r, err := h.deps.Meta.NewProducerID(ctx)
			return r.ProducerID, err
		},
		TopicExists: func(topic string, p int32) bool {
			_, ok := h.deps.Meta.State().Partition(topic, p)
			return ok
		},
		OffsetsPartition: func(ctx context.Context, group string) (txncoord.TopicPartition, bool) {
			ctx, cancel := context.WithTimeout(ctx, h.cfg.Tuning.Request)
			defer cancel()
			p, err := h.deps.OffsetsPartition(ctx, group)
			return txncoord.TopicPartition{Topic: metadata.ConsumerOffsetsTopic, Partition: p}, err == nil
		},
		Logger: h.logger.With("component", "txncoord"),
	}
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
