package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

type memberRow struct {
	ID         string   `json:"id"`
	InstanceID string   `json:"instanceId,omitempty"`
	ClientID   string   `json:"clientId"`
	Host       string   `json:"host"`
	Type       string   `json:"type"`            // the member's protocol: classic, consumer or share
	Epoch      *int32   `json:"epoch,omitempty"` // a KIP-848 or share member's epoch
	Assigned   []string `json:"assigned"`        // "topic-partition"
}

// offsetRow is a partition of a group; -1 where unknown.
type offsetRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"` // a share group's share-partition start offset
	End       int64  `json:"end"`
	Lag       int64  `json:"lag"`
	Member    string `json:"member,omitempty"`
	Error     string `json:"error,omitempty"`
}

type groupResp struct {
	Name            string      `json:"name"`
	Type            string      `json:"type"`
	State           string      `json:"state"`
	ProtocolType    string      `json:"protocolType"`
	Protocol        string      `json:"protocol"`
	Coordinator     int32       `json:"coordinator"`
	Epoch           *int32      `json:"epoch,omitempty"` // group and assignment epochs of a consumer or share group
	AssignmentEpoch *int32      `json:"assignmentEpoch,omitempty"`
	Members         []memberRow `json:"members"`
	Offsets         []offsetRow `json:"offsets"`
	// OffsetsNote says why there are no offsets to show, when the
	// cluster cannot tell them (a share group's, without
	// DescribeShareGroupOffsets).
	OffsetsNote string `json:"offsetsNote,omitempty"`
	// History is the group's lag over time as this node sampled it.
	History []lagPoint `json:"history"`
}

// errNotThisType: the group is not of the type a describe asked about.
var errNotThisType = errors.New("console: not a group of this type")

// group describes one group: members, assignment, lag per partition, and
// the lag history of the topics the visitor may see. DescribeGroups
// answers classic groups only (Kafka 4.x), so a group it does not know is
// looked for as a consumer group, then as a share group.
func (c *Console) group(ctx context.Context, a *access, r *http.Request) (any, error) {
	name := r.PathValue("group")
	var out *groupResp
	var err error
	for _, describe := range []func(context.Context, *access, string) (*groupResp, error){
		describeClassic, describeConsumer, describeShare,
	} {
		if out, err = describe(ctx, a, name); !errors.Is(err, errNotThisType) {
			break
		}
	}
	if errors.Is(err, errNotThisType) {
		return nil, fmt.Errorf("group %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	out.Name, out.History = name, []lagPoint{}
	if out.Type != typeShare {
		visible, _, err := visibleTopics(ctx, a)
		if err != nil {
			return nil, err
		}
		if h := lagHistory(c.hist.samples(), name, visible); h != nil {
			out.History = h
		}
	}
	return out, nil
}

// describeClassic describes a classic group with DescribeGroups and its
// lag. GROUP_ID_NOT_FOUND (DescribeGroups v6), or a Dead group without
// offsets (below v6), is errNotThisType.
func describeClassic(ctx context.Context, a *access, name string) (*groupResp, error) {
	lags, err := a.adm.Lag(ctx, name)
	if err != nil {
		return nil, err
	}
	l, ok := lags[name]
	if !ok || errors.Is(l.Error(), kerr.GroupIDNotFound) || (l.Error() == nil && l.State == "Dead" && len(l.Lag) == 0) {
		return nil, errNotThisType
	}
	if err := l.Error(); err != nil {
		return nil, fmt.Errorf("group %q: %w", name, err)
	}
	out := &groupResp{Type: typeClassic, State: l.State, ProtocolType: l.ProtocolType, Protocol: l.Protocol,
		Coordinator: l.Coordinator.NodeID, Members: []memberRow{}}
	for _, m := range l.Members {
		out.Members = append(out.Members, member(m))
	}
	out.Offsets, _ = offsetRows(l.Lag)
	return out, nil
}

func member(m kadm.DescribedGroupMember) memberRow {
	row := memberRow{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Type: typeClassic, Assigned: []string{}}
	if m.InstanceID != nil {
		row.InstanceID = *m.InstanceID
	}
	if as, ok := m.Assigned.AsConsumer(); ok {
		for _, t := range as.Topics {
			for _, p := range t.Partitions {
				row.Assigned = append(row.Assigned, fmt.Sprintf("%s-%d", t.Topic, p))
			}
		}
	}
	slices.Sort(row.Assigned)
	return row
}

// describeConsumer describes a KIP-848 consumer group with
// ConsumerGroupDescribe (its classic members too, mid online migration)
// and its committed offsets and lag.
func describeConsumer(ctx context.Context, a *access, name string) (*groupResp, error) {
	ds, err := a.adm.DescribeConsumerGroups(ctx, name)
	if err != nil {
		return nil, err
	}
	d, ok := ds[name]
	if !ok || errors.Is(d.Err, kerr.GroupIDNotFound) {
		return nil, errNotThisType
	}
	if d.Err != nil {
		return nil, fmt.Errorf("group %q: %w", name, d.Err)
	}
	out := &groupResp{Type: typeConsumer, State: d.State, ProtocolType: "consumer", Protocol: d.AssignorName,
		Coordinator: d.Coordinator.NodeID, Epoch: &d.Epoch, AssignmentEpoch: &d.AssignmentEpoch, Members: []memberRow{}}
	for _, m := range d.Members {
		row := memberRow{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Type: typeConsumer,
			Epoch: &m.MemberEpoch, Assigned: partitionNames(m.Assignment)}
		if m.MemberType == 0 { // ConsumerGroupDescribe v1: a classic member of the group
			row.Type = typeClassic
		}
		if m.InstanceID != nil {
			row.InstanceID = *m.InstanceID
		}
		out.Members = append(out.Members, row)
	}
	o := consumerOffsets(ctx, a, ds)[name]
	if o.err != nil {
		return nil, fmt.Errorf("group %q offsets: %w", name, o.err)
	}
	out.Offsets = o.rows
	return out, nil
}

// describeShare describes a share group with ShareGroupDescribe, and its
// share-partition start offsets and lag where the cluster serves
// DescribeShareGroupOffsets; where it does not, it says so.
func describeShare(ctx context.Context, a *access, name string) (*groupResp, error) {
	ds, err := a.adm.DescribeShareGroups(ctx, name)
	if err != nil {
		return nil, err
	}
	d, ok := ds[name]
	if !ok || errors.Is(d.Err, kerr.GroupIDNotFound) {
		return nil, errNotThisType
	}
	if d.Err != nil {
		return nil, fmt.Errorf("group %q: %w", name, d.Err)
	}
	out := &groupResp{Type: typeShare, State: d.GroupState, ProtocolType: "share", Protocol: d.Assignor,
		Coordinator: d.Coordinator.NodeID, Epoch: &d.GroupEpoch, AssignmentEpoch: &d.AssignmentEpoch,
		Members: []memberRow{}, Offsets: []offsetRow{}}
	for _, m := range d.Members {
		out.Members = append(out.Members, memberRow{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost,
			Type: typeShare, Epoch: &m.MemberEpoch, Assigned: partitionNames(m.Assignment)})
	}
	out.Offsets, out.OffsetsNote, err = shareOffsets(ctx, a, name)
	return out, err
}
