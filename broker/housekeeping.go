package broker

import (
	"sync"
	"time"
)

// housekeeping runs the node's clock-driven duties, each on its own
// goroutine so that a slow one does not hold up the others: for the
// partitions this node leads, retention every RetentionCheckInterval,
// cleaning every CleanerBackoff and
// producer expiry every ProducerExpirationCheckInterval (broker/replicas);
// for the coordinators it runs, offset expiry every
// OffsetsRetentionCheckInterval and transactional id expiry every
// TxnRemoveExpiredInterval (broker/coordhost); and, every
// Tuning.MetaDutyInterval, the controller's
// report of the deleted topics whose replicas it has removed
// (broker/replicas); and, every delegation.token.expiry.check.interval.ms,
// the metadata leader's removal of expired delegation tokens; and, every
// second, the release of expired share-record locks (kafkabackend), and
// every minute the end of deleted topics' share state (coordhost). Owned by the Node, which stops it (housekeepingDone,
// closed once every duty has returned) before it closes the coordinators
// and replicas, so every proposal it makes is answered by a running group.
func (n *Node) housekeeping() {
	defer close(n.housekeepingDone)
	duties := []struct {
		every time.Duration
		run   func()
	}{
		{n.cfg.RetentionCheckInterval, func() { n.reps.Retain(time.Now()) }},
		{n.cfg.CleanerBackoff, func() { n.reps.Compact(time.Now(), n.cfg.CleanInternalTopics, n.cleansWhole()) }},
		{n.cfg.ProducerExpirationCheckInterval, func() { n.reps.ExpireProducers(n.ProducerIDExpiration()) }},
		{n.cfg.OffsetsRetentionCheckInterval, n.coords.ExpireOffsets},
		{n.cfg.TxnRemoveExpiredInterval, n.coords.ExpireTransactionalIDs},
		{n.cfg.Tuning.MetaDutyInterval, func() { n.meta.ReportRemovedReplicas(n.ctx, n.reps.HeldTopicIDs) }},
		{n.cfg.tokenExpiryCheck(), func() { n.meta.ExpireDelegationTokens(n.ctx) }},
		{shareLockSweep, func() { _ = n.backend.ExpireShareLocks(n.ctx) }},
		{shareStateSweep, func() { n.coords.ForgetDeletedShareState(n.ctx) }},
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

// ReplicaOffsets reports this node's replica of a partition: its log start
// offset and high watermark; ok is false when the node holds none.
func (n *Node) ReplicaOffsets(topic string, p int32) (start, hw int64, ok bool) {
	lr, ok := n.reps.Get(topic, p)
	if !ok {
		return 0, 0, false
	}
	return lr.Partition().LogStartOffset(), lr.Partition().HighWatermark(), true
}
