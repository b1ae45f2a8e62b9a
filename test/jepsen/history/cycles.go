package history

import "fmt"

// Dependency cycles between operations, as Adya's phenomena name them.
// Edges: ww from the writer of a partition's value to the writer of the
// next value in its version order; wr from a value's writer to each
// operation that read it; rw from an operation that read a partition up
// to some value to the writer of the next value (it did not see it).
//   - G1c (circular information flow: a cycle of ww and wr edges with at
//     least one wr) is an anomaly: a transaction saw the effect of one
//     that saw its own.
//   - G0 (a cycle of ww edges only), G-single (one rw edge) and G2 (more)
//     are what Kafka's transactions permit: writes are not isolated from
//     each other across partitions, and a read takes no lock. They are
//     counted in Result.Permitted, not as anomalies.
const (
	G1c     = "G1c"
	G0      = "G0"
	GSingle = "G-single"
	G2      = "G2"
)

type edgeKind uint8

const (
	ww edgeKind = 1 << iota
	wr
	rw
)

// graph is the dependency graph over operations (by index in ops).
type graph struct {
	out map[int]map[int]edgeKind
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

// dependencies builds the graph: writers are the operations that did not
// fail, each value's writer found by the value.
func dependencies(ops []Op, parts map[string]*partition) *graph {
	g := &graph{out: map[int]map[int]edgeKind{}}
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
			g.add(writerAt(p, pos-1), writerAt(p, pos), ww)
		}
	}
	for i, op := range ops {
		if op.Outcome != OK {
			continue
		}
		upTo := map[string]int{} // partition → the highest position read
		for _, rd := range op.Reads {
			if w, ok := writer[rd.Value]; ok {
				g.add(w, i, wr)
			}
			if pos, ok := parts[rd.Partition].index[rd.Offset]; ok && pos >= upTo[rd.Partition] {
				upTo[rd.Partition] = pos + 1
			}
		}
		for name, next := range upTo {
			g.add(i, writerAt(parts[name], next), rw)
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
// permits in r.Permitted: a component of ww and wr edges is G1c if a wr
// edge lies inside it (every edge inside a component is on a cycle), else
// G0; a component that needs rw edges is G-single or G2.
func checkCycles(ops []Op, parts map[string]*partition, r *Result) {
	g := dependencies(ops, parts)
	describe := func(c []int) string {
		s := "operations of processes"
		for _, v := range c {
			s += fmt.Sprintf(" %d", ops[v].Process)
		}
		return s
	}
	for _, c := range g.components(ww | wr) {
		if g.inside(c, wr) {
			r.add(G1c, "a cycle of write-write and write-read dependencies among %s", describe(c))
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
