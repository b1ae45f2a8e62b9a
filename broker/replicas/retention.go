package replicas

import (
	"context"
	"slices"
	"time"

	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/partition/seglog"
)

// CleanupDelete is the cleanup.policy under which retention (and
// DeleteRecords) deletes.
const CleanupDelete = "delete"

// Retention and producer expiry are decisions of a partition's leader,
// taken with its clock and proposed through the partition's Raft group
// (partition.Replica.Trim, ExpireProducers), so every replica applies the
// same result.

// Retain trims the log of every replica this node leads to what its
// topic's retention keeps, as of now.
func (s *Set[E]) Retain(now time.Time) {
	for _, r := range s.Led() {
		s.retain(r, now)
	}
}

// ExpireProducers makes the replicas of every partition this node leads
// forget the producers idle past ttl.
func (s *Set[E]) ExpireProducers(ttl time.Duration) {
	for _, r := range s.Led() {
		s.expireProducers(r, ttl)
	}
}

// retain trims r's log to what its topic's retention keeps. Internal
// topics are left alone: their views are rebuilt from the whole log.
func (s *Set[E]) retain(r *Replica[E], now time.Time) {
	cfg := r.Config()
	if metadata.IsInternal(r.info.Topic) || !slices.Contains(cfg.CleanupPolicy, CleanupDelete) {
		return
	}
	target := retentionPoint(r.rep.Segments(), now.UnixMilli(), cfg.RetentionMs, cfg.RetentionBytes)
	if target <= r.rep.LogStartOffset() {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Tuning.Proposal)
	defer cancel()
	start, err := r.rep.Trim(ctx, target)
	if err != nil {
		s.logger.Warn("retention: trim failed", "topic", r.info.Topic, "partition", r.info.Partition, "offset", target, "err", err)
		return
	}
	s.logger.Debug("retention: log start moved", "topic", r.info.Topic, "partition", r.info.Partition, "start", start)
}

// expireProducers makes r's replicas forget producers idle past ttl.
func (s *Set[E]) expireProducers(r *Replica[E], ttl time.Duration) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Tuning.Proposal)
	defer cancel()
	removed, left, err := r.rep.ExpireProducers(ctx, time.Now(), ttl)
	if err != nil {
		s.logger.Warn("producer expiry failed", "topic", r.info.Topic, "partition", r.info.Partition, "err", err)
		return
	}
	if removed > 0 {
		s.logger.Debug("producers expired", "topic", r.info.Topic, "partition", r.info.Partition, "removed", removed, "left", left)
	}
}

// retentionPoint is the log start offset that retention asks for: past
// every leading segment whose newest batch is older than retentionMs
// before nowMs, and past as many leading segments as must go for the rest
// to fit in retentionBytes (Kafka's rules; -1 turns each off). The active
// segment counts too: the log rolls it before deleting it. -1 when nothing
// is to go.
func retentionPoint(segs []seglog.SegmentInfo, nowMs, retentionMs, retentionBytes int64) int64 {
	target := int64(-1)
	if retentionMs >= 0 {
		for _, s := range segs {
			if s.Bytes == 0 || s.MaxTimestamp >= nowMs-retentionMs {
				break
			}
			target = s.Next
		}
	}
	if retentionBytes >= 0 {
		var excess int64
		for _, s := range segs {
			excess += s.Bytes
		}
		excess -= retentionBytes
		for _, s := range segs {
			if s.Bytes == 0 || excess < s.Bytes {
				break
			}
			excess -= s.Bytes
			target = max(target, s.Next)
		}
	}
	return target
}
