package client

import (
	"cmp"
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteRecordsToEnd is the DeleteRecords offset that deletes everything
// up to the high watermark.
const DeleteRecordsToEnd = -1

// DeleteRecords deletes the records of one partition below offset
// (DeleteRecordsToEnd: every committed record), on every replica: the
// partition's log start offset moves up to offset, and reads below it get
// ErrOffsetOutOfRange. It returns the new log start offset (Kafka's low
// watermark). An offset past the high watermark is ErrOffsetOutOfRange.
func (a *Admin) DeleteRecords(ctx context.Context, topic string, partition int32, offset int64) (int64, error) {
	a.cl.addInterest(topic)
	var low int64
	err := a.retry(ctx, func() error {
		if err := a.cl.waitRefresh(ctx); err != nil {
			return err
		}
		node, _, ok := a.cl.leader(topic, partition)
		if !ok {
			if tm, ok := a.cl.topic(topic); ok && (tm.err != nil || int(partition) >= len(tm.partitions)) {
				return fmt.Errorf("delete records of %s[%d]: %w", topic, partition, cmp.Or(tm.err, error(ErrUnknownTopicOrPartition)))
			}
			return ErrLeaderNotAvailable
		}
		var err error
		low, err = a.deleteRecordsOn(ctx, node, topic, partition, offset)
		return err
	})
	return low, err
}

// deleteRecordsOn sends one DeleteRecords for one partition to its leader.
func (a *Admin) deleteRecordsOn(ctx context.Context, node int32, topic string, partition int32, offset int64) (int64, error) {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = int32(a.cfg.requestTimeout.Milliseconds())
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, a.cfg.requestTimeout)
	defer cancel()
	resp, err := a.cl.request(rctx, node, req, 0)
	if err != nil {
		return 0, err
	}
	r := resp.(*kmsg.DeleteRecordsResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("delete records of %s[%d]: the broker's answer does not name the partition: %w", topic, partition, ErrUnknownServerError)
	}
	p := r.Topics[0].Partitions[0]
	if err := kafkaErr(p.ErrorCode, nil); err != nil {
		return 0, fmt.Errorf("delete records of %s[%d]: %w", topic, partition, err)
	}
	return p.LowWatermark, nil
}
