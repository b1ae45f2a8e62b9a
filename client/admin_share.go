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

// shareGroupType is a share group's type as ListGroups v5 and the
// describe calls name it.
const shareGroupType = "share"

// DescribeShareGroup describes a share group (KIP-932) with
// ShareGroupDescribe: its state, group and assignment epochs, assignor,
// and each member's epoch, subscription and assigned partitions. A group
// that does not exist (or is not a share group) gives ErrGroupIDNotFound;
// a cluster without share groups, a *ShareUnsupportedError.
func (a *Admin) DescribeShareGroup(ctx context.Context, group string) (*GroupDetail, error) {
	coord := newCoordinator(a.cl, group)
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{group}
	resp, err := a.groupRequest(ctx, coord, req, func(r kmsg.Response) error {
		gs := r.(*kmsg.ShareGroupDescribeResponse).Groups
		if len(gs) != 1 {
			return fmt.Errorf("client: ShareGroupDescribe answered %d groups for 1", len(gs))
		}
		return kafkaErr(gs[0].ErrorCode, gs[0].ErrorMessage)
	})
	if err != nil {
		return nil, fmt.Errorf("describe share group %q: %w", group, shareUnsupported("ShareGroupDescribe", err))
	}
	rg := resp.(*kmsg.ShareGroupDescribeResponse).Groups[0]
	if rg.GroupState == "Dead" {
		return nil, fmt.Errorf("share group %q: %w", group, ErrGroupIDNotFound)
	}
	node, _ := coord.find(ctx)
	d := &GroupDetail{Group: group, State: rg.GroupState, ProtocolType: shareGroupType, Coordinator: node,
		Type: shareGroupType, GroupEpoch: rg.GroupEpoch, AssignmentEpoch: rg.AssignmentEpoch, Assignor: rg.Assignor}
	var names map[[16]byte]string
	for _, m := range rg.Members {
		gm := GroupMember{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, MemberEpoch: m.MemberEpoch,
			Topics: slices.Sorted(slices.Values(m.SubscribedTopicNames))}
		for _, t := range m.Assignment.TopicPartitions {
			name := t.Topic
			if name == "" {
				if names == nil {
					names = a.allTopicNames(ctx)
				}
				name = cmp.Or(names[t.TopicID], fmt.Sprintf("%x", t.TopicID))
			}
			if gm.Assignment == nil {
				gm.Assignment = map[string][]int32{}
			}
			gm.Assignment[name] = slices.Sorted(slices.Values(append(gm.Assignment[name], t.Partitions...)))
		}
		d.Members = append(d.Members, gm)
	}
	slices.SortFunc(d.Members, func(x, y GroupMember) int { return cmp.Compare(x.MemberID, y.MemberID) })
	return d, nil
}

// allTopicNames maps every topic id to its name, from metadata; empty
// when metadata cannot be had (names then show as ids).
func (a *Admin) allTopicNames(ctx context.Context) map[[16]byte]string {
	out := map[[16]byte]string{}
	md, err := a.metadata(ctx, nil)
	if err != nil {
		return out
	}
	for _, t := range md.Topics {
		if t.Topic != nil {
			out[t.TopicID] = *t.Topic
		}
	}
	return out
}

// ShareGroupOffset is one partition of a share group: the share-partition
// start offset (records below it are all acknowledged or archived) and
// the records from there to the log end not yet settled.
type ShareGroupOffset struct {
	Topic       string
	Partition   int32
	StartOffset int64 // -1 when the group has not started on the partition
	LeaderEpoch int32
	Lag         int64 // -1 when the broker does not say (DescribeShareGroupOffsets v0)
	Err         error // a partition-level error
}

