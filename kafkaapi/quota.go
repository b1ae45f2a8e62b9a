package kafkaapi

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/internal/quota"
)

// Quotas enforces client quotas; internal/quota's Manager is the
// implementation (Config.Quotas).
type Quotas interface {
	Record(k quota.Kind, user, clientID string, value float64) time.Duration
	Unrecord(k quota.Kind, user, clientID string, value float64)
	MaxValueInWindow(k quota.Kind, user, clientID string) (float64, bool)
	RecordThrottle(k quota.Kind, user, clientID string, d time.Duration)
	Mutation(user, clientID string, strict bool) *quota.Mutation
}

var _ Quotas = (*quota.Manager)(nil)

// muteGate holds a connection's reading back while its client is
// throttled, as Kafka mutes a throttled channel: the reader waits for it
// before taking the next request.
type muteGate struct {
	until atomic.Int64 // unix nanoseconds; reading resumes then
}

// extend mutes the connection for d from now, unless it already is for
// longer.
func (g *muteGate) extend(d time.Duration) {
	if g == nil || d <= 0 {
		return
	}
	end := time.Now().Add(d).UnixNano()
	for {
		cur := g.until.Load()
		if cur >= end || g.until.CompareAndSwap(cur, end) {
			return
		}
	}
}

// wait returns once the connection is no longer muted, or ctx is done. A
// connection muted for longer than idle from now waits idle and ends as
// idle (errIdle), as Kafka closes a channel that had no activity for
// connections.max.idle.ms, muted or not.
func (g *muteGate) wait(ctx context.Context, idle time.Duration) error {
	for {
		d := time.Until(time.Unix(0, g.until.Load()))
		if d <= 0 {
			return nil
		}
		t := time.NewTimer(min(d, idle))
		select {
		case <-t.C:
			if d > idle {
				return errIdle
			}
			// The mute may have been extended meanwhile: look again.
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// reqQuota is one request's part in client quotas, from its start on the
// reader to its answer on the writer.
type reqQuota struct {
	user, clientID string
	key            int16
	// exempt requests (cluster actions) are not charged request time;
	// acks=0 Produce neither, as in Kafka.
	exempt    bool
	handled   time.Duration   // time the reader spent decoding and starting it
	bandwidth time.Duration   // Produce's byte-rate throttle, decided at start
	mutation  *quota.Mutation // CreateTopics, CreatePartitions, DeleteTopics
}

// principalQuotaUser is Kafka's quota user of a principal: its name without
// "User:" (ANONYMOUS without authentication, which Kafka's <default>
// user quotas also match).
func principalQuotaUser(principal string) string {
	return strings.TrimPrefix(principal, acl.UserPrefix)
}

// startQuota charges what a request's start decides: a Produce's bytes
// (its frame, as Kafka's request size), muting the connection at once when
// over quota; it caps a Fetch's MaxBytes at what the quota allows in one
// span (Kafka's getMaxValueInQuotaWindow); it gives a topic mutation its
// controller-mutation quota, strict from the versions that know
// THROTTLING_QUOTA_EXCEEDED (KIP-599).
func (s *Server) startQuota(req kmsg.Request, clientID string, rc requestInfo, frameLen int) *reqQuota {
	principal, _ := clientOf(rc.connContext())
	q := &reqQuota{user: principalQuotaUser(principal), clientID: clientID, key: req.Key()}
	qs := s.cfg.Quotas
	switch req := req.(type) {
	case *kmsg.ProduceRequest:
		q.exempt = req.Acks == 0
		q.bandwidth = qs.Record(quota.Produce, q.user, clientID, float64(frameLen))
		rc.mute.extend(q.bandwidth)
	case *kmsg.FetchRequest:
		if limit, ok := qs.MaxValueInWindow(quota.Fetch, q.user, clientID); ok && limit < float64(req.MaxBytes) {
			req.MaxBytes = int32(max(limit, 1))
		}
	case *kmsg.WriteTxnMarkersRequest:
		q.exempt = true // a cluster action
	case *kmsg.CreateTopicsRequest:
		q.mutation = qs.Mutation(q.user, clientID, req.Version >= 6)
	case *kmsg.CreatePartitionsRequest:
		q.mutation = qs.Mutation(q.user, clientID, req.Version >= 3)
	case *kmsg.DeleteTopicsRequest:
		q.mutation = qs.Mutation(q.user, clientID, req.Version >= 5)
	}
	return q
}

// settleQuota decides a request's throttle once its response is ready:
// the largest of its byte-rate throttle (a Fetch's bytes are charged
// now), its request-time throttle and its controller-mutation throttle,
// as Kafka's KafkaApis does. The response carries it in throttle_time_ms,
// the connection is muted for it, and a throttled Fetch answers no data
// (its bytes are taken back), as Kafka's does.
func (s *Server) settleQuota(q *reqQuota, resp kmsg.Response, mute *muteGate) kmsg.Response {
	qs := s.cfg.Quotas
	bwKind, bw := quota.Produce, q.bandwidth
	fetch, _ := resp.(*kmsg.FetchResponse)
	var fetched int
	if fetch != nil {
		fetched = fetchedBytes(fetch)
		bwKind, bw = quota.Fetch, qs.Record(quota.Fetch, q.user, q.clientID, float64(fetched))
	}
	var rq time.Duration
	if !q.exempt {
		rq = qs.Record(quota.Request, q.user, q.clientID, quota.RequestPercent(q.handled))
	}
	mut := q.mutation.Throttle()
	t := max(bw, rq, mut)
	if t <= 0 {
		return resp
	}
	switch {
	case mut == t:
		qs.RecordThrottle(quota.ControllerMutation, q.user, q.clientID, t)
	case bw > rq:
		qs.RecordThrottle(bwKind, q.user, q.clientID, t)
	default:
		qs.RecordThrottle(quota.Request, q.user, q.clientID, t)
	}
	if fetch != nil {
		qs.Unrecord(quota.Fetch, q.user, q.clientID, float64(fetched))
		fetch.Topics = nil
	}
	mute.extend(t)
	if tr, ok := resp.(kmsg.ThrottleResponse); ok {
		ms := int32(min(t.Milliseconds(), int64(1<<31-1)))
		if cur, _ := tr.Throttle(); cur < ms {
			resp.(kmsg.SetThrottleResponse).SetThrottle(ms)
		}
	}
	return resp
}

// fetchedBytes is what a Fetch response returns: its record batches'
// bytes, which are nearly all of it.
func fetchedBytes(resp *kmsg.FetchResponse) int {
	n := 0
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			n += len(resp.Topics[i].Partitions[j].RecordBatches)
		}
	}
	return n
}

// mutations is q's controller-mutation quota; nil (no limit) without one.
func (q *reqQuota) mutations() *quota.Mutation {
	if q == nil {
		return nil
	}
	return q.mutation
}
