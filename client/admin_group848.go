package client

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group types as ListGroups v5 and the describe calls name them.
const (
	classicGroup  = "classic"
	consumerGroup = "consumer"
)

// describeConsumerGroup describes a KIP-848 group with
// ConsumerGroupDescribe. A classic group, or one that does not exist,
// gives ErrGroupIDNotFound; a broker without the API, ErrUnsupported.
func (a *Admin) describeConsumerGroup(ctx context.Context, group string) (*GroupDetail, error) {
	coord := newCoordinator(a.cl, group)
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := a.groupRequest(ctx, coord, req, func(r kmsg.Response) error {
		gs := r.(*kmsg.ConsumerGroupDescribeResponse).Groups
		if len(gs) != 1 {
			return fmt.Errorf("client: ConsumerGroupDescribe answered %d groups for 1", len(gs))
		}
		return kafkaErr(gs[0].ErrorCode, gs[0].ErrorMessage)
	})
	if err != nil {
		return nil, fmt.Errorf("describe group %q: %w", group, err)
	}
	rg := resp.(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
	node, _ := coord.find(ctx)
	d := &GroupDetail{Group: group, State: rg.State, ProtocolType: consumerProtocol, Coordinator: node,
		Type: consumerGroup, GroupEpoch: rg.Epoch, AssignmentEpoch: rg.AssignmentEpoch, Assignor: rg.AssignorName}
	names, err := a.topicNames(ctx, rg.Members)
	if err != nil {
		return nil, err
	}
	for _, m := range rg.Members {
		gm := GroupMember{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, MemberEpoch: m.MemberEpoch,
			Topics: slices.Sorted(slices.Values(m.SubscribedTopics)), Assignment: byName(m.Assignment, names), Target: byName(m.TargetAssignment, names)}
		if m.InstanceID != nil {
			gm.InstanceID = *m.InstanceID
		}
		d.Members = append(d.Members, gm)
	}
	slices.SortFunc(d.Members, func(x, y GroupMember) int { return cmp.Compare(x.MemberID, y.MemberID) })
	return d, nil
}

// topicNames maps the ids of the topics in the members' assignments that
// the broker did not name to their names, from metadata.
func (a *Admin) topicNames(ctx context.Context, members []kmsg.ConsumerGroupDescribeResponseGroupMember) (map[[16]byte]string, error) {
	names := map[[16]byte]string{}
	unnamed := false
	for _, m := range members {
		for _, as := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, t := range as.TopicPartitions {
				if t.Topic != "" {
					names[t.TopicID] = t.Topic
				} else {
					unnamed = true
				}
			}
		}
	}
	if !unnamed {
		return names, nil
	}
	md, err := a.metadata(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("topic names for the assignment: %w", err)
	}
	for _, t := range md.Topics {
		if t.Topic != nil {
			names[t.TopicID] = *t.Topic
		}
	}
	return names, nil
}

// byName turns an assignment by topic id into partitions by topic name,
// sorted; a topic metadata does not name shows as its id.
func byName(as kmsg.Assignment, names map[[16]byte]string) map[string][]int32 {
	if len(as.TopicPartitions) == 0 {
		return nil
	}
	out := map[string][]int32{}
	for _, t := range as.TopicPartitions {
		name, ok := names[t.TopicID]
		if !ok {
			name = fmt.Sprintf("%x", t.TopicID)
		}
		out[name] = append(out[name], t.Partitions...)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}
