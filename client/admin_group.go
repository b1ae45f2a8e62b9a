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

// GroupListing is a group as ListGroups reports it.
type GroupListing struct {
	Group        string
	ProtocolType string // "consumer" for consumer groups; empty for a group with only committed offsets
	State        string // Empty, Stable, PreparingRebalance, CompletingRebalance, Dead (classic); Empty, Assigning, Reconciling, Stable (consumer)
	Type         string // "classic" or "consumer" (KIP-848); "classic" from a broker older than ListGroups v5
	Coordinator  int32  // the broker that listed it
}

// GroupMember is a member of a group as DescribeGroups reports it.
type GroupMember struct {
	MemberID   string
	InstanceID string // empty for a dynamic member
	ClientID   string
	ClientHost string
	// Topics and Assignment are decoded from the member's subscription
	// and assignment when the group's protocol type is "consumer" and the
	// group is Stable (the coordinator reports them only then).
	Topics     []string
	Assignment map[string][]int32 // by topic, partitions sorted
	// MemberEpoch and Target are a KIP-848 member's epoch and the target
	// assignment the coordinator is moving it to (Assignment is what it
	// owns now); -1 and nil in a classic group.
	MemberEpoch int32
	Target      map[string][]int32
}

// GroupDetail is a group as DescribeGroups reports it.
type GroupDetail struct {
	Group        string
	State        string
	ProtocolType string
	Protocol     string // the assignment strategy (range, cooperative-sticky, ...) when Stable
	Coordinator  int32
	Members      []GroupMember // sorted by member id
	// Type is "classic" or "consumer" (a KIP-848 group); a consumer
	// group has a group epoch, the epoch of its target assignment, and
	// the server assignor that computed it.
	Type            string
	GroupEpoch      int32
	AssignmentEpoch int32
	Assignor        string
}

// groupRequest sends a group's request to its coordinator, retrying
// retriable errors (the coordinator moving or loading among them) until
// ctx ends. errOf extracts the response's error.
func (a *Admin) groupRequest(ctx context.Context, coord *coordinator, req kmsg.Request, errOf func(kmsg.Response) error) (kmsg.Response, error) {
	var resp kmsg.Response
	err := a.retry(ctx, func() error {
		r, err := coord.request(ctx, classDefault, req, 0)
		if err != nil {
			return err
		}
		if err := errOf(r); err != nil {
			coord.noteErr(err)
			return err
		}
		resp = r
		return nil
	})
	return resp, err
}

// ListGroups asks every broker for the groups it coordinates and returns
// them sorted by name.
func (a *Admin) ListGroups(ctx context.Context) ([]GroupListing, error) {
	if err := a.retry(ctx, func() error { return a.cl.waitRefresh(ctx) }); err != nil {
		return nil, err
	}
	a.cl.mu.Lock()
	nodes := slices.Sorted(maps.Keys(a.cl.brokers))
	a.cl.mu.Unlock()
	var out []GroupListing
	for _, node := range nodes {
		var r *kmsg.ListGroupsResponse
		err := a.retry(ctx, func() error {
			rctx, cancel := context.WithTimeout(ctx, a.cfg.requestTimeout)
			defer cancel()
			resp, err := a.cl.request(rctx, node, kmsg.NewPtrListGroupsRequest(), 0)
			if err != nil {
				return err
			}
			r = resp.(*kmsg.ListGroupsResponse)
			return kafkaErr(r.ErrorCode, nil)
		})
		if err != nil {
			return nil, fmt.Errorf("list groups of broker %d: %w", node, err)
		}
		for _, g := range r.Groups {
			typ := g.GroupType
			if typ == "" {
				typ = classicGroup // before v5 every group is classic
			}
			out = append(out, GroupListing{Group: g.Group, ProtocolType: g.ProtocolType, State: g.GroupState, Type: typ, Coordinator: node})
		}
	}
	slices.SortFunc(out, func(x, y GroupListing) int { return cmp.Compare(x.Group, y.Group) })
	return out, nil
}

