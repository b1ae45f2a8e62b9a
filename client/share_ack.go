package client

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareSession is the share session with one broker: epoch 0 opens it,
// each answered request moves it on, -1 closes it. gen counts its
// openings, so that acknowledgements of records acquired in an earlier
// opening are known stale (the broker released those records).
type shareSession struct {
	epoch int32
	gen   uint64
	parts map[tp]bool // partitions the broker has in the session
}

// reset makes the next request open the session anew.
func (ss *shareSession) reset() {
	ss.epoch = 0
	ss.gen++
	ss.parts = map[tp]bool{}
}

// advance moves the epoch on after an answered request, wrapping past
// MaxInt32 to 1 as Kafka does (0 would reopen the session).
func (ss *shareSession) advance() {
	if ss.epoch == 1<<31-1 {
		ss.epoch = 1
		return
	}
	ss.epoch++
}

// session returns the session with node, creating it. Called with pollMu.
func (s *ShareConsumer) session(node int32) *shareSession {
	ss := s.sessions[node]
	if ss == nil {
		ss = &shareSession{parts: map[tp]bool{}}
		s.sessions[node] = ss
	}
	return ss
}

// ackBatch is one run of offsets acknowledged the same way.
type ackBatch struct {
	first, last int64
	kind        int8
}

// takeAcks removes the pending acknowledgements of node's session ss and
// returns them by partition, as sorted runs. Those of an earlier opening
// of the session are stale: they are returned in stale, failed with
// ErrShareSessionLost. Called with pollMu.
func (s *ShareConsumer) takeAcks(node int32, ss *shareSession, stale map[TopicPartition]error) map[tp][]ackBatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[tp][]ackBatch{}
	for sk, byTP := range s.pending {
		if sk.node != node {
			continue
		}
		delete(s.pending, sk)
		if sk.gen != ss.gen || ss.epoch <= 0 {
			for t := range byTP {
				stale[TopicPartition{t.topic, t.partition}] = ErrShareSessionLost
			}
			continue
		}
		for t, offs := range byTP {
			out[t] = ackRuns(offs)
		}
	}
	return out
}

// ackRuns turns acknowledgements by offset into sorted runs of contiguous
// offsets of one kind.
func ackRuns(offs map[int64]int8) []ackBatch {
	var out []ackBatch
	for _, o := range slices.Sorted(maps.Keys(offs)) {
		k := offs[o]
		if n := len(out); n > 0 && out[n-1].last == o-1 && out[n-1].kind == k {
			out[n-1].last = o
			continue
		}
		out = append(out, ackBatch{o, o, k})
	}
	return out
}

// pendingNodes lists the brokers that have pending acknowledgements.
func (s *ShareConsumer) pendingNodes() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var nodes []int32
	for sk := range s.pending {
		if !slices.Contains(nodes, sk.node) {
			nodes = append(nodes, sk.node)
		}
	}
	return nodes
}

// acknowledgeAll sends every pending acknowledgement with ShareAcknowledge,
// one request per broker at once, and returns the outcome by partition.
// With closeSessions it closes every open session too (epoch -1), which
// makes the broker release the records this member still holds. Called
// with pollMu.
func (s *ShareConsumer) acknowledgeAll(ctx context.Context, closeSessions bool) map[TopicPartition]error {
	nodes := s.pendingNodes()
	if closeSessions {
		for node, ss := range s.sessions {
			if ss.epoch > 0 && !slices.Contains(nodes, node) {
				nodes = append(nodes, node)
			}
		}
	}
	results := map[TopicPartition]error{}
	var mu sync.Mutex // guards results while the requests run
	var wg sync.WaitGroup
	for _, node := range nodes {
		ss := s.session(node)
		acks := s.takeAcks(node, ss, results)
		if ss.epoch <= 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := s.shareAcknowledge(ctx, node, ss, acks, closeSessions)
			mu.Lock()
			maps.Copy(results, got)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return results
}

// shareAcknowledge sends one ShareAcknowledge to node in session ss (or
// closing it) and returns the outcome by partition.
func (s *ShareConsumer) shareAcknowledge(ctx context.Context, node int32, ss *shareSession, acks map[tp][]ackBatch, closing bool) map[TopicPartition]error {
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(s.cfg.share.group), kmsg.StringPtr(s.memberID), ss.epoch
	if closing {
		req.ShareSessionEpoch = -1
	}
	for topic, parts := range byTopicMap(acks) {
		tm, ok := s.cl.topic(topic)
		if !ok {
			continue
		}
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = tm.id
		for _, p := range parts {
			rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
			rp.Partition = p
			for _, b := range acks[tp{topic, p}] {
				rb := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
				rb.FirstOffset, rb.LastOffset, rb.AcknowledgeTypes = b.first, b.last, []int8{b.kind}
				rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, rb)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	results := map[TopicPartition]error{}
	failAll := func(err error) map[TopicPartition]error {
		for t := range acks {
			results[TopicPartition{t.topic, t.partition}] = err
		}
		return results
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.requestTimeout)
	defer cancel()
	resp, err := s.cl.request(rctx, node, req, 0)
	if err != nil {
		ss.reset()
		return failAll(shareUnsupported("ShareAcknowledge", err))
	}
	r := resp.(*kmsg.ShareAcknowledgeResponse)
	if err := kafkaErr(r.ErrorCode, r.ErrorMessage); err != nil {
		ss.reset()
		return failAll(err)
	}
	if closing {
		ss.reset()
	} else {
		ss.advance()
	}
	names := s.cl.topicNames()
	for t := range acks {
		results[TopicPartition{t.topic, t.partition}] = nil
	}
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			if err := kafkaErr(rp.ErrorCode, rp.ErrorMessage); err != nil {
				results[TopicPartition{names[rt.TopicID], rp.Partition}] = err
				s.noteStale(err)
			}
		}
	}
	return results
}

// byTopicMap lists the partitions of a per-partition map by topic, sorted.
func byTopicMap[V any](m map[tp]V) map[string][]int32 {
	return byTopic(slices.Collect(maps.Keys(m)))
}

// noteStale asks for fresh metadata when err says a leader moved, and
// reports whether it did.
func (s *ShareConsumer) noteStale(err error) bool {
	for _, stale := range []error{ErrNotLeaderOrFollower, ErrFencedLeaderEpoch, ErrUnknownLeaderEpoch,
		ErrUnknownTopicOrPartition, ErrLeaderNotAvailable, ErrKafkaStorageError, ErrUnknownTopicID} {
		if errors.Is(err, stale) {
			s.cl.triggerRefresh()
			return true
		}
	}
	return false
}
