package kafkaapi

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/record"
)

// startFetch defers all work to the responder, which long-polls: it reads
// every requested partition, and unless MinBytes are available, an error
// needs reporting, or MaxWaitMillis (at most Config.MaxFetchWait) since the
// request arrived have passed, it waits for any of the partitions to change
// and reads again. A partition named more than once is read once (see
// collapse).
//
// From v13 topics are named by id (an id no topic has answers
// UNKNOWN_TOPIC_ID), and from v16 a partition whose leader moved carries
// the leader's id, epoch and endpoint (addCurrentLeaders).
func (s *Server) startFetch(req *kmsg.FetchRequest, received time.Time) responder {
	if req.Version >= 13 {
		req.Topics = collapse(req.Topics, fetchTopicsByID)
	} else {
		req.Topics = collapse(req.Topics, fetchTopics)
	}
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.SessionID = 0 // sessions are not supported; see the package doc
		if req.Version >= 7 && req.SessionEpoch != 0 && req.SessionEpoch != -1 {
			// An incremental fetch names a session we cannot have.
			resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
			return resp, nil
		}
		wait := min(time.Duration(max(req.MaxWaitMillis, 0))*time.Millisecond, s.cfg.MaxFetchWait)
		deadline := received.Add(wait)
		var timer *time.Timer
		defer func() {
			if timer != nil {
				timer.Stop()
			}
		}()
		for {
			r := s.readFetch(ctx, req)
			resp.Topics = r.topics
			if r.bytes >= int(req.MinBytes) || r.errored || len(r.watches) == 0 ||
				ctx.Err() != nil || !time.Now().Before(deadline) {
				if req.Version >= 16 {
					s.addCurrentLeaders(ctx, resp, r.names)
				}
				return resp, nil
			}
			if timer == nil {
				timer = time.NewTimer(time.Until(deadline))
			}
			waitChanges(ctx, timer.C, r.watches)
		}
	}
}

// watch is a partition a waiting Fetch read, with the Changed channel
// taken before reading it.
type watch struct {
	p    Partition
	seen <-chan struct{}
}

// waitChanges blocks until ctx is done, the timer fires, or any watched
// partition changes. Like Kafka's delayed fetch, it registers one wake-up
// of its own with each partition: a request of any number of partitions
// costs no goroutine and no select case per partition.
func waitChanges(ctx context.Context, timer <-chan time.Time, watches []watch) {
	woke := make(chan struct{}, 1)
	wake := func() {
		select {
		case woke <- struct{}{}:
		default: // already woken
		}
	}
	stops := make([]func(), 0, len(watches))
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	for _, w := range watches {
		stops = append(stops, w.p.WatchChanged(w.seen, wake))
		if len(woke) > 0 {
			return // changed since it was read: read again
		}
	}
	select {
	case <-ctx.Done(): // conn or server closing
	case <-timer: // MaxWaitMillis passed
	case <-woke: // new data (or leadership change) on a partition
	}
}

// fetchRead is one pass over a Fetch request's partitions.
type fetchRead struct {
	topics  []kmsg.FetchResponseTopic
	names   []string // of topics, resolved ("" for an unknown id)
	bytes   int      // record bytes returned
	errored bool     // some partition has an error to report now
	watches []watch  // one per readable partition
}

// noRecords is the record set of a partition with nothing to return. Kafka
// always answers an empty set, never null: librdkafka rejects a whole
// response that holds a null one ("invalid MessageSetSize -1").
var noRecords = []byte{}

// readFetch reads every partition of req once (of topics the client may
// READ, or, for a follower, of every topic if it may CLUSTER_ACTION; the
// others answer TOPIC_AUTHORIZATION_FAILED), within the request's byte
// limits: each partition gets at most PartitionMaxBytes and the whole
// response at most MaxBytes, itself at most Config.FetchMaxBytes, except
// that the first batch of the first partition with data is returned whole
// even when larger (KIP-74).
func (s *Server) readFetch(ctx context.Context, req *kmsg.FetchRequest) fetchRead {
	r := fetchRead{names: s.fetchTopicNames(req)}
	follower := fetchReplicaID(req) >= 0
	remaining := min(int(req.MaxBytes), s.cfg.FetchMaxBytes)
	r.topics = make([]kmsg.FetchResponseTopic, len(req.Topics))
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := &r.topics[ti]
		*st = kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = r.names[ti], rt.TopicID
		st.Partitions = make([]kmsg.FetchResponseTopicPartition, len(rt.Partitions))
		topicErr := s.topicReadError(ctx, req, r.names[ti], follower)
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			sp := &st.Partitions[pi]
			*sp = kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			if topicErr != nil {
				failPartition(sp, topicErr)
				r.errored = true
				continue
			}
			limit := min(int(rp.PartitionMaxBytes), remaining)
			w, err := s.readPartition(ctx, r.names[ti], rp, sp, partitionRead{limit: limit, firstData: r.bytes == 0,
				committed: req.IsolationLevel == readCommitted, follower: follower})
			if err != nil {
				failPartition(sp, err)
				r.errored = true
				continue
			}
			if sp.RecordBatches == nil {
				sp.RecordBatches = noRecords
			}
			r.watches = append(r.watches, w)
			r.bytes += len(sp.RecordBatches)
			remaining -= len(sp.RecordBatches)
		}
	}
	return r
}

