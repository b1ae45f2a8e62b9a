package console

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
)

// maxGroups bounds the groups the group list describes.
const maxGroups = 200

// groupRow is a group of the group list; Lag is -1 when unknown.
type groupRow struct {
	Name        string `json:"name"`
	State       string `json:"state"`
	Protocol    string `json:"protocol"`
	Members     int    `json:"members"`
	Coordinator int32  `json:"coordinator"`
	Lag         int64  `json:"lag"`
	Error       string `json:"error,omitempty"`
}

type groupsResp struct {
	Groups    []groupRow `json:"groups"`
	Truncated bool       `json:"truncated"` // more than maxGroups: the first by name are shown
}

// groups lists the groups the visitor may describe, with their lag.
func (c *Console) groups(ctx context.Context, a *access, _ *http.Request) (any, error) {
	listed, err := a.adm.ListGroups(ctx)
	if err != nil {
		return nil, err
	}
	names := listed.Groups()
	slices.Sort(names)
	out := groupsResp{Groups: []groupRow{}}
	if len(names) > maxGroups {
		names, out.Truncated = names[:maxGroups], true
	}
	if len(names) == 0 {
		return out, nil
	}
	lags, err := a.adm.Lag(ctx, names...)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		l, ok := lags[name]
		row := groupRow{Name: name, State: listed[name].State, Coordinator: listed[name].Coordinator, Lag: -1}
		if ok {
			row.State, row.Protocol, row.Members = l.State, l.Protocol, len(l.Members)
			if err := l.Error(); err != nil {
				row.Error = err.Error()
			} else {
				_, row.Lag = offsetRows(l.Lag)
			}
		}
		out.Groups = append(out.Groups, row)
	}
	return out, nil
}

type memberRow struct {
	ID         string   `json:"id"`
	InstanceID string   `json:"instanceId,omitempty"`
	ClientID   string   `json:"clientId"`
	Host       string   `json:"host"`
	Assigned   []string `json:"assigned"` // "topic-partition"
}

// offsetRow is a partition of a group; -1 where unknown.
type offsetRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"`
	End       int64  `json:"end"`
	Lag       int64  `json:"lag"`
	Member    string `json:"member,omitempty"`
	Error     string `json:"error,omitempty"`
}

type groupResp struct {
	Name         string      `json:"name"`
	State        string      `json:"state"`
	ProtocolType string      `json:"protocolType"`
	Protocol     string      `json:"protocol"`
	Coordinator  int32       `json:"coordinator"`
	Members      []memberRow `json:"members"`
	Offsets      []offsetRow `json:"offsets"`
	// History is the group's lag over time as this node sampled it.
	History []lagPoint `json:"history"`
}

// group describes one group: members, assignment, lag per partition, and
// the lag history of the topics the visitor may see.
func (c *Console) group(ctx context.Context, a *access, r *http.Request) (any, error) {
	name := r.PathValue("group")
	lags, err := a.adm.Lag(ctx, name)
	if err != nil {
		return nil, err
	}
	l, ok := lags[name]
	if !ok {
		return nil, ErrNotFound
	}
	if err := l.Error(); err != nil {
		return nil, fmt.Errorf("group %q: %w", name, err)
	}
	if l.State == "Dead" && len(l.Lag) == 0 {
		return nil, fmt.Errorf("group %q: %w", name, ErrNotFound)
	}
	out := groupResp{Name: name, State: l.State, ProtocolType: l.ProtocolType, Protocol: l.Protocol,
		Coordinator: l.Coordinator.NodeID, Members: []memberRow{}, Offsets: []offsetRow{}}
	for _, m := range l.Members {
		out.Members = append(out.Members, member(m))
	}
	out.Offsets, _ = offsetRows(l.Lag)
	visible, _, err := visibleTopics(ctx, a)
	if err != nil {
		return nil, err
	}
	out.History = lagHistory(c.hist.samples(), name, visible)
	if out.History == nil {
		out.History = []lagPoint{}
	}
	return out, nil
}

// offsetRows are a group's partitions that it committed or that are
// assigned to a member (kadm also lists the other partitions of a
// committed topic, which the group never read), and their total lag.
func offsetRows(lag kadm.GroupLag) (rows []offsetRow, total int64) {
	rows = []offsetRow{}
	for _, ml := range lag.Sorted() {
		if ml.Commit.At < 0 && ml.Member == nil {
			continue
		}
		row := offsetRow{Topic: ml.Topic, Partition: ml.Partition, Committed: ml.Commit.At, End: ml.End.Offset, Lag: ml.Lag}
		if ml.Member != nil {
			row.Member = ml.Member.MemberID
		}
		if ml.Err != nil {
			row.Error = ml.Err.Error()
		}
		if row.Lag > 0 {
			total += row.Lag
		}
		rows = append(rows, row)
	}
	return rows, total
}

func member(m kadm.DescribedGroupMember) memberRow {
	row := memberRow{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assigned: []string{}}
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
	slices.SortFunc(row.Assigned, cmp.Compare[string])
	return row
}