// DescribeGroup describes a group: its state, strategy and members, with
// each member's subscription and assignment decoded for a consumer group.
// A KIP-848 group is described with ConsumerGroupDescribe (epochs,
// assignor, each member's epoch and target assignment), a classic one
// with DescribeGroups. A group that does not exist gives
// ErrGroupIDNotFound.
func (a *Admin) DescribeGroup(ctx context.Context, group string) (*GroupDetail, error) {
	d, err := a.describeConsumerGroup(ctx, group)
	if err == nil || !(errors.Is(err, ErrGroupIDNotFound) || errors.Is(err, ErrUnsupported) || errors.Is(err, ErrUnsupportedVersion)) {
		return d, err
	}
	return a.describeClassicGroup(ctx, group)
}

// describeClassicGroup describes a classic group with DescribeGroups.
func (a *Admin) describeClassicGroup(ctx context.Context, group string) (*GroupDetail, error) {
	coord := newCoordinator(a.cl, group)
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := a.groupRequest(ctx, coord, req, func(r kmsg.Response) error {
		gs := r.(*kmsg.DescribeGroupsResponse).Groups
		if len(gs) != 1 {
			return fmt.Errorf("client: DescribeGroups answered %d groups for 1", len(gs))
		}
		return kafkaErr(gs[0].ErrorCode, nil)
	})
	if err != nil {
		return nil, fmt.Errorf("describe group %q: %w", group, err)
	}
	rg := resp.(*kmsg.DescribeGroupsResponse).Groups[0]
	if rg.State == "Dead" {
		return nil, fmt.Errorf("group %q: %w", group, ErrGroupIDNotFound)
	}
	node, _ := coord.find(ctx)
	d := &GroupDetail{Group: group, State: rg.State, ProtocolType: rg.ProtocolType, Protocol: rg.Protocol, Coordinator: node,
		Type: classicGroup, GroupEpoch: -1, AssignmentEpoch: -1}
	for _, m := range rg.Members {
		d.Members = append(d.Members, describeMember(m, rg.ProtocolType == consumerProtocol))
	}
	slices.SortFunc(d.Members, func(x, y GroupMember) int { return cmp.Compare(x.MemberID, y.MemberID) })
	return d, nil
}

// describeMember converts a described member, decoding its consumer
// protocol subscription and assignment when consumer is set. Undecodable
// bytes leave the fields empty: describing must not fail for them.
func describeMember(m kmsg.DescribeGroupsResponseGroupMember, consumer bool) GroupMember {
	gm := GroupMember{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, MemberEpoch: -1}
	if m.InstanceID != nil {
		gm.InstanceID = *m.InstanceID
	}
	if !consumer {
		return gm
	}
	var meta kmsg.ConsumerMemberMetadata
	if len(m.ProtocolMetadata) > 0 && meta.ReadFrom(m.ProtocolMetadata) == nil {
		gm.Topics = slices.Sorted(slices.Values(meta.Topics))
	}
	if len(m.MemberAssignment) > 0 {
		if a, err := decodeAssignment(m.MemberAssignment); err == nil {
			gm.Assignment = a
		}
	}
	return gm
}

// DeleteGroup deletes a group and its committed offsets. Kafka refuses to
// delete a group with members (ErrNonEmptyGroup); a group that does not
// exist gives ErrGroupIDNotFound.
func (a *Admin) DeleteGroup(ctx context.Context, group string) error {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = []string{group}
	_, err := a.groupRequest(ctx, newCoordinator(a.cl, group), req, func(r kmsg.Response) error {
		gs := r.(*kmsg.DeleteGroupsResponse).Groups
		if len(gs) != 1 {
			return fmt.Errorf("client: DeleteGroups answered %d groups for 1", len(gs))
		}
		return kafkaErr(gs[0].ErrorCode, nil)
	})
	if err != nil {
		return fmt.Errorf("delete group %q: %w", group, err)
	}
	return nil
}

// isGroupNotFound reports whether err says the group does not exist.
func isGroupNotFound(err error) bool { return errors.Is(err, ErrGroupIDNotFound) }
