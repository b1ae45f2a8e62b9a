package groupcoord

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Offset expiry (Kafka's offsets.retention.minutes, with KIP-211's rules):
// the leader decides with its clock which committed offsets have outlived
// the retention and writes their tombstones through the Log, so every
// replica's View drops the same offsets at the same log position.
//
//   - A group without members (Empty, or known only by its offsets, as a
//     standalone consumer's are) loses an offset once the retention has
//     passed since the later of its commit and the time the group became
//     empty, as its stored metadata says.
//   - A stable consumer group loses the offsets of topics none of its
//     members subscribes to any more, the retention after their commit.
//   - Other groups, offsets with a transactional commit pending, and
//     groups with an OffsetCommit being written keep theirs.
//
// An empty group left without offsets, and without a transactional commit
// pending, is removed: it is Dead while its tombstones are written, then
// gone (its metadata tombstoned too).

// Expired counts what one ExpireOffsets removed.
type Expired struct {
	Offsets int // committed offsets tombstoned
	Groups  int // groups removed
}

// groupExpiry is the outcome of one group's expiry write.
type groupExpiry struct {
	offsets int
	removed bool
	err     *kerr.Error
}

// ExpireOffsets expires the offsets that have outlived retention at now
// (the leader's clock) and removes the empty groups left without any, as
// described above, and returns once those writes are committed, or with
// the first error: NOT_COORDINATOR once the coordinator is closed, ctx's
// error if it ends first, or a write's. A failed write changes nothing
// that a later call cannot redo.
func (c *Coordinator) ExpireOffsets(ctx context.Context, now time.Time, retention time.Duration) (Expired, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return Expired{}, kerr.NotCoordinator
	}
	var waits []chan groupExpiry
	for _, id := range c.view.Groups() {
		if w := c.expireGroup(id, now, retention); w != nil {
			waits = append(waits, w)
		}
	}
	c.mu.Unlock()
	var out Expired
	var first error
	for _, w := range waits {
		select {
		case r := <-w:
			if r.err != nil {
				if first == nil {
					first = r.err
				}
				continue
			}
			out.Offsets += r.offsets
			if r.removed {
				out.Groups++
			}
		case <-c.ctx.Done():
			return out, kerr.NotCoordinator
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}
	if out.Offsets > 0 || out.Groups > 0 {
		c.logger.Info("groupcoord: offsets expired", "offsets", out.Offsets, "groups_removed", out.Groups)
	}
	return out, first
}

// expireGroup starts the expiry write of one group, if it has anything to
// expire, and returns the channel of its outcome. Call with mu held.
func (c *Coordinator) expireGroup(id string, now time.Time, retention time.Duration) chan groupExpiry {
	if cg, ok := c.view.ConsumerGroup(id); ok {
		return c.expireConsumerGroup(id, cg, now, retention)
	}
	if c.view.isShareGroup(id) { // no offsets; an empty one stays, as in Kafka
		return nil
	}
	g := c.lookup(id)
	if g == nil || g.state == stateDead || g.expiring != nil || c.committing[id] > 0 {
		return nil
	}
	md, hasMeta := c.view.Group(id)
	expired, kept, pending := c.expiredOffsets(g, md, hasMeta, now.Add(-retention).UnixMilli())
	remove := g.state == stateEmpty && len(g.pending) == 0 && kept == 0 && !pending
	if len(expired) == 0 && !(remove && hasMeta) {
		return nil
	}
	recs := make([]Record, 0, len(expired)+1)
	for _, po := range expired {
		recs = append(recs, OffsetTombstone(id, po.Topic, po.Partition))
	}
	if remove && hasMeta {
		recs = append(recs, GroupTombstone(id))
	}
	since := g.stateTime
	if remove {
		c.unload(g) // timers of pending member ids, of which there are none
		g.setState(stateDead, since)
	}
	g.expiring = make(chan struct{})
	done := make(chan groupExpiry, 1)
	c.write(g, recs, func(err *kerr.Error) {
		close(g.expiring)
		g.expiring = nil
		switch {
		case err != nil && remove:
			g.setState(stateEmpty, since) // as it was: a later expiry tries again
		case remove && c.groups[id] == g:
			delete(c.groups, id)
		}
		done <- groupExpiry{offsets: len(expired), removed: remove && err == nil, err: err}
	})
	return done
}

// expiredOffsets splits a group's committed offsets into those expired at
// cutoff (milliseconds: now minus the retention) and the number kept, and
// reports whether the group has a transactional commit pending. Call with
// mu held.
func (c *Coordinator) expiredOffsets(g *group, md GroupMetadata, hasMeta bool, cutoff int64) (expired []PartitionOffset, kept int, pending bool) {
	emptySince := int64(-1) // when the group became empty, if its metadata says
	if hasMeta && len(md.Members) == 0 {
		emptySince = md.StateTimestamp
	}
	inTxn := c.view.pendingPartitions(g.id)
	for _, po := range c.view.Offsets(g.id) {
		base := int64(-1)
		switch {
		case g.state == stateEmpty:
			base = max(po.CommitTimestamp, emptySince)
		case g.state == stateStable && g.protocolType == consumerProtocolType && !g.subscribed(po.Topic):
			base = po.CommitTimestamp
		}
		if base < 0 || base > cutoff || inTxn[topicPartition{po.Topic, po.Partition}] {
			kept++
			continue
		}
		expired = append(expired, po)
	}
	return expired, kept, len(inTxn) > 0
}

// pendingPartitions are the partitions of a group with a transactional
// offset commit pending.
func (v *View) pendingPartitions(group string) map[topicPartition]bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out map[topicPartition]bool
	for _, ps := range v.pending {
		for _, p := range ps {
			if p.group == group {
				if out == nil {
					out = make(map[topicPartition]bool)
				}
				out[p.tp] = true
			}
		}
	}
	return out
}
