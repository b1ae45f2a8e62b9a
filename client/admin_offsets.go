package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupOffset is one partition of a group: its committed offset, where
// the partition's log ends, and the member it is assigned to.
type GroupOffset struct {
	Topic       string
	Partition   int32
	Committed   int64 // the next offset the group reads; -1 when it has committed none
	LeaderEpoch int32 // of the record before Committed, -1 unknown
	Metadata    string
	LogEnd      int64 // the partition's log end offset (ListOffsets latest); -1 unknown
	// Lag is LogEnd - Committed: the records the group has still to read.
	// -1 when either is unknown.
	Lag      int64
	MemberID string // the member the partition is assigned to; empty for none
	ClientID string
	Host     string
}

// OffsetReset is one partition's committed offset before and after
// ResetGroupOffsets.
type OffsetReset struct {
	Topic     string
	Partition int32
	Old       int64 // -1 when the group had none
	New       int64
}

// GroupOffsets returns the committed offset, log end and lag of every
// partition the group has committed or has assigned to a member, sorted
// by topic and partition. A group that does not exist gives
// ErrGroupIDNotFound.
func (a *Admin) GroupOffsets(ctx context.Context, group string) ([]GroupOffset, error) {
	d, err := a.DescribeGroup(ctx, group)
	if err != nil {
		return nil, err
	}
	committed, err := a.committed(ctx, group)
	if err != nil {
		return nil, err
	}
	rows := map[tp]*GroupOffset{}
	row := func(t tp) *GroupOffset {
		if rows[t] == nil {
			rows[t] = &GroupOffset{Topic: t.topic, Partition: t.partition, Committed: -1, LeaderEpoch: -1, LogEnd: -1, Lag: -1}
		}
		return rows[t]
	}
	for t, c := range committed {
		r := row(t)
		r.Committed, r.LeaderEpoch, r.Metadata = c.offset, c.epoch, c.metadata
	}
	for _, m := range d.Members {
		for topic, ps := range m.Assignment {
			for _, p := range ps {
				r := row(tp{topic, p})
				r.MemberID, r.ClientID, r.Host = m.MemberID, m.ClientID, m.ClientHost
			}
		}
	}
	ends, _ := a.listOffsets(ctx, slices.Collect(maps.Keys(rows)), -1) // a partition without an answer shows no log end
	out := make([]GroupOffset, 0, len(rows))
	for t, r := range rows {
		if end, ok := ends[t]; ok {
			r.LogEnd = end
			if r.Committed >= 0 {
				r.Lag = max(end-r.Committed, 0)
			}
		}
		out = append(out, *r)
	}
	slices.SortFunc(out, func(x, y GroupOffset) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	return out, nil
}

// committed returns every committed offset of a group: none for a group
// that does not exist.
func (a *Admin) committed(ctx context.Context, group string) (map[tp]committedOffset, error) {
	coord := newCoordinator(a.cl, group)
	var out map[tp]committedOffset
	err := a.retry(ctx, func() error {
		var err error
		out, err = fetchCommitted(ctx, coord, group, nil)
		return err
	})
	if isGroupNotFound(err) {
		return map[tp]committedOffset{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("committed offsets of group %q: %w", group, err)
	}
	return out, nil
}

// ResetGroupOffsets sets the committed offsets of a group that has no
// members: to the start of each partition (AtStart), its end (AtEnd), or
// an exact offset (At), clamped to the partition's log as Kafka's tool
// does. With topics, every partition of those topics is reset; without,
// the partitions the group has committed offsets for. A group with
// members gives a *GroupNotEmptyError (errors.Is ErrNonEmptyGroup): its
// members would overwrite the offsets. It returns what changed, sorted.
func (a *Admin) ResetGroupOffsets(ctx context.Context, group string, to Offset, topics ...string) ([]OffsetReset, error) {
	d, err := a.DescribeGroup(ctx, group)
	switch {
	case err == nil && len(d.Members) > 0:
		return nil, &GroupNotEmptyError{Group: group, State: d.State, Members: len(d.Members)}
	case err != nil && !(isGroupNotFound(err) && len(topics) > 0):
		return nil, err // a new group needs topics to start from
	}
	committed, err := a.committed(ctx, group)
	if err != nil {
		return nil, err
	}
	parts, err := a.resetPartitions(ctx, group, committed, topics)
	if err != nil {
		return nil, err
	}
	targets, err := a.resetTargets(ctx, parts, to)
	if err != nil {
		return nil, err
	}
	offsets := map[tp]commitOffset{}
	out := make([]OffsetReset, 0, len(parts))
	for _, t := range parts {
		old := int64(-1)
		if c, ok := committed[t]; ok {
			old = c.offset
		}
		offsets[t] = commitOffset{targets[t], -1}
		out = append(out, OffsetReset{Topic: t.topic, Partition: t.partition, Old: old, New: targets[t]})
	}
	req := commitRequest(group, -1, "", nil, offsets)
	_, err = a.groupRequest(ctx, newCoordinator(a.cl, group), req, func(r kmsg.Response) error {
		return commitErr(r.(*kmsg.OffsetCommitResponse))
	})
	if errors.Is(err, ErrUnknownMemberID) || errors.Is(err, ErrIllegalGeneration) {
		// A member joined since we looked: the coordinator refuses a
		// commit from outside a group with members.
		return nil, &GroupNotEmptyError{Group: group, State: "joined meanwhile", Members: -1}
	}
	if err != nil {
		return nil, fmt.Errorf("commit reset offsets of group %q: %w", group, err)
	}
	return out, nil
}

// resetPartitions returns the partitions a reset covers, sorted: every
// partition of topics, or the committed ones when topics is empty.
func (a *Admin) resetPartitions(ctx context.Context, group string, committed map[tp]committedOffset, topics []string) ([]tp, error) {
	var parts []tp
	if len(topics) == 0 {
		parts = slices.Collect(maps.Keys(committed))
		if len(parts) == 0 {
			return nil, fmt.Errorf("group %q: %w", group, ErrNoOffsetsToReset)
		}
	}
	ds, err := a.DescribeTopics(ctx, topics...)
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		if d.Err != nil {
			return nil, fmt.Errorf("topic %q: %w", d.Name, d.Err)
		}
		for _, p := range d.Partitions {
			parts = append(parts, tp{d.Name, p.Partition})
		}
	}
	slices.SortFunc(parts, func(x, y tp) int { return cmp.Or(cmp.Compare(x.topic, y.topic), cmp.Compare(x.partition, y.partition)) })
	return parts, nil
}

// resetTargets resolves where each partition is reset to.
func (a *Admin) resetTargets(ctx context.Context, parts []tp, to Offset) (map[tp]int64, error) {
	if to.kind == offsetStart || to.kind == offsetEnd {
		ts := int64(-2)
		if to.kind == offsetEnd {
			ts = -1
		}
		return a.listOffsetsAll(ctx, parts, ts)
	}
	starts, err := a.listOffsetsAll(ctx, parts, -2)
	if err != nil {
		return nil, err
	}
	ends, err := a.listOffsetsAll(ctx, parts, -1)
	if err != nil {
		return nil, err
	}
	out := map[tp]int64{}
	for _, t := range parts {
		out[t] = min(max(to.at, starts[t]), ends[t])
	}
	return out, nil
}

// listOffsetsAll is listOffsets for a caller that needs every partition.
func (a *Admin) listOffsetsAll(ctx context.Context, parts []tp, ts int64) (map[tp]int64, error) {
	got, err := a.listOffsets(ctx, parts, ts)
	if err != nil {
		return nil, err
	}
	for _, t := range parts {
		if _, ok := got[t]; !ok {
			return nil, fmt.Errorf("client: no offset for %s[%d]", t.topic, t.partition)
		}
	}
	return got, nil
}

// listOffsets asks the leaders of the partitions for their earliest
// (ts -2) or latest (ts -1) offsets, retrying retriable failures until
// ctx ends. Partitions that fail for good are absent, and their first
// error is returned with the rest.
func (a *Admin) listOffsets(ctx context.Context, parts []tp, ts int64) (map[tp]int64, error) {
	out := map[tp]int64{}
	topics := map[string]bool{}
	for _, t := range parts {
		topics[t.topic] = true
	}
	a.cl.addInterest(slices.Collect(maps.Keys(topics))...)
	var fatal error
	err := a.retry(ctx, func() error {
		if err := a.cl.waitRefresh(ctx); err != nil {
			return err
		}
		var retry error
		for node, ps := range a.byLeader(parts, out) {
			err := a.listOffsetsOn(ctx, node, ps, ts, out)
			switch {
			case err == nil:
			case IsRetriable(err) || errors.Is(err, errUnknownBroker):
				retry = err
			case fatal == nil:
				fatal = err
			}
		}
		return retry
	})
	return out, cmp.Or(err, fatal)
}

// byLeader groups the partitions not in done by leader; a partition
// without a known leader goes under -1.
func (a *Admin) byLeader(parts []tp, done map[tp]int64) map[int32][]tp {
	out := map[int32][]tp{}
	for _, t := range parts {
		if _, ok := done[t]; ok {
			continue
		}
		node, _, ok := a.cl.leader(t.topic, t.partition)
		if !ok {
			node = -1
		}
		out[node] = append(out[node], t)
	}
	return out
}

// listOffsetsOn sends one ListOffsets to a leader and records the
// answers in out. Node -1 stands for partitions without a known leader:
// those of a topic metadata does not know fail for good, the others are
// retried.
func (a *Admin) listOffsetsOn(ctx context.Context, node int32, parts []tp, ts int64, out map[tp]int64) error {
	if node < 0 {
		for _, t := range parts {
			if tm, ok := a.cl.topic(t.topic); ok && (tm.err != nil || int(t.partition) >= len(tm.partitions)) {
				return fmt.Errorf("list offsets %s[%d]: %w", t.topic, t.partition, cmp.Or(tm.err, error(ErrUnknownTopicOrPartition)))
			}
		}
		return ErrLeaderNotAvailable
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	for topic, ps := range byTopic(parts) {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for _, p := range ps {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = p, -1, ts
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	rctx, cancel := context.WithTimeout(ctx, a.cfg.requestTimeout)
	defer cancel()
	resp, err := a.cl.request(rctx, node, req, 0)
	if err != nil {
		return err
	}
	var first error
	for _, rt := range resp.(*kmsg.ListOffsetsResponse).Topics {
		for _, rp := range rt.Partitions {
			if err := kafkaErr(rp.ErrorCode, nil); err != nil {
				first = cmp.Or(first, fmt.Errorf("list offsets %s[%d]: %w", rt.Topic, rp.Partition, err))
				continue
			}
			out[tp{rt.Topic, rp.Partition}] = rp.Offset
		}
	}
	return first
}
