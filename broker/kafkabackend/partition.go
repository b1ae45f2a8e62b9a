package kafkabackend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/broker/replicas"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metrics"
	"github.com/minikafka/minikafka-go/partition"
	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/record"
	"github.com/minikafka/minikafka-go/topicconfig"
	"github.com/minikafka/minikafka-go/txncoord"
)

// replicaPartition adapts a partition.Replica to the front end; enqueue
// bounds the wait for a slot in Raft's apply queue.
type replicaPartition struct {
	r       *partition.Replica
	enqueue time.Duration
	cfg     topicconfig.Config // the topic's, when the partition was looked up
	txn     Verified           // the replica's, shared by every lookup
	traffic *metrics.Traffic   // the replica's
}

var (
	_ kafkaapi.Partition = replicaPartition{}
	_ kafkaapi.Partition = internalPartition{}
)

// Fetched counts what a Fetch returned from the replica.
func (p replicaPartition) Fetched(batches []byte) { p.traffic.Fetched(batches) }

// LastStableOffset is the replica's last stable offset (transactions).
func (p replicaPartition) LastStableOffset() int64 { return p.r.LastStableOffset() }

// AbortedTxns lists the aborted transactions overlapping [from, to).
func (p replicaPartition) AbortedTxns(from, to int64) []kafkaapi.AbortedTxn {
	var out []kafkaapi.AbortedTxn
	for _, a := range p.r.AbortedTxns(from, to) {
		out = append(out, kafkaapi.AbortedTxn{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
	}
	return out
}

// WriteTxnMarker proposes a transaction marker now, in call order, and
// waits for it as Produce does; the producer's verification on the
// partition is forgotten. An internal topic's partitions take markers too
// (__consumer_offsets holds transactional offset commits).
func (p replicaPartition) WriteTxnMarker(m kafkaapi.TxnMarker) kafkaapi.ProduceWait {
	var prop *partition.Proposal
	p.txn.Marker(m.ProducerID, m.ProducerEpoch, m.TxnVersion >= txncoord.TxnVersion2, func() {
		prop = p.r.ProposeEndTxn(partition.TxnMarker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
			CoordinatorEpoch: m.CoordinatorEpoch, Commit: m.Commit, V2: m.TxnVersion >= txncoord.TxnVersion2}, p.enqueue)
	})
	return func(context.Context) (kafkaapi.ProduceResult, error) {
		res, err := prop.Wait()
		if err != nil {
			return kafkaapi.ProduceResult{}, err
		}
		if res.Err != nil {
			return kafkaapi.ProduceResult{}, res.Err
		}
		return kafkaapi.ProduceResult{BaseOffset: res.BaseOffset, LogStartOffset: res.LogStartOffset, LogAppendTime: -1}, nil
	}
}

// TxnVerified reports whether the producer's transaction is verified to
// hold the partition in this leader's term (Verified.Check).
func (p replicaPartition) TxnVerified(producerID int64, epoch int16) (bool, kafkaapi.TxnGuard) {
	return p.txn.Check(p.r.LeaderEpoch(), producerID, epoch)
}

// ProduceVerified proposes a verified transactional batch unless a marker
// for its producer, or a new leader epoch, came after guard
// (Verified.Produce says which error).
func (p replicaPartition) ProduceVerified(batch []byte, producerID int64, epoch int16, guard kafkaapi.TxnGuard) kafkaapi.ProduceWait {
	var wait kafkaapi.ProduceWait
	if err := p.txn.Produce(p.r.LeaderEpoch(), producerID, epoch, guard, func() { wait = p.Produce(batch) }); err != nil {
		return func(context.Context) (kafkaapi.ProduceResult, error) { return kafkaapi.ProduceResult{}, err }
	}
	return wait
}

// Settle waits until a new leader has applied its predecessors' entries
// (partition.Replica.Settle).
func (p replicaPartition) Settle(ctx context.Context) error {
	if err := p.r.Settle(ctx, p.enqueue); err != nil {
		return fmt.Errorf("%w: new leader not settled: %w", kerr.NotLeaderForPartition, err)
	}
	return nil
}

// EpochEndOffset answers OffsetForLeaderEpoch from the log's epoch index.
func (p replicaPartition) EpochEndOffset(epoch int32) (int32, int64, error) {
	return p.r.EpochEndOffset(epoch)
}

// Produce proposes the batch now, in call order. The wait does not end on
// ctx: Raft resolves every proposal, at the latest when the leader's lease
// runs out, and the answer then is the true outcome rather than a guess.
//
// A batch over the topic's max.message.bytes is MESSAGE_TOO_LARGE, as in
// Kafka; a record without a key in a compacted topic is INVALID_RECORD; a
// LogAppendTime topic's batch carries this leader's clock.
func (p replicaPartition) Produce(batch []byte) kafkaapi.ProduceWait {
	if limit := p.cfg.MaxMessageBytes; limit > 0 && len(batch) > int(limit) {
		err := fmt.Errorf("%w: the batch is %d bytes, over the topic's max.message.bytes %d", kerr.MessageTooLarge, len(batch), limit)
		return func(context.Context) (kafkaapi.ProduceResult, error) { return kafkaapi.ProduceResult{}, err }
	}
	if slices.Contains(p.cfg.CleanupPolicy, replicas.CleanupCompact) {
		if err := refuseKeyless(batch); err != nil {
			return func(context.Context) (kafkaapi.ProduceResult, error) { return kafkaapi.ProduceResult{}, err }
		}
	}
	var prop *partition.Proposal
	if p.cfg.LogAppendTime {
		prop = p.r.ProposeLogAppendTime(batch, p.enqueue)
	} else {
		prop = p.r.Propose(batch, p.enqueue)
	}
	return func(ctx context.Context) (kafkaapi.ProduceResult, error) {
		res, err := prop.Wait()
		if err != nil {
			return kafkaapi.ProduceResult{}, err
		}
		if res.Err != nil {
			return kafkaapi.ProduceResult{}, res.Err
		}
		if !res.Duplicate {
			p.traffic.Produced(batch)
		}
		return kafkaapi.ProduceResult{BaseOffset: res.BaseOffset, LogStartOffset: res.LogStartOffset,
			LogAppendTime: res.LogAppendTime}, nil
	}
}

func (p replicaPartition) Read(offset int64, maxBytes int) ([]byte, error) {
	b, err := p.r.Read(offset, maxBytes)
	if errors.Is(err, seglog.ErrOffsetOutOfRange) {
		return nil, fmt.Errorf("%w: %w", kerr.OffsetOutOfRange, err)
	}
	return b, err
}

func (p replicaPartition) HighWatermark() int64     { return p.r.HighWatermark() }
func (p replicaPartition) LogStartOffset() int64    { return p.r.LogStartOffset() }
func (p replicaPartition) Changed() <-chan struct{} { return p.r.Changed() }
func (p replicaPartition) IsLeader() bool           { return p.r.IsLeader() }
func (p replicaPartition) LeaderEpoch() int32       { return p.r.LeaderEpoch() }
func (p replicaPartition) WatchChanged(seen <-chan struct{}, wake func()) (stop func()) {
	return p.r.WatchChanged(seen, wake)
}
func (p replicaPartition) OffsetForTimestamp(ts int64) (kafkaapi.TimestampOffset, bool) {
	off, maxTS, ok := p.r.OffsetForTimestamp(ts)
	return kafkaapi.TimestampOffset{Offset: off, Timestamp: maxTS, LeaderEpoch: -1}, ok
}

// MaxTimestamp answers none: the log keeps no index of its largest
// timestamp, so ListOffsets with timestamp -3 (KIP-734) gets offset -1.
func (p replicaPartition) MaxTimestamp() (kafkaapi.TimestampOffset, bool) {
	return kafkaapi.TimestampOffset{}, false
}

// internalPartition is a replica of an internal topic: clients read it, but
// only the cluster writes it (Kafka answers INVALID_TOPIC_EXCEPTION too).
type internalPartition struct{ replicaPartition }

func (p internalPartition) Produce([]byte) kafkaapi.ProduceWait {
	return func(context.Context) (kafkaapi.ProduceResult, error) {
		return kafkaapi.ProduceResult{}, fmt.Errorf("%w: clients may not write to an internal topic", kerr.InvalidTopicException)
	}
}

// ProduceVerified refuses as Produce does: the promoted method would
// propose through replicaPartition's Produce.
func (p internalPartition) ProduceVerified([]byte, int64, int16, kafkaapi.TxnGuard) kafkaapi.ProduceWait {
	return p.Produce(nil)
}

// DeleteRecords moves the log start offset up through Raft, unless the topic's cleanup.policy has no delete, as in
// Kafka.
func (p replicaPartition) DeleteRecords(ctx context.Context, offset int64) (int64, error) {
	if !slices.Contains(p.cfg.CleanupPolicy, replicas.CleanupDelete) {
		return 0, fmt.Errorf("%w: records cannot be deleted from a topic whose cleanup.policy is %v", kerr.PolicyViolation, p.cfg.CleanupPolicy)
	}
	return p.r.Trim(ctx, offset)
}

// DeleteRecords refuses: the cluster's own records are not the clients'
// to delete.
func (p internalPartition) DeleteRecords(context.Context, int64) (int64, error) {
	return 0, fmt.Errorf("%w: records of an internal topic cannot be deleted", kerr.InvalidTopicException)
}

// refuseKeyless is INVALID_RECORD for a batch holding a record without a
// key, which a compacted topic cannot keep (Kafka refuses it likewise).
func refuseKeyless(batch []byte) error {
	recs, err := record.AppendRecords(nil, batch)
	if err != nil {
		return fmt.Errorf("%w: %w", kerr.CorruptMessage, err)
	}
	for _, r := range recs {
		if r.Key == nil {
			return fmt.Errorf("%w: compacted topic cannot accept a record without a key (offset delta %d)", kerr.InvalidRecord, r.Offset)
		}
	}
	return nil
}
