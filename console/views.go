package console

import (
	"cmp"
	"context"
	"net"
	"net/http"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/minikafka/minikafka-go/metrics"
)

// brokerRow is a broker of the overview. A broker is down when the
// cluster knows it (a partition names it as a replica, or the node's
// metadata lists it) but the Kafka metadata does not list it as live.
type brokerRow struct {
	ID         int32  `json:"id"`
	Addr       string `json:"addr"`
	Up         bool   `json:"up"`
	Controller bool   `json:"controller"`
	Self       bool   `json:"self"` // the node serving this console
	// DownSince is when this node saw the broker go down (Unix
	// milliseconds); 0 when up or unknown.
	DownSince int64     `json:"downSince,omitempty"`
	Disk      *diskInfo `json:"disk,omitempty"`
}

// diskInfo is a node's data disk, in bytes.
type diskInfo struct {
	Total int64 `json:"total"`
	Free  int64 `json:"free"`
	Alert int   `json:"alert"` // 0 room, 1 low, 2 refusing writes
}

type overviewResp struct {
	ClusterID       string      `json:"clusterId"`
	NodeID          int32       `json:"nodeId"`
	Controller      int32       `json:"controller"`
	Brokers         []brokerRow `json:"brokers"`
	Topics          int         `json:"topics"`
	Partitions      int         `json:"partitions"`
	UnderReplicated int         `json:"underReplicated"`
	Offline         int         `json:"offline"`
}

// overview is the cluster at a glance, as far as the visitor may see it.
func (c *Console) overview(ctx context.Context, a *access, _ *http.Request) (any, error) {
	md, err := a.adm.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	st := c.cfg.Source.State()
	out := overviewResp{ClusterID: md.Cluster, NodeID: st.NodeID, Controller: md.Controller, Topics: len(md.Topics)}
	known := map[int32]string{}
	downSince := map[int32]int64{}
	for _, b := range st.Brokers {
		known[b.ID] = b.Addr
		if !b.Up && !b.DownSince.IsZero() {
			downSince[b.ID] = b.DownSince.UnixMilli()
		}
	}
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			out.Partitions++
			if p.Leader < 0 {
				out.Offline++
			}
			if len(p.ISR) < len(p.Replicas) {
				out.UnderReplicated++
			}
			for _, r := range p.Replicas {
				if _, ok := known[r]; !ok {
					known[r] = ""
				}
			}
		}
	}
	live := map[int32]bool{}
	for _, b := range md.Brokers {
		live[b.NodeID] = true
		known[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	for id, addr := range known {
		row := brokerRow{ID: id, Addr: addr, Up: live[id], Controller: id == md.Controller, Self: id == st.NodeID}
		if !row.Up {
			row.DownSince = downSince[id]
		}
		if row.Self && st.Disk.Total > 0 {
			row.Disk = &diskInfo{Total: st.Disk.Total, Free: st.Disk.Free, Alert: st.Disk.Alert()}
		}
		out.Brokers = append(out.Brokers, row)
	}
	slices.SortFunc(out.Brokers, func(x, y brokerRow) int { return cmp.Compare(x.ID, y.ID) })
	return out, nil
}

// topicRow is a topic of the topic list. Size is what this node's
// replicas of the topic hold on disk (SizedPartitions of them).
type topicRow struct {
	Name            string `json:"name"`
	Internal        bool   `json:"internal"`
	Partitions      int    `json:"partitions"`
	Replication     int    `json:"replication"`
	UnderReplicated int    `json:"underReplicated"`
	Offline         int    `json:"offline"`
	Records         int64  `json:"records"` // end minus start offsets: records and markers held
	Size            int64  `json:"size"`
	SizedPartitions int    `json:"sizedPartitions"`
}

// localReplicas indexes this node's replicas by topic and partition.
func localReplicas(st metrics.State) map[string]map[int32]metrics.Replica {
	out := map[string]map[int32]metrics.Replica{}
	for _, r := range st.Replicas {
		if out[r.Topic] == nil {
			out[r.Topic] = map[int32]metrics.Replica{}
		}
		out[r.Topic][r.Partition] = r
	}
	return out
}

// topics lists the topics the visitor may describe.
func (c *Console) topics(ctx context.Context, a *access, _ *http.Request) (any, error) {
	md, err := a.adm.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	names := md.Topics.Names()
	starts, _ := a.adm.ListStartOffsets(ctx, names...) // a partition without an answer counts no records
	ends, _ := a.adm.ListEndOffsets(ctx, names...)
	local := localReplicas(c.cfg.Source.State())
	out := []topicRow{}
	for _, t := range md.Topics.Sorted() {
		row := topicRow{Name: t.Topic, Internal: t.IsInternal, Partitions: len(t.Partitions)}
		for _, p := range t.Partitions {
			row.Replication = max(row.Replication, len(p.Replicas))
			if p.Leader < 0 {
				row.Offline++
			}
			if len(p.ISR) < len(p.Replicas) {
				row.UnderReplicated++
			}
			s, okS := starts.Lookup(t.Topic, p.Partition)
			e, okE := ends.Lookup(t.Topic, p.Partition)
			if okS && okE && s.Err == nil && e.Err == nil {
				row.Records += max(e.Offset-s.Offset, 0)
			}
			if r, ok := local[t.Topic][p.Partition]; ok {
				row.Size += r.LogSize
				row.SizedPartitions++
			}
		}
		out = append(out, row)
	}
	return out, nil
}

// partitionRow is a partition of a topic's page; Size is -1 where this
// node holds no replica.
type partitionRow struct {
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"`
	Replicas  []int32 `json:"replicas"`
	ISR       []int32 `json:"isr"`
	Offline   []int32 `json:"offline"`
	Start     int64   `json:"start"`
	End       int64   `json:"end"`
	Size      int64   `json:"size"`
	Error     string  `json:"error,omitempty"`
}

type configRow struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Source    string `json:"source"`
	Sensitive bool   `json:"sensitive"`
}

