package kafkaapi

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/changes"
	"github.com/minikafka/minikafka-go/record"
	"github.com/minikafka/minikafka-go/sharepart"
)

// defaultShareMaxRecords is what a ShareFetch without MaxRecords (v0) may
// acquire: Kafka's max.poll.records default.
const defaultShareMaxRecords = 500

// shareReadBytes bounds one share partition's log read in a ShareFetch
// (Kafka's max.partition.fetch.bytes default). A read of the request's
// whole MaxBytes (50 MiB from kgo) copied and zeroed the rest of a
// backlog on every fetch to acquire at most MaxRecords of it. The first
// batch is read whole however large; records past this many bytes wait
// for the next fetch.
const shareReadBytes = 1 << 20

// startShareFetch answers ShareFetch v0-2 (KIP-932, KIP-1206, KIP-1222).
// The share session (group, member) is opened by epoch 0, moved on by each
// later request's epoch, closed by -1 (which releases the member's
// records on its partitions). Piggy-backed acknowledgements are applied
// first, then records are acquired from the session's partitions this
// node leads, long-polling until some are acquired or MaxWaitMillis (at
// most Config.MaxFetchWait) since the request arrived have passed. Every
// acquisition and acknowledgement is committed to __share_group_state
// before the response is sent; a partition's acknowledgements and its
// first acquisition share one commit.
func (s *Server) startShareFetch(req *kmsg.ShareFetchRequest, rc requestInfo) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
		fail := func(err error) (kmsg.Response, error) {
			resp.ErrorCode, resp.ErrorMessage = ErrorCode(err), errorMessage(err)
			return resp, nil
		}
		sg, k, err := s.shareCheck(ctx, req.GroupID, req.MemberID)
		if err != nil {
			return fail(err)
		}
		resp.AcquisitionLockTimeoutMillis = sg.ShareLockDurationMs()
		renew := req.Version >= 2 && req.IsRenewAck
		if renew && (req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0) {
			return fail(kerr.InvalidRequest)
		}
		acks, add := shareFetchAcks(req)
		if req.ShareSessionEpoch == 0 && len(acks) > 0 {
			return fail(kerr.InvalidRequest) // a new session has nothing to acknowledge
		}
		parts, err := s.shareFetchSession(sg, k, req, add, rc.conn)
		if err != nil {
			return fail(shareError(err))
		}
		out := shareFetchOut{resp: resp, idx: make(map[sharepart.TopicPartition][2]int), acks: acks}
		switch {
		case req.ShareSessionEpoch == -1:
			s.shareFetchAcknowledge(ctx, sg, k, &out, renew)
			s.releaseSession(ctx, sg, k, parts)
		case !renew:
			s.shareFetchPoll(ctx, sg, k, req, rc.received, parts, &out)
			if out.stale {
				// The member's deliveries so far are void: it opens a new
				// session, and drops the acknowledgements of the old one.
				if parts, err := sg.ShareSessions().Close(k); err == nil {
					s.releaseSession(ctx, sg, k, parts)
				}
				return fail(shareError(sharepart.ErrSessionStale))
			}
			s.shareLeaderHints(ctx, &out)
		default:
			s.shareFetchAcknowledge(ctx, sg, k, &out, renew)
		}
		return resp, nil
	}
}

// shareFetchAcks collects a request's acknowledgements and the partitions
// it names.
func shareFetchAcks(req *kmsg.ShareFetchRequest) ([]shareAcks, []sharepart.TopicPartition) {
	var acks []shareAcks
	var parts []sharepart.TopicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := sharepart.TopicPartition{TopicID: t.TopicID, Partition: p.Partition}
			parts = append(parts, tp)
			if len(p.AcknowledgementBatches) == 0 {
				continue
			}
			a := shareAcks{tp: tp}
			for _, b := range p.AcknowledgementBatches {
				a.acks = append(a.acks, sharepart.Ack{First: b.FirstOffset, Last: b.LastOffset, Types: ackTypes(b.AcknowledgeTypes)})
			}
			acks = append(acks, a)
		}
	}
	return acks, parts
}

