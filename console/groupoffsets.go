package console

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupOffsets are a group's partitions that it committed or that are
// assigned to a member, with their total lag; err is why they are not
// known.
type groupOffsets struct {
	rows  []offsetRow
	total int64
	err   error
}

// errNotListed: a partition's end offset was not listed (its leader did
// not answer).
var errNotListed = errors.New("end offset not listed")

// consumerOffsets reads the committed offsets of KIP-848 consumer groups
// (OffsetFetch serves them as it does classic groups) and the start and
// end offsets of their partitions, and computes the lag of each partition
// the group committed or that a member holds, as kadm.Lag does for
// classic groups: the end minus the commit, or minus the log start where
// nothing is committed.
func consumerOffsets(ctx context.Context, a *access, ds kadm.DescribedConsumerGroups) map[string]groupOffsets {
	out := map[string]groupOffsets{}
	var names []string
	for name, d := range ds {
		if d.Err == nil {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return out
	}
	fetched := a.adm.FetchManyOffsets(ctx, names...)
	parts := kadm.TopicsSet{}
	for _, name := range names {
		d := ds[name]
		parts.Merge(d.AssignedPartitions())
		if f := fetched[name]; f.Err == nil {
			parts.Merge(f.Fetched.Partitions())
		}
	}
	var starts, ends kadm.ListedOffsets
	if topics := parts.Topics(); len(topics) > 0 {
		starts, _ = a.adm.ListStartOffsets(ctx, topics...) // a partition missing from a listing shows as unknown
		ends, _ = a.adm.ListEndOffsets(ctx, topics...)
	}
	for _, name := range names {
		f, ok := fetched[name]
		if !ok || f.Err != nil {
			out[name] = groupOffsets{err: cmp.Or(f.Err, errNotListed)}
			continue
		}
		out[name] = lagOf(ds[name], f.Fetched, starts, ends)
	}
	return out
}

// lagOf is one consumer group's offset rows, sorted by topic and partition.
func lagOf(d kadm.DescribedConsumerGroup, committed kadm.OffsetResponses, starts, ends kadm.ListedOffsets) groupOffsets {
	holder := map[string]map[int32]string{}
	for _, m := range d.Members {
		for t, ps := range m.Assignment {
			for p := range ps {
				if holder[t] == nil {
					holder[t] = map[int32]string{}
				}
				holder[t][p] = m.MemberID
			}
		}
	}
	parts := d.AssignedPartitions()
	parts.Merge(committed.Partitions())
	o := groupOffsets{rows: []offsetRow{}}
	for _, tp := range parts.Sorted() {
		for _, p := range tp.Partitions {
			row := offsetRow{Topic: tp.Topic, Partition: p, Committed: -1, End: -1, Lag: -1, Member: holder[tp.Topic][p]}
			if c, ok := committed.Lookup(tp.Topic, p); ok && c.Err == nil {
				row.Committed = c.At
			}
			if row.Committed < 0 && row.Member == "" {
				continue // listed by OffsetFetch, but neither committed nor held
			}
			end, ok := ends.Lookup(tp.Topic, p)
			switch {
			case !ok || end.Err != nil:
				row.Error = cmp.Or(end.Err, errNotListed).Error()
			case row.Committed >= 0:
				row.End, row.Lag = end.Offset, max(end.Offset-row.Committed, 0)
			default:
				row.End = end.Offset
				if start, ok := starts.Lookup(tp.Topic, p); ok && start.Err == nil {
					row.Lag = max(end.Offset-start.Offset, 0)
				}
			}
			if row.Lag > 0 {
				o.total += row.Lag
			}
			o.rows = append(o.rows, row)
		}
	}
	return o
}

// notAvailable is what the group page says of a share group's offsets
// when the cluster does not serve DescribeShareGroupOffsets.
const notAvailable = "not available: the cluster does not serve DescribeShareGroupOffsets"

// shareOffsets are a share group's share-partition start offsets and lag,
// when the cluster serves DescribeShareGroupOffsets; otherwise no rows
// and a note saying so, without an error.
func shareOffsets(ctx context.Context, a *access, name string) ([]offsetRow, string, error) {
	versions, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, a.cl)
	if err != nil {
		return nil, "", err
	}
	if !slices.ContainsFunc(versions.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool {
		return k.ApiKey == kmsg.DescribeShareGroupOffsets.Int16()
	}) {
		return []offsetRow{}, notAvailable, nil
	}
	ds, err := a.adm.DescribeShareGroupOffsets(ctx, name)
	if err != nil {
		return nil, "", err
	}
	d := ds[name]
	if d.Err != nil {
		return nil, "", d.Err
	}
	rows := []offsetRow{}
	for _, so := range d.Offsets.Sorted() {
		row := offsetRow{Topic: so.Topic, Partition: so.Partition, Committed: so.StartOffset, End: -1, Lag: so.Lag}
		if so.Err != nil {
			row.Error = so.Err.Error()
		}
		rows = append(rows, row)
	}
	return rows, "", nil
}
