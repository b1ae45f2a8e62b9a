package broker

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/topicconfig"
)

// cleanupDelete is the cleanup.policy under which retention deletes.
const cleanupDelete = "delete"

// Retention and producer expiry are decisions of a partition's leader,
// taken with its clock and proposed through the partition's Raft group
// (partition.Replica.Trim, ExpireProducers), so every replica applies the
// same result.

// housekeeping runs the node's clock-driven duties, each on its own
// goroutine so that a slow one does not hold up the others: for the
// partitions this node leads, retention every RetentionCheckInterval and
// producer expiry every ProducerExpirationCheckInterval; for the
// coordinators it runs, offset expiry every OffsetsRetentionCheckInterval
// and transactional id expiry every TxnRemoveExpiredInterval
// (coordexpiry.go); and, every Tuning.MetaDutyInterval, the controller's
// report of the deleted topics whose replicas it has removed
// (deletedtopics.go). Owned by the Node, which stops it (housekeepingDone,
// closed once every duty has returned) before it closes the coordinators
// and replicas, so every proposal it makes is answered by a running group.
func (n *Node) housekeeping() {
	defer close(n.housekeepingDone)
	duties := []struct {
		every time.Duration
		run   func()
	}{
		{n.cfg.RetentionCheckInterval, func() {
			for _, lr := range n.ledReplicas() {
				n.retain(lr, time.Now())
			}
		}},
		{n.cfg.ProducerExpirationCheckInterval, func() {
			ttl := n.ProducerIDExpiration()
			for _, lr := range n.ledReplicas() {
				n.expireProducers(lr, ttl)
			}
		}},
		{n.cfg.OffsetsRetentionCheckInterval, n.expireOffsets},
		{n.cfg.TxnRemoveExpiredInterval, n.expireTransactionalIDs},
		{n.cfg.Tuning.MetaDutyInterval, func() { n.meta.ReportRemovedReplicas(n.ctx, n.reps.heldTopicIDs) }},
	}
	var wg sync.WaitGroup
	for _, d := range duties {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(d.every)
			defer t.Stop()
			for {
				select {
				case <-n.ctx.Done():
					return
				case <-t.C:
					d.run()
				}
			}
		}()
	}
	wg.Wait()
}

// ledReplicas are the open replicas this node leads.
func (n *Node) ledReplicas() []*localReplica {
	var out []*localReplica
	for _, lr := range n.reps.all() {
		if lr.rep.IsLeader() {
			out = append(out, lr)
		}
	}
	return out
}

// retain trims lr's log to what its topic's retention keeps. Internal
// topics are left alone: their views are rebuilt from the whole log.
func (n *Node) retain(lr *localReplica, now time.Time) {
	cfg := lr.config(n)
	if metadata.IsInternal(lr.info.Topic) || !slices.Contains(cfg.CleanupPolicy, cleanupDelete) {
		return
	}
	target := retentionPoint(lr.rep.Segments(), now.UnixMilli(), cfg.RetentionMs, cfg.RetentionBytes)
	if target <= lr.rep.LogStartOffset() {
		return
	}
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Tuning.ProduceEnqueue)
	defer cancel()
	start, err := lr.rep.Trim(ctx, target)
	if err != nil {
		n.logger.Warn("retention: trim failed", "topic", lr.info.Topic, "partition", lr.info.Partition, "offset", target, "err", err)
		return
	}
	n.logger.Debug("retention: log start moved", "topic", lr.info.Topic, "partition", lr.info.Partition, "start", start)
}

// expireProducers makes lr's replicas forget producers idle past ttl.
func (n *Node) expireProducers(lr *localReplica, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Tuning.ProduceEnqueue)
	defer cancel()
	removed, left, err := lr.rep.ExpireProducers(ctx, time.Now(), ttl)
	if err != nil {
		n.logger.Warn("producer expiry failed", "topic", lr.info.Topic, "partition", lr.info.Partition, "err", err)
		return
	}
	if removed > 0 {
		n.logger.Debug("producers expired", "topic", lr.info.Topic, "partition", lr.info.Partition, "removed", removed, "left", left)
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

// config is lr's topic's resolved configs, cached until the metadata
// changes (refreshConfig).
func (lr *localReplica) config(n *Node) topicconfig.Config {
	if c := lr.cfg.Load(); c != nil {
		return *c
	}
	return lr.refreshConfig(n)
}

// refreshConfig resolves lr's topic's configs again (setConfig).
func (lr *localReplica) refreshConfig(n *Node) topicconfig.Config {
	c := n.TopicConfig(lr.info.Topic)
	lr.setConfig(c)
	return c
}

// setConfig stores c as lr's topic's configs and applies its segment
// limits to the log and its write caching to the Raft group when they
// changed.
func (lr *localReplica) setConfig(c topicconfig.Config) {
	old := lr.cfg.Swap(&c)
	if old == nil || old.SegmentBytes != c.SegmentBytes || old.SegmentMs != c.SegmentMs {
		lr.rep.SetSegmentLimits(c.SegmentBytes, time.Duration(c.SegmentMs)*time.Millisecond)
	}
	lr.applyWriteCaching(c)
}

// ReplicaOffsets reports this node's replica of a partition: its log start
// offset and high watermark; ok is false when the node holds none.
func (n *Node) ReplicaOffsets(topic string, p int32) (start, hw int64, ok bool) {
	lr, ok := n.reps.get(topic, p)
	if !ok {
		return 0, 0, false
	}
	return lr.rep.LogStartOffset(), lr.rep.HighWatermark(), true
}