// shareFetchSession opens, moves on or closes the request's session and
// returns its partitions. A session ends with the connection that opened
// it (conn, if set), as Kafka's does (dropShareSession).
func (s *Server) shareFetchSession(sg ShareGroups, k sharepart.SessionKey, req *kmsg.ShareFetchRequest, add []sharepart.TopicPartition, conn context.Context) ([]sharepart.TopicPartition, error) {
	switch req.ShareSessionEpoch {
	case 0:
		sessions := sg.ShareSessions()
		id, parts, err := sessions.Open(k, add)
		if err == nil && conn != nil {
			stop := context.AfterFunc(conn, func() { s.dropShareSession(conn, sg, k, id) })
			sessions.Attach(k, id, func() { stop() })
		}
		return parts, err
	case -1:
		return sg.ShareSessions().Close(k)
	}
	var forget []sharepart.TopicPartition
	for _, t := range req.ForgottenTopicsData {
		for _, p := range t.Partitions {
			forget = append(forget, sharepart.TopicPartition{TopicID: t.TopicID, Partition: p})
		}
	}
	return sg.ShareSessions().Next(k, req.ShareSessionEpoch, add, forget)
}

// shareReleaseTimeout bounds the release of a dropped session's records.
const shareReleaseTimeout = 5 * time.Second

// dropShareSession ends opening id of k's session, whose connection conn
// closed, and releases its member's records on the session's partitions
// (within shareReleaseTimeout), unless the server is closing: then their
// locks expire, or a new leader makes them available. It runs on the
// goroutine context.AfterFunc starts; Close waits for it.
func (s *Server) dropShareSession(conn context.Context, sg ShareGroups, k sharepart.SessionKey, id uint64) {
	parts, ok := sg.ShareSessions().Drop(k, id)
	s.mu.Lock()
	if !ok || s.closed {
		s.mu.Unlock()
		return
	}
	s.shareReleases.Add(1)
	s.mu.Unlock()
	defer s.shareReleases.Done()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(conn), shareReleaseTimeout)
	defer cancel()
	s.releaseSession(ctx, sg, k, parts)
}

// shareFetchOut builds a ShareFetch response's partitions, one per
// partition however often it is touched.
type shareFetchOut struct {
	resp *kmsg.ShareFetchResponse
	idx  map[sharepart.TopicPartition][2]int // topic and partition index
	acks []shareAcks                         // acknowledgements not applied yet
	// stale: a partition was loaded again since the session acquired
	// from it (sharepart.ErrSessionStale); the session must end.
	stale bool
}

// takeAcks removes and returns tp's acknowledgements not applied yet.
func (o *shareFetchOut) takeAcks(tp sharepart.TopicPartition) []shareAcks {
	var mine []shareAcks
	o.acks = slices.DeleteFunc(o.acks, func(a shareAcks) bool {
		if a.tp == tp {
			mine = append(mine, a)
		}
		return a.tp == tp
	})
	return mine
}

// shareFetchAcknowledge applies the acknowledgements not applied yet,
// each partition's with its own commit.
func (s *Server) shareFetchAcknowledge(ctx context.Context, sg ShareGroups, k sharepart.SessionKey, out *shareFetchOut, renew bool) {
	for _, a := range out.acks {
		err := s.acknowledge(ctx, sg, k, a, renew)
		out.part(a.tp).AcknowledgeErrorCode = ErrorCode(err)
	}
	out.acks = nil
}

func (o *shareFetchOut) part(tp sharepart.TopicPartition) *kmsg.ShareFetchResponseTopicPartition {
	if i, ok := o.idx[tp]; ok {
		return &o.resp.Topics[i[0]].Partitions[i[1]]
	}
	ti := len(o.resp.Topics)
	for i, t := range o.resp.Topics {
		if t.TopicID == tp.TopicID {
			ti = i
		}
	}
	if ti == len(o.resp.Topics) {
		t := kmsg.NewShareFetchResponseTopic()
		t.TopicID = tp.TopicID
		o.resp.Topics = append(o.resp.Topics, t)
	}
	sp := kmsg.NewShareFetchResponseTopicPartition()
	sp.Partition, sp.Records = tp.Partition, noRecords
	sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = -1, -1
	ps := &o.resp.Topics[ti].Partitions
	*ps = append(*ps, sp)
	o.idx[tp] = [2]int{ti, len(*ps) - 1}
	return &(*ps)[len(*ps)-1]
}

