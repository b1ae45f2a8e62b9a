package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/record"
)

// fetchResult is what one ShareFetch brought: records, the outcome of the
// acknowledgements it carried, and its error.
type fetchResult struct {
	recs  []*ShareRecord
	acks  map[TopicPartition]error
	err   error
	stale bool // a partition's leader moved: wait for metadata before asking again
}

// wantByLeader groups the assigned partitions by leader. A partition
// without a known leader asks for a metadata refresh.
func (s *ShareConsumer) wantByLeader() map[int32]map[tp]bool {
	s.mu.Lock()
	parts := slices.Collect(maps.Keys(s.assigned))
	s.mu.Unlock()
	out := map[int32]map[tp]bool{}
	for _, t := range parts {
		node, _, ok := s.cl.leader(t.topic, t.partition)
		if !ok {
			s.cl.triggerRefresh()
			continue
		}
		if out[node] == nil {
			out[node] = map[tp]bool{}
		}
		out[node][t] = true
	}
	return out
}

// fetchRound sends one ShareFetch to every broker that leads an assigned
// partition, has acknowledgements pending, or has partitions in its
// session to forget; all at once. It reports whether any was answered.
// A sent ShareFetch is always waited for, since its answer moves the
// session on and carries records acquired for us: rather than cancel it,
// the broker's wait is cut to ctx's deadline. Called with pollMu.
func (s *ShareConsumer) fetchRound(ctx context.Context) ([]*ShareRecord, bool, error) {
	wait := s.cfg.fetchMaxWait
	if dl, ok := ctx.Deadline(); ok {
		wait = max(min(wait, time.Until(dl)), 0)
	}
	want := s.wantByLeader()
	nodes := slices.Collect(maps.Keys(want))
	for _, n := range s.pendingNodes() {
		if !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	for n, ss := range s.sessions {
		if len(ss.parts) > 0 && !maps.Equal(ss.parts, want[n]) && !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	ackResults := map[TopicPartition]error{}
	results := make([]fetchResult, len(nodes))
	var wg sync.WaitGroup
	for i, node := range nodes {
		ss := s.session(node)
		acks := s.takeAcks(node, ss, ackResults)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.shareFetch(context.WithoutCancel(ctx), node, ss, want[node], acks, wait)
		}()
	}
	wg.Wait()
	var out []*ShareRecord
	var firstErr error
	progress := false
	for _, r := range results {
		out = append(out, r.recs...)
		maps.Copy(ackResults, r.acks)
		switch {
		case r.err == nil && (!r.stale || len(r.recs) > 0):
			progress = true
		case firstErr == nil && !IsRetriable(r.err) && ctx.Err() == nil:
			firstErr = r.err
		}
	}
	if len(ackResults) > 0 && s.cfg.share.onAcks != nil {
		s.cfg.share.onAcks(ackResults)
	}
	return out, progress, firstErr
}

// fetchRequest builds a ShareFetch for session ss: on opening (epoch 0)
// every wanted partition, later the new ones and those with
// acknowledgements, and the ones to forget. It returns the partitions it
// adds and forgets.
func (s *ShareConsumer) fetchRequest(ss *shareSession, want map[tp]bool, acks map[tp][]ackBatch, wait time.Duration) (*kmsg.ShareFetchRequest, []tp, []tp) {
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(s.cfg.share.group), kmsg.StringPtr(s.memberID), ss.epoch
	req.MaxWaitMillis = int32(wait / time.Millisecond)
	req.MinBytes, req.MaxBytes = 1, s.cfg.fetchMaxBytes
	req.MaxRecords, req.BatchSize = s.cfg.share.maxRecords, s.cfg.share.maxRecords
	send := map[tp]bool{}
	var added, forgotten []tp
	for t := range want {
		if ss.epoch == 0 || !ss.parts[t] {
			send[t] = true
			added = append(added, t)
		}
	}
	for t := range acks {
		send[t] = true
	}
	if ss.epoch > 0 {
		for t := range ss.parts {
			if !want[t] {
				forgotten = append(forgotten, t)
			}
		}
	}
	for topic, ps := range byTopic(slices.Collect(maps.Keys(send))) {
		tm, ok := s.cl.topic(topic)
		if !ok {
			continue
		}
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = tm.id
		for _, p := range ps {
			rp := kmsg.NewShareFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, s.cfg.fetchPartBytes
			for _, b := range acks[tp{topic, p}] {
				rb := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
				rb.FirstOffset, rb.LastOffset, rb.AcknowledgeTypes = b.first, b.last, []int8{b.kind}
				rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, rb)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	for topic, ps := range byTopic(forgotten) {
		if tm, ok := s.cl.topic(topic); ok {
			ft := kmsg.NewShareFetchRequestForgottenTopicsData()
			ft.TopicID, ft.Partitions = tm.id, ps
			req.ForgottenTopicsData = append(req.ForgottenTopicsData, ft)
		}
	}
	return req, added, forgotten
}

// shareFetch sends one ShareFetch to node and takes its answer. A lost
// session (SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, a broken
// connection) is opened again by the next request; acknowledgements it
// carried fail, and the broker delivers those records again.
func (s *ShareConsumer) shareFetch(ctx context.Context, node int32, ss *shareSession, want map[tp]bool, acks map[tp][]ackBatch, wait time.Duration) fetchResult {
	req, added, forgotten := s.fetchRequest(ss, want, acks, wait)
	res := fetchResult{acks: map[TopicPartition]error{}}
	failAcks := func(err error) {
		for t := range acks {
			res.acks[TopicPartition{t.topic, t.partition}] = err
		}
	}
	resp, err := s.cl.request(ctx, node, req, wait)
	if err == nil {
		r := resp.(*kmsg.ShareFetchResponse)
		err = kafkaErr(r.ErrorCode, r.ErrorMessage)
		if err == nil {
			s.takeFetched(node, ss, r, acks, &res)
			if ss.epoch == 0 {
				ss.parts = map[tp]bool{}
			}
			for _, t := range added {
				ss.parts[t] = true
			}
			for _, t := range forgotten {
				delete(ss.parts, t)
			}
			ss.advance()
			return res
		}
	}
	ss.reset()
	s.cl.triggerRefresh()
	failAcks(fmt.Errorf("%w: %w", ErrShareSessionLost, err))
	switch {
	case errors.Is(err, ErrShareSessionNotFound) || errors.Is(err, ErrInvalidShareSessionEpoch):
		s.cfg.logger.Debug("share session lost; reopening", "node", node, "err", err)
		return res
	default:
		res.err = fmt.Errorf("share fetch from broker %d: %w", node, shareUnsupported("ShareFetch", err))
	}
	return res
}

// takeFetched decodes an answered ShareFetch into res, and records what
// was delivered for acknowledgement.
func (s *ShareConsumer) takeFetched(node int32, ss *shareSession, r *kmsg.ShareFetchResponse, acks map[tp][]ackBatch, res *fetchResult) {
	names := s.cl.topicNames()
	for t := range acks {
		res.acks[TopicPartition{t.topic, t.partition}] = nil
	}
	sk := sessKey{node, ss.gen}
	for _, rt := range r.Topics {
		name, ok := names[rt.TopicID]
		if !ok {
			continue
		}
		for _, rp := range rt.Partitions {
			t := tp{name, rp.Partition}
			if _, sent := acks[t]; sent {
				res.acks[TopicPartition{name, rp.Partition}] = kafkaErr(rp.AcknowledgeErrorCode, rp.AcknowledgeErrorMessage)
			}
			if err := kafkaErr(rp.ErrorCode, rp.ErrorMessage); err != nil {
				res.stale = res.stale || s.noteStale(err)
				if !IsRetriable(err) && res.err == nil && !errors.Is(err, ErrNotLeaderOrFollower) {
					res.err = fmt.Errorf("share fetch %s[%d]: %w", name, rp.Partition, err)
				}
				continue
			}
			recs, gaps, releases, err := decodeShare(t, rp.Records, rp.AcquiredRecords)
			if err != nil && res.err == nil {
				res.err = fmt.Errorf("share fetch %s[%d]: %w", name, rp.Partition, err)
			}
			s.mu.Lock()
			for _, rec := range recs {
				s.delivered[ackKey{t, rec.Offset}] = sk
			}
			for _, o := range gaps {
				s.addPendingLocked(sk, ackKey{t, o}, ackGap)
			}
			for _, o := range releases {
				s.addPendingLocked(sk, ackKey{t, o}, int8(AckRelease))
			}
			s.explicit = false
			s.mu.Unlock()
			res.recs = append(res.recs, recs...)
		}
	}
}

// maxAcquiredSpan bounds the offsets of one acquired range that the
// client walks to settle the ones without a record: a range is at most
// ShareMaxRecords long from a sound broker.
const maxAcquiredSpan = 1 << 20

// decodeShare turns a partition's fetched batches into the records the
// broker acquired for this member (with their delivery counts). Acquired
// offsets without a record up to the last complete batch (control
// records, compacted ones) are gaps; those past it (a batch the response
// cut off) are to be released, so that they come again.
func decodeShare(t tp, b []byte, acquired []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord) (recs []*ShareRecord, gaps, releases []int64, err error) {
	got := map[int64]bool{}
	seenEnd := int64(-1)
	var scratch []record.Record
	for len(b) >= record.HeaderSize && err == nil {
		batch, rest, h, nerr := record.Next(b)
		if nerr != nil {
			var le *record.LengthError
			if !errors.As(nerr, &le) {
				err = nerr
			}
			break
		}
		b = rest
		if h.IsControl() || !overlapsAcquired(acquired, h.BaseOffset, h.LastOffset()) {
			seenEnd = max(seenEnd, h.NextOffset())
			continue
		}
		if _, err = record.Check(batch); err != nil {
			break
		}
		if scratch, err = record.AppendRecords(scratch[:0], batch); err != nil {
			break
		}
		seenEnd = max(seenEnd, h.NextOffset())
		for _, r := range scratch {
			dc, ok := deliveryCount(acquired, r.Offset)
			if !ok || got[r.Offset] {
				continue
			}
			got[r.Offset] = true
			recs = append(recs, shareRecord(t, r, h.PartitionLeaderEpoch, dc))
		}
	}
	for _, a := range acquired {
		if a.LastOffset < a.FirstOffset || a.LastOffset-a.FirstOffset >= maxAcquiredSpan {
			continue
		}
		for o := a.FirstOffset; o <= a.LastOffset; o++ {
			switch {
			case got[o]:
			case o < seenEnd:
				gaps = append(gaps, o)
			default:
				releases = append(releases, o)
			}
		}
	}
	return recs, gaps, releases, err
}

// shareRecord makes the ShareRecord of a decoded record.
func shareRecord(t tp, r record.Record, epoch int32, dc int16) *ShareRecord {
	rec := &ShareRecord{Record: Record{
		Topic: t.topic, Partition: t.partition, Offset: r.Offset,
		Key: r.Key, Value: r.Value, Timestamp: time.UnixMilli(r.Timestamp), LeaderEpoch: epoch,
	}, DeliveryCount: dc}
	if len(r.Headers) > 0 {
		rec.Headers = make([]RecordHeader, len(r.Headers))
		for i, hd := range r.Headers {
			rec.Headers[i] = RecordHeader{Key: hd.Key, Value: hd.Value}
		}
	}
	return rec
}

// overlapsAcquired reports whether [first, last] meets an acquired range.
func overlapsAcquired(acquired []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, first, last int64) bool {
	for _, a := range acquired {
		if a.FirstOffset <= last && first <= a.LastOffset {
			return true
		}
	}
	return false
}

// deliveryCount is the delivery count of the acquired range holding off.
func deliveryCount(acquired []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, off int64) (int16, bool) {
	for _, a := range acquired {
		if a.FirstOffset <= off && off <= a.LastOffset {
			return a.DeliveryCount, true
		}
	}
	return 0, false
}
