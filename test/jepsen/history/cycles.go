package history

// Dependency cycles between operations, as Adya's phenomena name them.
// Edges: ww from the writer of a partition's value to the writer of the
// next value in its version order; wr from a value's writer to each
// operation that read it; rw from an operation that read a partition up
// to some value to the writer of the next value (it did not see it).
//
// Kafka orders some of these edges by commit: a read_committed reader
// sees a write only once it committed, before the reader itself commits
// (wr into a read_committed operation), and a plain send commits when it
// is appended, before any later append to its partition (ww out of a
// send). A ww edge out of a transaction says only that one of its sends
// was appended first, not that it committed first: a transaction's sends
// to several partitions are not one instant.
//   - G1c (circular information flow: a cycle of ww and wr edges with at
//     least one wr) is an anomaly when every edge is of the commit-ordered
//     kinds: a transaction saw the effect of one that saw its own.
//   - G1c through a transaction's ww edge, G0 (a cycle of ww edges only),
//     G-single (one rw edge) and G2 (more) are what Kafka's transactions
//     permit: writes are not isolated from each other across partitions,
//     and a read takes no lock. They are counted in Result.Permitted, not
//     as anomalies.
const (
	G1c        = "G1c"
	G1cTxnSend = "G1c-through-txn-ww" // permitted
	G0         = "G0"
	GSingle    = "G-single"
	G2         = "G2"
)

type edgeKind uint8

const (
	ww edgeKind = 1 << iota
	wr
	rw
	rt // realtime (realtime.go)
	co // commit-ordered: set with ww or wr, as above
)

// graph is the dependency graph over operations (by index in ops).
type graph struct {
	out   map[int]map[int]edgeKind
	where map[[2]int]site // the first partition and offset that made an edge
}

// site is where a dependency was found: the offset of the later write
// (ww), the value read (wr), or the first value not read (rw).
type site struct {
	part   string
	offset int64
}

func (g *graph) add(from, to int, k edgeKind) {
	if from == to || from < 0 || to < 0 {
		return
	}
	if g.out[from] == nil {
		g.out[from] = map[int]edgeKind{}
	}
	g.out[from][to] |= k
}

// addAt adds an edge found at a site.
func (g *graph) addAt(from, to int, k edgeKind, part string, offset int64) {
	if from == to || from < 0 || to < 0 {
		return
	}
	g.add(from, to, k)
	if _, ok := g.where[[2]int{from, to}]; !ok {
		g.where[[2]int{from, to}] = site{part, offset}
	}
}

// dependencies builds the graph: writers are the operations that did not
// fail, each value's writer found by the value.
func dependencies(ops []Op, parts map[string]*partition) *graph {
	g := &graph{out: map[int]map[int]edgeKind{}, where: map[[2]int]site{}}
	writer := map[int64]int{}
	for i, op := range ops {
		if op.Outcome == Fail {
			continue
		}
		for _, w := range op.Writes {
			writer[w.Value] = i
		}
	}
	writerAt := func(p *partition, pos int) int {
		if pos >= len(p.sorted) {
			return -1
		}
		if i, ok := writer[p.byOffset[p.sorted[pos]]]; ok {
			return i
		}
		return -1
	}
	for _, name := range sortedKeys(parts) {
		p := parts[name]
		for pos := 1; pos < len(p.sorted); pos++ {
			from, k := writerAt(p, pos-1), ww
			if from >= 0 && ops[from].Kind == Send {
				k |= co
			}
			g.addAt(from, writerAt(p, pos), k, name, p.sorted[pos])
		}
	}
	for i, op := range ops {
		if op.Outcome != OK {
			continue
		}
		upTo := map[string]int{} // partition → the highest position read
		for _, rd := range op.Reads {
			if w, ok := writer[rd.Value]; ok {
				k := wr
				if op.ReadCommitted {
					k |= co
				}
				g.addAt(w, i, k, rd.Partition, rd.Offset)
			}
			if pos, ok := parts[rd.Partition].index[rd.Offset]; ok && pos >= upTo[rd.Partition] {
				upTo[rd.Partition] = pos + 1
			}
		}
		for name, next := range upTo {
			if next < len(parts[name].sorted) {
				g.addAt(i, writerAt(parts[name], next), rw, name, parts[name].sorted[next])
			}
		}
	}
	return g
}

// components returns the strongly connected components of more than one
// operation, following only edges of the kinds in mask (Tarjan).
func (g *graph) components(mask edgeKind) [][]int {
	index, low, onStack := map[int]int{}, map[int]int{}, map[int]bool{}
	var stack []int
	var out [][]int
	var visit func(v int)
	visit = func(v int) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range sortedKeys(g.out[v]) {
			if g.out[v][w]&mask == 0 {
				continue
			}
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var c []int
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				c = append(c, w)
				if w == v {
					break
				}
			}
			if len(c) > 1 {
				out = append(out, c)
			}
		}
	}
	for _, v := range sortedKeys(g.out) {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	return out
}

// inside reports whether an edge of a kind in k joins two members of c.
func (g *graph) inside(c []int, k edgeKind) bool {
	in := map[int]bool{}
	for _, v := range c {
		in[v] = true
	}
	for _, v := range c {
		for w, kinds := range g.out[v] {
			if in[w] && kinds&k != 0 {
				return true
			}
		}
	}
	return false
}

// checkCycles reports G1c as an anomaly and counts the cycles Kafka
// permits in r.Permitted. Every edge inside a strongly connected
// component is on a cycle: a component of commit-ordered edges is G1c; a
// component of ww and wr edges is G1c through a transaction's ww if a wr
// edge lies inside it, else G0; one that needs rw edges is G-single or G2.
func checkCycles(ops []Op, parts map[string]*partition, r *Result) {
	g := dependencies(ops, parts)
	for _, c := range g.components(co) {
		r.add(G1c, "a cycle of %d operations ordered by commit, e.g. %s", len(c), g.explain(ops, g.cycleThrough(c, co, co)))
	}
	for _, c := range g.components(ww | wr) {
		if g.inside(c, wr) {
			r.Permitted[G1cTxnSend]++
		} else {
			r.Permitted[G0]++
		}
	}
	for _, c := range g.components(ww | wr | rw) {
		if g.inside(c, rw) {
			if g.singleRW(c) {
				r.Permitted[GSingle]++
			} else {
				r.Permitted[G2]++
			}
		}
	}
}

// singleRW reports whether some cycle in c has exactly one rw edge: an rw
// edge u→v inside c such that v reaches u over ww and wr edges.
func (g *graph) singleRW(c []int) bool {
	in := map[int]bool{}
	for _, v := range c {
		in[v] = true
	}
	for _, u := range c {
		for v, k := range g.out[u] {
			if !in[v] || k&rw == 0 {
				continue
			}
			seen := map[int]bool{v: true}
			queue := []int{v}
			for len(queue) > 0 {
				x := queue[0]
				queue = queue[1:]
				if x == u {
					return true
				}
				for y, ky := range g.out[x] {
					if in[y] && ky&(ww|wr) != 0 && !seen[y] {
						seen[y] = true
						queue = append(queue, y)
					}
				}
			}
		}
	}
	return false
}