// shareLeaderHints gives each NOT_LEADER_OR_FOLLOWER partition its
// leader and the leader's endpoint.
func (s *Server) shareLeaderHints(ctx context.Context, o *shareFetchOut) {
	for tp, i := range o.idx {
		sp := &o.resp.Topics[i[0]].Partitions[i[1]]
		if sp.ErrorCode != kerr.NotLeaderForPartition.Code {
			continue
		}
		leader, epoch, b := s.shareLeader(ctx, tp.TopicID, tp.Partition)
		sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = leader, epoch
		if b == nil {
			continue
		}
		known := false
		for _, e := range o.resp.NodeEndpoints {
			known = known || e.NodeID == b.NodeID
		}
		if !known {
			e := kmsg.NewShareFetchResponseNodeEndpoint()
			e.NodeID, e.Host, e.Port = b.NodeID, b.Host, b.Port
			if b.Rack != "" {
				e.Rack = &b.Rack
			}
			o.resp.NodeEndpoints = append(o.resp.NodeEndpoints, e)
		}
	}
}

// shareFetchPoll acquires records from the session's partitions, starting
// at a partition that rotates with the epoch, and waits for new data
// while none could be acquired and no partition has an error to report.
func (s *Server) shareFetchPoll(ctx context.Context, sg ShareGroups, k sharepart.SessionKey, req *kmsg.ShareFetchRequest, received time.Time, parts []sharepart.TopicPartition, out *shareFetchOut) {
	wait := min(time.Duration(max(req.MaxWaitMillis, 0))*time.Millisecond, s.cfg.MaxFetchWait)
	deadline := received.Add(wait)
	maxRecords := int(req.MaxRecords)
	if maxRecords <= 0 {
		maxRecords = defaultShareMaxRecords
	}
	maxBytes := s.cfg.FetchMaxBytes
	if req.MaxBytes > 0 {
		maxBytes = min(maxBytes, int(req.MaxBytes))
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		got, errored, watches := s.sharePass(ctx, sg, k, int(max(req.ShareSessionEpoch, 0)), parts, maxRecords, maxBytes, out)
		if out.stale {
			return
		}
		// Those of partitions the pass did not acquire from, before waiting.
		s.shareFetchAcknowledge(ctx, sg, k, out, false)
		if got > 0 || errored || len(watches) == 0 || ctx.Err() != nil || !time.Now().Before(deadline) {
			return
		}
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
		}
		waitChanges(ctx, timer.C, watches)
	}
}

// sharePass is one pass over the session's partitions: it returns the
// records acquired, whether a partition failed, and the partitions to
// watch for new data.
func (s *Server) sharePass(ctx context.Context, sg ShareGroups, k sharepart.SessionKey, rotate int, parts []sharepart.TopicPartition, maxRecords, maxBytes int, out *shareFetchOut) (got int, errored bool, watches []watch) {
	bytes := 0
	for i := range parts {
		tp := parts[(rotate+i)%len(parts)]
		sp, err := s.resolveShare(ctx, k.Group, tp)
		if err != nil {
			out.part(tp).ErrorCode, errored = ErrorCode(err), true
			continue
		}
		if got >= maxRecords || bytes >= maxBytes {
			continue
		}
		seen := sp.p.Changed()
		released := sg.ShareManager().Released(sp.key)
		seenReleased := released.C()
		acks := out.takeAcks(tp)
		data, ranges, ackErr, err := shareAcquire(ctx, sg, k, tp, sp, acks, maxRecords-got, maxBytes-bytes)
		if errors.Is(err, sharepart.ErrSessionStale) {
			out.stale = true
			return got, true, nil
		}
		if len(acks) > 0 {
			out.part(tp).AcknowledgeErrorCode = ErrorCode(ackErr)
		}
		switch {
		case err != nil:
			out.part(tp).ErrorCode, errored = ErrorCode(shareError(err)), true
		case len(ranges) == 0:
			watches = append(watches, watch{p: sp.p, seen: seen}, watch{p: releaseWatch{sp.p, released}, seen: seenReleased})
		default:
			rp := out.part(tp)
			rp.Records, rp.AcquiredRecords = data, ranges
			for _, r := range ranges {
				got += int(r.LastOffset - r.FirstOffset + 1)
			}
			bytes += len(data)
			sp.p.Fetched(data)
		}
	}
	return got, errored, watches
}