// failPartition answers a partition with err and no offsets or records.
func failPartition(sp *kmsg.FetchResponseTopicPartition, err error) {
	sp.ErrorCode = ErrorCode(err)
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
	sp.RecordBatches = noRecords
}

// Isolation levels of Fetch and ListOffsets.
const (
	readUncommitted = 0
	readCommitted   = 1
)

// partitionRead is how much of a partition a Fetch may return.
type partitionRead struct {
	limit     int  // bytes
	firstData bool // no partition before it returned data: KIP-74 applies
	committed bool // read_committed: up to the last stable offset
	follower  bool // from a broker (replica id >= 0): see notReplicaError
}

// offsets is a partition's offsets as one read sees them.
type offsets struct {
	start, hw, lso int64
}

// readOffsets reads the last stable offset before the high watermark, so
// that lso <= hw, and both after getting the Changed channel.
func readOffsets(p Partition) offsets {
	lso := p.LastStableOffset()
	o := offsets{hw: p.HighWatermark(), start: p.LogStartOffset()}
	if lso < 0 || lso > o.hw {
		lso = o.hw
	}
	o.lso = lso
	return o
}

// readPartition fills sp for one partition and returns the watch that
// tells when the partition changes after this read.
func (s *Server) readPartition(ctx context.Context, topic string, rp *kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition, pr partitionRead) (watch, error) {
	p, _, err := s.leader(topic, rp.Partition, rp.CurrentLeaderEpoch)
	if err != nil {
		return watch{}, err
	}
	if pr.follower {
		return watch{}, notReplicaError(rp)
	}
	changed := p.Changed() // before reading the state it guards
	o := readOffsets(p)
	if rp.FetchOffset > o.hw {
		// Past the end of a new leader that has not yet applied its
		// predecessors' entries is not out of range; wait for them.
		if err := p.Settle(ctx); err != nil {
			return watch{}, err
		}
		changed = p.Changed()
		o = readOffsets(p)
	}
	if rp.FetchOffset < o.start || rp.FetchOffset > o.hw {
		return watch{}, kerr.OffsetOutOfRange
	}
	// read_committed reads up to the last stable offset (Kafka's
	// FetchIsolation.TXN_COMMITTED), read_uncommitted up to the high
	// watermark.
	end := o.hw
	if pr.committed {
		end = o.lso
	}
	if rp.FetchOffset < end && (pr.limit > 0 || pr.firstData) {
		data, err := p.Read(rp.FetchOffset, max(pr.limit, 0))
		if err != nil {
			return watch{}, err
		}
		if !pr.committed {
			// The high watermark may have moved while reading; what
			// Read returned must be below the newer one.
			o.hw = max(o.hw, p.HighWatermark())
			end = o.hw
		}
		sp.RecordBatches = wholeBatches(data, pr.limit, pr.firstData, end)
		if len(sp.RecordBatches) > 0 {
			p.Fetched(sp.RecordBatches)
		}
	}
	sp.HighWatermark = o.hw
	sp.LastStableOffset = o.lso
	sp.LogStartOffset = o.start
	if pr.committed {
		sp.AbortedTransactions = abortedIn(p, rp.FetchOffset, sp.RecordBatches)
	}
	return watch{p, changed}, nil
}

// abortedIn lists the aborted transactions a read_committed consumer needs
// to filter the batches data read from offset from: those overlapping the
// returned offsets. It is never nil: Kafka answers an empty list, not
// null, to read_committed.
func abortedIn(p Partition, from int64, data []byte) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	out := []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	if len(data) == 0 {
		return out
	}
	to := from
	for rest := data; len(rest) > 0; {
		_, next, h, err := record.Next(rest)
		if err != nil {
			break
		}
		to, rest = h.NextOffset(), next
	}
	for _, a := range p.AbortedTxns(from, to) {
		at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
		out = append(out, at)
	}
	return out
}

// wholeBatches keeps the leading whole batches of data that end below the
// high watermark hw and fit in limit; with firstData the first batch is
// kept even if it alone is larger than limit. It does not trust the backend
// to have cut at batch boundaries or to have kept to committed data.
func wholeBatches(data []byte, limit int, firstData bool, hw int64) []byte {
	keep := 0
	rest := data
	for len(rest) > 0 {
		batch, next, h, err := record.Next(rest)
		if err != nil || h.NextOffset() > hw {
			break
		}
		if keep+len(batch) > limit && !(keep == 0 && firstData) {
			break
		}
		keep += len(batch)
		rest = next
	}
	if keep == 0 {
		return nil
	}
	return data[:keep]
}
