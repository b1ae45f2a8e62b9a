package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// commitOffset is what a commit stores for a partition: the next offset
// to read and the leader epoch of the record before it (-1 unknown).
type commitOffset struct {
	offset int64
	epoch  int32
}

// committedOffset is a partition's committed offset as OffsetFetch
// returns it: -1 when the group has none.
type committedOffset struct {
	offset   int64
	epoch    int32
	metadata string
}

// Commit commits offsets (by topic and partition: the next offset to read,
// as Kafka stores it) under the member's current generation, retrying
// while the coordinator moves or loads, until ctx ends. A member without
// a generation gets ErrNotGroupMember; a generation the coordinator no
// longer accepts gives ErrIllegalGeneration or ErrUnknownMemberID (the
// member then rejoins), and a rebalance under way ErrRebalanceInProgress:
// Poll again and commit after it. Partitions need not be owned, as in
// Kafka.
func (g *GroupConsumer) Commit(ctx context.Context, offsets map[string]map[int32]int64) error {
	co := map[tp]commitOffset{}
	g.mu.Lock()
	for t, ps := range offsets {
		for p, off := range ps {
			epoch := int32(-1)
			if op := g.owned[tp{t, p}]; op != nil && op.consumed == off {
				epoch = op.epoch
			}
			co[tp{t, p}] = commitOffset{off, epoch}
		}
	}
	g.mu.Unlock()
	return g.commitRetry(ctx, co)
}

// CommitPolled commits the position after every record Poll has returned,
// for each owned partition (those being revoked included, so that
// OnRevoked may call it). Errors are Commit's.
func (g *GroupConsumer) CommitPolled(ctx context.Context) error {
	return g.commitRetry(ctx, g.positions(func(op *ownedPart) (int64, int32) { return op.consumed, op.epoch }))
}

// rejoinNote tells the member goroutine that a commit under generation
// gen failed with err, which calls for a rejoin. A note about an older
// generation than the current one is stale: the member has rejoined since.
type rejoinNote struct {
	gen int32
	err error
}

// needsRejoin reports whether a commit error says the generation is over
// or ending.
func needsRejoin(err error) bool {
	return errors.Is(err, ErrRebalanceInProgress) || errors.Is(err, ErrUnknownMemberID) || errors.Is(err, ErrIllegalGeneration)
}

// commitRetry commits for a caller, retrying retriable errors until ctx
// ends.
func (g *GroupConsumer) commitRetry(ctx context.Context, offsets map[tp]commitOffset) error {
	g.mu.Lock()
	closed, fatal := g.closed, g.fatal
	g.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case fatal != nil:
		return fatal
	case len(offsets) == 0:
		return nil
	}
	return retryGroup(ctx, g.cfg, func(ctx context.Context) error { return g.commit(ctx, offsets) })
}

// commit sends one OffsetCommit under the current generation and records
// what was committed. Commits are serialized, so that an older one never
// lands after a newer one. An error that calls for a rejoin is also
// passed to the member goroutine (it may be waiting for its next
// heartbeat).
func (g *GroupConsumer) commit(ctx context.Context, offsets map[tp]commitOffset) error {
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	g.mu.Lock()
	member, gen, fatal := g.memberID, g.generation, g.fatal
	g.mu.Unlock()
	if fatal != nil {
		return fatal
	}
	if gen < 0 {
		return ErrNotGroupMember
	}
	err := g.sendCommit(ctx, gen, member, offsets)
	if errors.Is(err, ErrStaleMemberEpoch) {
		// A heartbeat answered with a new member epoch while the commit
		// was on its way: commit again under it.
		g.mu.Lock()
		newGen := g.generation
		g.mu.Unlock()
		if newGen != gen && newGen >= 0 {
			gen, err = newGen, g.sendCommit(ctx, newGen, member, offsets)
		}
	}
	if err != nil {
		var ke *KafkaError
		if !errors.As(err, &ke) {
			return err
		}
		g.coord.noteErr(err)
		if needsRejoin(err) {
			select {
			case g.rejoin <- rejoinNote{gen, err}:
			default: // a note is already waiting
			}
		}
		return err
	}
	g.mu.Lock()
	for t, o := range offsets {
		if op := g.owned[t]; op != nil {
			op.committed = o.offset
		}
	}
	g.mu.Unlock()
	return nil
}