// shareAcquire applies the session k's acknowledgements of share
// partition tp (ackErr: the last set's error) and acquires up to
// maxRecords records from the whole batches, within maxBytes, that the
// log holds from the partition's first acquirable offset; one snapshot
// commit holds both. It does neither, and returns
// sharepart.ErrSessionStale, if the partition was loaded again since the
// session acquired from it.
func shareAcquire(ctx context.Context, sg ShareGroups, k sharepart.SessionKey, tp sharepart.TopicPartition, sp sharePart, acks []shareAcks, maxRecords, maxBytes int) (data []byte, ranges []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, ackErr, err error) {
	var readErr error
	sessions := sg.ShareSessions()
	err = sg.ShareManager().Do(ctx, sp.key, sp.p, func(p *sharepart.Partition, now int64) error {
		if err := sessions.CheckGeneration(k, tp, p.Generation()); err != nil {
			return err
		}
		for _, a := range acks {
			if ackErr = shareAckCheck(a, false); ackErr == nil {
				ackErr = shareError(p.AcknowledgeAll(k.Member, a.acks, now))
			}
		}
		data, ranges, readErr = shareReadAcquire(p, now, k.Member, sp, maxRecords, maxBytes)
		if len(ranges) > 0 {
			sessions.Acquired(k, tp, p.Generation())
		}
		return nil // the acknowledgements are committed whatever the read did
	})
	switch {
	case err != nil: // not loaded, or the commit failed: nothing applied
		return nil, nil, shareError(err), err
	case readErr != nil:
		return nil, nil, ackErr, readErr
	}
	return data, ranges, ackErr, nil
}

// shareReadAcquire is shareAcquire's acquisition, under the share
// partition's lock: the records acquired and the batches that hold them.
func shareReadAcquire(p *sharepart.Partition, now int64, member string, sp sharePart, maxRecords, maxBytes int) ([]byte, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, error) {
	logStart, hw := sp.p.LogStartOffset(), sp.p.HighWatermark()
	from := p.NextAcquirable(logStart)
	if from >= hw {
		return nil, nil, nil
	}
	b, err := sp.p.Read(from, min(maxBytes, shareReadBytes))
	if err != nil {
		return nil, nil, err
	}
	b = wholeBatches(b, maxBytes, true, hw)
	end := from
	for rest := b; len(rest) > 0; {
		_, next, h, err := record.Next(rest)
		if err != nil {
			break
		}
		end, rest = h.NextOffset(), next
	}
	var ranges []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	for _, r := range p.Acquire(member, now, logStart, end, maxRecords) {
		ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
		ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = r.First, r.Last, r.DeliveryCount
		ranges = append(ranges, ar)
	}
	if len(ranges) == 0 {
		return nil, nil, nil
	}
	return batchesThrough(b, ranges[len(ranges)-1].LastOffset), ranges, nil
}

// batchesThrough keeps the leading whole batches of b up to the one that
// holds offset last: the records past the acquired ones are not sent.
func batchesThrough(b []byte, last int64) []byte {
	keep := 0
	for rest := b; len(rest) > 0; {
		batch, next, h, err := record.Next(rest)
		if err != nil {
			break
		}
		keep += len(batch)
		if h.NextOffset() > last {
			break
		}
		rest = next
	}
	return b[:keep]
}

// releaseWatch is a share partition's releases seen as a Partition's
// changes, so that a waiting ShareFetch wakes for redeliveries as it does
// for new records (waitChanges).
type releaseWatch struct {
	Partition
	released *changes.Signal
}

func (w releaseWatch) WatchChanged(seen <-chan struct{}, wake func()) (stop func()) {
	return w.released.Watch(seen, wake)
}
