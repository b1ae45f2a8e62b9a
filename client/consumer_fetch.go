package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/record"
)

// listOffsets resolves AtStart/AtEnd positions through the leader.
func (c *Consumer) listOffsets(ctx context.Context, node int32, parts []*consumePart) error {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = int8(c.cfg.isolation) // AtEnd is the last stable offset under ReadCommitted
	idx := map[string]int{}
	c.mu.Lock()
	for _, cp := range parts {
		i, ok := idx[cp.tp.topic]
		if !ok {
			i = len(req.Topics)
			idx[cp.tp.topic] = i
			t := kmsg.NewListOffsetsRequestTopic()
			t.Topic = cp.tp.topic
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewListOffsetsRequestTopicPartition()
		p.Partition = cp.tp.partition
		p.CurrentLeaderEpoch = cp.epoch
		p.Timestamp = -2 // earliest
		if cp.start.kind == offsetEnd {
			p.Timestamp = -1 // latest
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	c.mu.Unlock()
	resp, err := c.cl.request(ctx, node, req, 0)
	if err != nil {
		c.cl.triggerRefresh()
		return err
	}
	var firstErr error
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rt := range resp.(*kmsg.ListOffsetsResponse).Topics {
		for _, rp := range rt.Partitions {
			cp := c.parts[tp{rt.Topic, rp.Partition}]
			if cp == nil || cp.next >= 0 {
				continue
			}
			if err := kafkaErr(rp.ErrorCode, nil); err != nil {
				c.noteErr(cp, err)
				if !IsRetriable(err) && firstErr == nil {
					firstErr = fmt.Errorf("list offsets %s[%d]: %w", rt.Topic, rp.Partition, err)
				}
				continue
			}
			cp.next = rp.Offset
		}
	}
	return firstErr
}

// noteErr marks a partition's metadata stale when the error says so.
// Called with c.mu.
func (c *Consumer) noteErr(cp *consumePart, err error) {
	for _, stale := range []error{ErrNotLeaderOrFollower, ErrFencedLeaderEpoch, ErrUnknownLeaderEpoch,
		ErrUnknownTopicOrPartition, ErrLeaderNotAvailable, ErrKafkaStorageError} {
		if errors.Is(err, stale) {
			cp.stale = true
			c.cl.triggerRefresh()
			return
		}
	}
}

// fetch fetches once from one leader and decodes what came back.
func (c *Consumer) fetch(ctx context.Context, node int32, parts []*consumePart) ([]*Record, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(c.cfg.fetchMaxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = c.cfg.fetchMaxBytes
	req.SessionEpoch = -1 // no fetch session
	req.IsolationLevel = int8(c.cfg.isolation)
	idx := map[string]int{}
	c.mu.Lock()
	for _, cp := range parts {
		i, ok := idx[cp.tp.topic]
		if !ok {
			i = len(req.Topics)
			idx[cp.tp.topic] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic = cp.tp.topic
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = cp.tp.partition
		p.CurrentLeaderEpoch = cp.epoch
		p.FetchOffset = cp.next
		p.LastFetchedEpoch = -1
		p.LogStartOffset = -1
		p.PartitionMaxBytes = c.cfg.fetchPartBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	c.mu.Unlock()
	resp, err := c.cl.request(ctx, node, req, c.cfg.fetchMaxWait)
	if err != nil {
		c.cl.triggerRefresh()
		return nil, err
	}
	var out []*Record
	var firstErr error
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rt := range resp.(*kmsg.FetchResponse).Topics {
		for _, rp := range rt.Partitions {
			cp := c.parts[tp{rt.Topic, rp.Partition}]
			if cp == nil || cp.next < 0 {
				continue
			}
			if err := kafkaErr(rp.ErrorCode, nil); err != nil {
				if errors.Is(err, ErrOffsetOutOfRange) {
					cp.start, cp.next = c.cfg.resetOffset, -1
					if cp.start.kind == offsetAt {
						cp.start = AtStart()
					}
					continue
				}
				c.noteErr(cp, err)
				if firstErr == nil {
					firstErr = fmt.Errorf("fetch %s[%d]: %w", rt.Topic, rp.Partition, err)
				}
				continue
			}
			cp.stale = false
			var aborted *abortedFilter
			if c.cfg.isolation == ReadCommitted {
				aborted = newAbortedFilter(rp.AbortedTransactions)
			}
			recs, err := decodeFetched(cp, rp.RecordBatches, aborted)
			out = append(out, recs...)
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("fetch %s[%d]: %w", rt.Topic, rp.Partition, err)
			}
		}
	}
	return out, firstErr
}

// decodeFetched turns a partition's fetched batches into records from
// cp.next on, and advances cp.next past what it consumed; call it with
// Consumer.mu. Control batches are skipped, and so are the batches of
// aborted transactions if aborted (ReadCommitted) is not nil. A batch cut
// off at the end of the response (the broker stops at a byte limit) is
// left for the next fetch.
func decodeFetched(cp *consumePart, b []byte, aborted *abortedFilter) ([]*Record, error) {
	var out []*Record
	var scratch []record.Record
	for len(b) >= record.HeaderSize {
		batch, rest, h, err := record.Next(b)
		if err != nil {
			var le *record.LengthError
			if errors.As(err, &le) {
				break // truncated final batch
			}
			return out, err
		}
		b = rest
		skip := aborted.skip(h, batch) || h.IsControl() // every batch moves the filter on
		if h.NextOffset() <= cp.next {
			continue // wholly before our position
		}
		if _, err := record.Check(batch); err != nil {
			return out, err
		}
		if skip {
			cp.next = h.NextOffset()
			continue
		}
		scratch, err = record.AppendRecords(scratch[:0], batch)
		if err != nil {
			return out, err
		}
		for _, r := range scratch {
			if r.Offset < cp.next {
				continue
			}
			rec := &Record{
				Topic: cp.tp.topic, Partition: cp.tp.partition, Offset: r.Offset,
				Key: r.Key, Value: r.Value, Timestamp: time.UnixMilli(r.Timestamp),
				LeaderEpoch: h.PartitionLeaderEpoch,
			}
			if len(r.Headers) > 0 {
				rec.Headers = make([]RecordHeader, len(r.Headers))
				for i, hd := range r.Headers {
					rec.Headers[i] = RecordHeader{Key: hd.Key, Value: hd.Value}
				}
			}
			out = append(out, rec)
		}
		cp.next = h.NextOffset()
	}
	return out, nil
}