// ShareGroupOffsets returns the start offset and lag of every partition a
// share group has state for, sorted by topic and partition
// (DescribeShareGroupOffsets). A group without state gives none.
func (a *Admin) ShareGroupOffsets(ctx context.Context, group string) ([]ShareGroupOffset, error) {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group // Topics nil: every topic the group has state for
	req.Groups = append(req.Groups, rg)
	resp, err := a.groupRequest(ctx, newCoordinator(a.cl, group), req, func(r kmsg.Response) error {
		gs := r.(*kmsg.DescribeShareGroupOffsetsResponse).Groups
		if len(gs) != 1 {
			return fmt.Errorf("client: DescribeShareGroupOffsets answered %d groups for 1", len(gs))
		}
		return kafkaErr(gs[0].ErrorCode, gs[0].ErrorMessage)
	})
	if err != nil {
		return nil, fmt.Errorf("offsets of share group %q: %w", group, shareUnsupported("DescribeShareGroupOffsets", err))
	}
	var out []ShareGroupOffset
	for _, rt := range resp.(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].Topics {
		for _, rp := range rt.Partitions {
			lag := rp.Lag
			if resp.GetVersion() < 1 {
				lag = -1
			}
			out = append(out, ShareGroupOffset{Topic: rt.Topic, Partition: rp.Partition, StartOffset: rp.StartOffset,
				LeaderEpoch: rp.LeaderEpoch, Lag: lag, Err: kafkaErr(rp.ErrorCode, rp.ErrorMessage)})
		}
	}
	slices.SortFunc(out, func(x, y ShareGroupOffset) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	return out, nil
}

// ResetShareGroupOffsets sets the start offset of every partition of
// topics for a share group that has no members: to the start of each
// partition (AtStart), its end (AtEnd), or an exact offset (At), clamped
// to the log. Records before the new start are never delivered; records
// from it on are delivered again. A group with members gives a
// *GroupNotEmptyError (errors.Is ErrNonEmptyGroup). It returns what
// changed, sorted.
func (a *Admin) ResetShareGroupOffsets(ctx context.Context, group string, to Offset, topics ...string) ([]OffsetReset, error) {
	if len(topics) == 0 {
		return nil, fmt.Errorf("reset share group %q: %w", group, ErrNoOffsetsToReset)
	}
	d, err := a.DescribeShareGroup(ctx, group)
	switch {
	case err == nil && len(d.Members) > 0:
		return nil, &GroupNotEmptyError{Group: group, State: d.State, Members: len(d.Members)}
	case err != nil && !isGroupNotFound(err):
		return nil, err
	}
	old := map[tp]int64{}
	if offs, err := a.ShareGroupOffsets(ctx, group); err == nil {
		for _, o := range offs {
			old[tp{o.Topic, o.Partition}] = o.StartOffset
		}
	}
	parts, err := a.resetPartitions(ctx, group, nil, topics)
	if err != nil {
		return nil, err
	}
	targets, err := a.resetTargets(ctx, parts, to)
	if err != nil {
		return nil, err
	}
	if err := a.alterShareOffsets(ctx, group, targets); err != nil {
		return nil, err
	}
	out := make([]OffsetReset, 0, len(parts))
	for _, t := range parts {
		o, ok := old[t]
		if !ok {
			o = -1
		}
		out = append(out, OffsetReset{Topic: t.topic, Partition: t.partition, Old: o, New: targets[t]})
	}
	return out, nil
}

// alterShareOffsets sends AlterShareGroupOffsets and checks every
// partition's answer.
func (a *Admin) alterShareOffsets(ctx context.Context, group string, targets map[tp]int64) error {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	for topic, ps := range byTopic(slices.Collect(maps.Keys(targets))) {
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = topic
		for _, p := range ps {
			rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
			rp.Partition, rp.StartOffset = p, targets[tp{topic, p}]
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	_, err := a.groupRequest(ctx, newCoordinator(a.cl, group), req, func(r kmsg.Response) error {
		resp := r.(*kmsg.AlterShareGroupOffsetsResponse)
		if err := kafkaErr(resp.ErrorCode, resp.ErrorMessage); err != nil {
			return err
		}
		var errs []error
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if err := kafkaErr(rp.ErrorCode, rp.ErrorMessage); err != nil {
					errs = append(errs, fmt.Errorf("%s[%d]: %w", rt.Topic, rp.Partition, err))
				}
			}
		}
		return errors.Join(errs...)
	})
	if errors.Is(err, ErrNonEmptyGroup) {
		return &GroupNotEmptyError{Group: group, State: "joined meanwhile", Members: -1}
	}
	if err != nil {
		return fmt.Errorf("reset offsets of share group %q: %w", group, shareUnsupported("AlterShareGroupOffsets", err))
	}
	return nil
}