type topicResp struct {
	Name         string         `json:"name"`
	Internal     bool           `json:"internal"`
	Partitions   []partitionRow `json:"partitions"`
	Configs      []configRow    `json:"configs"`
	ConfigsError string         `json:"configsError,omitempty"`
}

// topic describes one topic: its partitions and configs.
func (c *Console) topic(ctx context.Context, a *access, r *http.Request) (any, error) {
	name := r.PathValue("topic")
	md, err := a.adm.Metadata(ctx, name)
	if err != nil {
		return nil, err
	}
	t, ok := md.Topics[name]
	if !ok || t.Err != nil {
		return nil, cmp.Or(t.Err, ErrNotFound)
	}
	starts, _ := a.adm.ListStartOffsets(ctx, name)
	ends, _ := a.adm.ListEndOffsets(ctx, name)
	local := localReplicas(c.cfg.Source.State())[name]
	out := topicResp{Name: name, Internal: t.IsInternal, Configs: []configRow{}}
	for _, p := range t.Partitions.Sorted() {
		row := partitionRow{Partition: p.Partition, Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR,
			Offline: p.OfflineReplicas, Start: -1, End: -1, Size: -1}
		if p.Err != nil {
			row.Error = p.Err.Error()
		}
		if o, ok := starts.Lookup(name, p.Partition); ok && o.Err == nil {
			row.Start = o.Offset
		}
		if o, ok := ends.Lookup(name, p.Partition); ok && o.Err == nil {
			row.End = o.Offset
		}
		if r, ok := local[p.Partition]; ok {
			row.Size = r.LogSize
		}
		out.Partitions = append(out.Partitions, row)
	}
	rcs, err := a.adm.DescribeTopicConfigs(ctx, name)
	if err == nil && len(rcs) == 1 {
		err = rcs[0].Err
	}
	if err != nil {
		out.ConfigsError = err.Error()
		return out, nil
	}
	for _, cfg := range rcs[0].Configs {
		row := configRow{Name: cfg.Key, Source: cfg.Source.String(), Sensitive: cfg.Sensitive}
		if cfg.Value != nil && !cfg.Sensitive {
			row.Value = *cfg.Value
		}
		out.Configs = append(out.Configs, row)
	}
	slices.SortFunc(out.Configs, func(x, y configRow) int { return cmp.Compare(x.Name, y.Name) })
	return out, nil
}

// visibleTopics is the set of topics the visitor may describe.
func visibleTopics(ctx context.Context, a *access) (func(string) bool, kadm.Metadata, error) {
	md, err := a.adm.Metadata(ctx)
	if err != nil {
		return nil, md, err
	}
	return func(t string) bool { _, ok := md.Topics[t]; return ok }, md, nil
}

type throughputResp struct {
	NodeID   int32       `json:"nodeId"`
	Interval float64     `json:"interval"` // seconds between samples
	Points   []ratePoint `json:"points"`
}

// throughput is the traffic this node served, per second, over the
// topics the visitor may see.
func (c *Console) throughput(ctx context.Context, a *access, _ *http.Request) (any, error) {
	visible, _, err := visibleTopics(ctx, a)
	if err != nil {
		return nil, err
	}
	pts := rates(c.hist.samples(), visible)
	if pts == nil {
		pts = []ratePoint{}
	}
	return throughputResp{NodeID: c.cfg.Source.State().NodeID, Interval: c.cfg.SampleEvery.Seconds(), Points: pts}, nil
}

type moveRow struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	Adding    []int32 `json:"adding"`
	Removing  []int32 `json:"removing"`
}

// reassignments lists the moves in progress of the visitor's topics.
func (c *Console) reassignments(ctx context.Context, a *access, _ *http.Request) (any, error) {
	_, md, err := visibleTopics(ctx, a)
	if err != nil {
		return nil, err
	}
	res, err := a.adm.ListPartitionReassignments(ctx, md.Topics.TopicsSet())
	if err != nil {
		return nil, err
	}
	out := []moveRow{}
	for _, m := range res.Sorted() {
		out = append(out, moveRow{Topic: m.Topic, Partition: m.Partition, Replicas: m.Replicas,
			Adding: m.AddingReplicas, Removing: m.RemovingReplicas})
	}
	return out, nil
}
