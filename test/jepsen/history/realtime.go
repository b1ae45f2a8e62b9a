package history

import (
	"cmp"
	"slices"
	"sort"
)

// Realtime order: an operation that completed before another was invoked
// precedes it. Kafka's transactions are not strictly serializable (a
// transaction's sends to several partitions are not one instant), so most
// cycles through realtime order are permitted and only counted. Two kinds
// of two-operation cycle cannot happen in Kafka and are anomalies:
//   - G0-realtime: a write completed before another write to the same
//     partition was invoked, yet sits at a higher offset (offsets are
//     given in the order writes are appended);
//   - G1c-realtime: a read completed before the write it saw was invoked.
//
// And a read_committed read that completed before the transaction whose
// write it saw asked to commit is a precommitted read.
const (
	G0Realtime  = "G0-realtime"
	G1cRealtime = "G1c-realtime"
	G2Realtime  = "G-single/G2-realtime" // permitted only
)

func checkRealtime(ops []Op, parts map[string]*partition, r *Result) {
	wrote := map[int64]int{} // value → the operation that wrote it, failed or not
	for i, op := range ops {
		for _, w := range op.Writes {
			wrote[w.Value] = i
		}
	}
	for i, op := range ops {
		for _, rd := range op.Reads {
			w, ok := wrote[rd.Value]
			if !ok || w == i {
				continue
			}
			switch wo := ops[w]; {
			case op.Complete < wo.Invoke:
				r.add(G1cRealtime, "process %d read %s offset %d value %d before process %d invoked its write",
					op.Process, rd.Partition, rd.Offset, rd.Value, wo.Process)
			case op.ReadCommitted && wo.Kind == Txn && wo.Commit > 0 && op.Complete < wo.Commit:
				r.add(PrecommittedRead, "process %d read %s offset %d value %d (read_committed) before process %d asked to commit it",
					op.Process, rd.Partition, rd.Offset, rd.Value, wo.Process)
			}
		}
	}
	for _, name := range sortedKeys(parts) {
		p := parts[name]
		latest, latestAt := -1, int64(0) // of the writes at lower offsets, the one invoked last, and its offset
		for _, o := range p.sorted {
			w, ok := wrote[p.byOffset[o]]
			if !ok {
				continue
			}
			if latest >= 0 && latest != w && ops[w].Outcome != Info && ops[w].Complete < ops[latest].Invoke {
				r.add(G0Realtime, "%s offset %d (value %d of process %d) completed before process %d invoked the write at offset %d (value %d)",
					name, o, p.byOffset[o], ops[w].Process, ops[latest].Process, latestAt, p.byOffset[latestAt])
			}
			if latest < 0 || ops[w].Invoke > ops[latest].Invoke {
				latest, latestAt = w, o
			}
		}
	}
	countRealtimeCycles(ops, parts, r)
}

// countRealtimeCycles counts, in r.Permitted, the components of the
// dependency graph with realtime edges added that need a realtime edge.
func countRealtimeCycles(ops []Op, parts map[string]*partition, r *Result) {
	g := dependencies(ops, parts)
	g.addRealtime(ops)
	for _, c := range g.components(ww | wr | rt) {
		switch {
		case !g.inside(c, rt):
		case g.inside(c, wr):
			r.Permitted[G1cRealtime]++
		default:
			r.Permitted[G0Realtime]++
		}
	}
	for _, c := range g.components(ww | wr | rw | rt) {
		if g.inside(c, rt) && g.inside(c, rw) {
			r.Permitted[G2Realtime]++
		}
	}
}

// addRealtime adds realtime order without an edge per pair: a chain of
// virtual nodes (numbered from len(ops)), one per operation with a known
// outcome in completion order; each such operation leads to its node, and
// the node of the last completion before an operation's invocation leads
// to it. A path from a to b through the chain exists exactly when a
// completed before b was invoked.
func (g *graph) addRealtime(ops []Op) {
	var done []int
	for i, op := range ops {
		if op.Outcome != Info {
			done = append(done, i)
		}
	}
	slices.SortStableFunc(done, func(a, b int) int { return cmp.Compare(ops[a].Complete, ops[b].Complete) })
	n := len(ops)
	for k, i := range done {
		g.add(i, n+k, rt)
		if k > 0 {
			g.add(n+k-1, n+k, rt)
		}
	}
	for j, op := range ops {
		k := sort.Search(len(done), func(k int) bool { return ops[done[k]].Complete >= op.Invoke }) - 1
		if k >= 0 {
			g.add(n+k, j, rt)
		}
	}
}