// sendCommit sends one OffsetCommit under generation gen (the member
// epoch with GroupProtocolConsumer) and returns its first error.
func (g *GroupConsumer) sendCommit(ctx context.Context, gen int32, member string, offsets map[tp]commitOffset) error {
	req := commitRequest(g.cfg.group, gen, member, g.instanceID, offsets)
	resp, err := g.coord.request(ctx, classDefault, req, 0)
	if err != nil {
		return err
	}
	return commitErr(resp.(*kmsg.OffsetCommitResponse))
}

// commitRequest builds an OffsetCommit. generation -1 with no member id
// is a commit from outside the group (Kafka accepts it for an empty group
// only).
func commitRequest(group string, generation int32, member string, instance *string, offsets map[tp]commitOffset) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID, req.InstanceID = group, generation, member, instance
	req.RetentionTimeMillis = -1 // v2-4: the broker's retention
	byT := map[string][]tp{}
	for t := range offsets {
		byT[t.topic] = append(byT[t.topic], t)
	}
	for _, topic := range slices.Sorted(maps.Keys(byT)) {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		parts := byT[topic]
		slices.SortFunc(parts, func(a, b tp) int { return int(a.partition) - int(b.partition) })
		for _, t := range parts {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = t.partition, offsets[t].offset, offsets[t].epoch
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// commitErr is the first partition error of an OffsetCommit response,
// naming the partition.
func commitErr(r *kmsg.OffsetCommitResponse) error {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			if err := kafkaErr(p.ErrorCode, nil); err != nil {
				return fmt.Errorf("commit %s[%d]: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}

// fetchCommitted asks the group's coordinator for its committed offsets:
// of the given partitions, or of every partition with parts nil. Only
// partitions with a committed offset are in the result.
func fetchCommitted(ctx context.Context, coord *coordinator, group string, parts map[string][]int32) (map[tp]committedOffset, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group, req.RequireStable = group, true // v0-7
	rg := kmsg.NewOffsetFetchRequestGroup()    // v8+
	rg.Group = group
	if parts != nil {
		req.Topics, rg.Topics = []kmsg.OffsetFetchRequestTopic{}, []kmsg.OffsetFetchRequestGroupTopic{}
		for _, t := range slices.Sorted(maps.Keys(parts)) {
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic, rt.Partitions = t, parts[t]
			req.Topics = append(req.Topics, rt)
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = t, parts[t]
			rg.Topics = append(rg.Topics, gt)
		}
	}
	req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
	resp, err := coord.request(ctx, classDefault, req, 0)
	if err != nil {
		return nil, err
	}
	out, err := parseOffsetFetch(resp.(*kmsg.OffsetFetchResponse))
	coord.noteErr(err)
	return out, err
}

// parseOffsetFetch reads an OffsetFetch response for one group.
func parseOffsetFetch(r *kmsg.OffsetFetchResponse) (map[tp]committedOffset, error) {
	out := map[tp]committedOffset{}
	add := func(topic string, p int32, off int64, epoch int32, meta *string, code int16) error {
		if err := kafkaErr(code, nil); err != nil {
			return fmt.Errorf("committed offset of %s[%d]: %w", topic, p, err)
		}
		if off >= 0 {
			c := committedOffset{offset: off, epoch: epoch}
			if meta != nil {
				c.metadata = *meta
			}
			out[tp{topic, p}] = c
		}
		return nil
	}
	if r.GetVersion() >= 8 {
		if len(r.Groups) != 1 {
			return nil, fmt.Errorf("client: OffsetFetch answered %d groups for 1", len(r.Groups))
		}
		gr := r.Groups[0]
		if err := kafkaErr(gr.ErrorCode, nil); err != nil {
			return nil, err
		}
		for _, t := range gr.Topics {
			for _, p := range t.Partitions {
				if err := add(t.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	}
	if err := kafkaErr(r.ErrorCode, nil); err != nil {
		return nil, err
	}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			if err := add(t.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
