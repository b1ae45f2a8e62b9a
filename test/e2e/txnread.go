package e2e

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/metadata"
)

// TxnCoordinator waits until every running, unpaused node answers
// FindCoordinator for the transactional id with the same running node,
// and returns it.
func (c *Cluster) TxnCoordinator(ctx context.Context, txnID string) (int, error) {
	return c.coordinator(ctx, coordinatorTxn, txnID)
}

// TxnStatePartitionLeader returns the partition of __transaction_state
// that holds txnID and its leader, as every running node agrees.
func (c *Cluster) TxnStatePartitionLeader(ctx context.Context, txnID string) (int32, PartitionLeader, error) {
	ls, err := c.Leaders(ctx, metadata.TransactionStateTopic)
	if err != nil {
		return 0, PartitionLeader{}, err
	}
	p := metadata.TxnPartition(txnID, int32(len(ls)))
	return p, ls[p], nil
}

// WriteEndMarkers appends one plain record, "eos-end|<partition>", to
// each of topic's partitions and waits for their acknowledgements. Once
// nothing else writes to topic and no transaction on it is open, a reader
// that reaches a partition's marker has read everything before it.
func WriteEndMarkers(ctx context.Context, brokers []string, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(250*time.Millisecond))
	if err != nil {
		return fmt.Errorf("e2e: end markers: %w", err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for p := range partitions {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%s%d", endMarkerPrefix, p)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("e2e: end markers on %s: %w", topic, err)
	}
	return nil
}

// ReadToEndMarkers reads every partition of topic from its start with a
// franz-go consumer at the isolation level given, until each partition's
// end marker (WriteEndMarkers). The logs' Start is 0 and End one past the
// marker.
func ReadToEndMarkers(ctx context.Context, brokers []string, topic string, partitions int32, level kgo.IsolationLevel) ([]PartitionLog, error) {
	offsets := map[int32]kgo.Offset{}
	logs := make([]PartitionLog, partitions)
	for p := range partitions {
		offsets[p] = kgo.NewOffset().AtStart()
		logs[p] = PartitionLog{Topic: topic, Partition: p, End: -1}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(level), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.MetadataMinAge(250*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("e2e: read %s: %w", topic, err)
	}
	defer cl.Close()
	left := int(partitions)
	for left > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("e2e: read %s: %d partitions without their end marker: %w", topic, left, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			pl := &logs[r.Partition]
			if pl.End >= 0 {
				return // past the marker: nothing is written there
			}
			pl.Records = append(pl.Records, Stored{Offset: r.Offset, Key: r.Key, Value: r.Value})
			if bytes.HasPrefix(r.Value, []byte(endMarkerPrefix)) {
				pl.End = r.Offset + 1
				left--
			}
		})
	}
	return logs, nil
}
