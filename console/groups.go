package console

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxGroups bounds the groups the group list describes.
const maxGroups = 200

// The group types ListGroups v5 reports (KIP-848, KIP-932). A group listed
// without a type (a broker before ListGroups v5) is classic.
const (
	typeClassic  = "classic"
	typeConsumer = "consumer"
	typeShare    = "share"
)

// groupRow is a group of the group list; Lag is -1 when unknown (and for
// a share group, which commits no offsets).
type groupRow struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	State       string `json:"state"`
	Protocol    string `json:"protocol"` // the assignor
	Members     int    `json:"members"`
	Coordinator int32  `json:"coordinator"`
	Lag         int64  `json:"lag"`
	Error       string `json:"error,omitempty"`
}

type groupsResp struct {
	Groups    []groupRow `json:"groups"`
	Truncated bool       `json:"truncated"` // more than maxGroups: the first by name are shown
}

// groups lists the groups the visitor may describe: each with its type,
// and its state and members as the describe API of its type tells them
// (DescribeGroups answers classic groups only), with its lag.
func (c *Console) groups(ctx context.Context, a *access, _ *http.Request) (any, error) {
	listed, err := listGroups(ctx, a)
	if err != nil {
		return nil, err
	}
	out := groupsResp{Groups: []groupRow{}}
	if len(listed) > maxGroups {
		listed, out.Truncated = listed[:maxGroups], true
	}
	byType := map[string][]string{}
	for _, g := range listed {
		byType[g.Type] = append(byType[g.Type], g.Name)
	}
	described := map[string]groupRow{}
	for _, kind := range []struct {
		typ      string
		describe func(context.Context, *access, []string) (map[string]groupRow, error)
	}{{typeClassic, classicRows}, {typeConsumer, consumerRows}, {typeShare, shareRows}} {
		if len(byType[kind.typ]) == 0 {
			continue
		}
		rows, err := kind.describe(ctx, a, byType[kind.typ])
		if err != nil {
			return nil, err
		}
		for name, row := range rows {
			described[name] = row
		}
	}
	for _, g := range listed {
		row, ok := described[g.Name]
		if !ok { // a type the console does not describe (streams): as listed
			row = groupRow{State: g.State, Lag: -1}
		}
		row.Name, row.Type, row.Coordinator = g.Name, g.Type, g.Coordinator
		out.Groups = append(out.Groups, row)
	}
	return out, nil
}

// listGroups lists every broker's groups (ListGroups v5 tells each one's
// type), sorted by name.
func listGroups(ctx context.Context, a *access) ([]groupRow, error) {
	var out []groupRow
	for _, sh := range a.cl.RequestSharded(ctx, kmsg.NewPtrListGroupsRequest()) {
		if sh.Err != nil {
			return nil, sh.Err
		}
		resp := sh.Resp.(*kmsg.ListGroupsResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, err
		}
		for _, g := range resp.Groups {
			out = append(out, groupRow{Name: g.Group, Type: strings.ToLower(cmp.Or(g.GroupType, typeClassic)),
				State: g.GroupState, Coordinator: sh.Meta.NodeID})
		}
	}
	slices.SortFunc(out, func(x, y groupRow) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}

// classicRows describes classic groups with DescribeGroups and their lag.
func classicRows(ctx context.Context, a *access, names []string) (map[string]groupRow, error) {
	lags, err := a.adm.Lag(ctx, names...)
	if err != nil {
		return nil, err
	}
	out := map[string]groupRow{}
	for name, l := range lags {
		row := groupRow{State: l.State, Protocol: l.Protocol, Members: len(l.Members), Lag: -1}
		if err := l.Error(); err != nil {
			row.Error = err.Error()
		} else {
			_, row.Lag = offsetRows(l.Lag)
		}
		out[name] = row
	}
	return out, nil
}

// consumerRows describes KIP-848 consumer groups with
// ConsumerGroupDescribe, and their lag from their committed offsets.
func consumerRows(ctx context.Context, a *access, names []string) (map[string]groupRow, error) {
	ds, err := a.adm.DescribeConsumerGroups(ctx, names...)
	if err != nil && len(ds) == 0 {
		return nil, err
	}
	offs := consumerOffsets(ctx, a, ds)
	out := map[string]groupRow{}
	for name, d := range ds {
		row := groupRow{State: d.State, Protocol: d.AssignorName, Members: len(d.Members), Lag: -1}
		switch o := offs[name]; {
		case d.Err != nil:
			row.Error = d.Err.Error()
		case o.err != nil:
			row.Error = o.err.Error()
		default:
			row.Lag = o.total
		}
		out[name] = row
	}
	return out, nil
}

// shareRows describes share groups with ShareGroupDescribe; a share group
// commits no offsets, so its lag is unknown here.
func shareRows(ctx context.Context, a *access, names []string) (map[string]groupRow, error) {
	ds, err := a.adm.DescribeShareGroups(ctx, names...)
	if err != nil && len(ds) == 0 {
		return nil, err
	}
	out := map[string]groupRow{}
	for name, d := range ds {
		row := groupRow{State: d.GroupState, Protocol: d.Assignor, Members: len(d.Members), Lag: -1}
		if d.Err != nil {
			row.Error = d.Err.Error()
		}
		out[name] = row
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

// partitionNames are "topic-partition" of a set, sorted.
func partitionNames(s kadm.TopicsSet) []string {
	out := []string{}
	for t, ps := range s {
		for p := range ps {
			out = append(out, fmt.Sprintf("%s-%d", t, p))
		}
	}
	slices.Sort(out)
	return out
}
