package client

import (
	"cmp"
	"context"
	"errors"
	"slices"
)

// LogRange is where a partition's log starts and ends.
type LogRange struct {
	Topic     string
	Partition int32
	Start     int64 // the earliest offset still held (ListOffsets earliest); -1 unknown
	End       int64 // the log end offset, the next one written (ListOffsets latest); -1 unknown
}

// LogRanges asks the leaders of the partitions (by topic) where their logs
// start and end, retrying retriable failures until ctx ends. It returns a
// row for every partition, sorted; what no leader answered is -1, and the
// errors of those partitions come with the rows.
func (a *Admin) LogRanges(ctx context.Context, partitions map[string][]int32) ([]LogRange, error) {
	var parts []tp
	for topic, ps := range partitions {
		for _, p := range ps {
			parts = append(parts, tp{topic, p})
		}
	}
	starts, serr := a.listOffsets(ctx, parts, -2)
	ends, eerr := a.listOffsets(ctx, parts, -1)
	out := make([]LogRange, 0, len(parts))
	for _, t := range parts {
		r := LogRange{Topic: t.topic, Partition: t.partition, Start: -1, End: -1}
		if o, ok := starts[t]; ok {
			r.Start = o
		}
		if o, ok := ends[t]; ok {
			r.End = o
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(x, y LogRange) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	return out, errors.Join(serr, eerr)
}
