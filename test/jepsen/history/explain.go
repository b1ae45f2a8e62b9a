package history

import (
	"fmt"
	"strings"
)

// cycleThrough returns a shortest cycle inside component c that takes an
// edge of kind first and then only edges of kinds in mask, as the
// operations in order (the first one again at the end); nil if none.
func (g *graph) cycleThrough(c []int, first, mask edgeKind) []int {
	in := map[int]bool{}
	for _, v := range c {
		in[v] = true
	}
	var best []int
	for _, u := range c {
		for _, v := range sortedKeys(g.out[u]) {
			if !in[v] || g.out[u][v]&first == 0 {
				continue
			}
			if p := g.path(v, u, in, mask); p != nil && (best == nil || len(p)+1 < len(best)) {
				best = append([]int{u}, p...)
			}
		}
		if best != nil && len(best) <= 3 {
			break
		}
	}
	return best
}

// path is a shortest path from a to b over edges of kinds in mask among
// the nodes in, both ends included; nil if none.
func (g *graph) path(a, b int, in map[int]bool, mask edgeKind) []int {
	prev := map[int]int{a: a}
	queue := []int{a}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		if x == b {
			var p []int
			for ; x != a; x = prev[x] {
				p = append([]int{x}, p...)
			}
			return append([]int{a}, p...)
		}
		for _, y := range sortedKeys(g.out[x]) {
			if _, seen := prev[y]; !seen && in[y] && g.out[x][y]&mask != 0 {
				prev[y] = x
				queue = append(queue, y)
			}
		}
	}
	return nil
}

// explain writes a cycle as its operations and the dependency between
// each and the next.
func (g *graph) explain(ops []Op, cycle []int) string {
	if len(cycle) == 0 {
		return "(no cycle found)"
	}
	var b strings.Builder
	for i, v := range cycle {
		if v >= len(ops) {
			b.WriteString("(realtime)")
		} else {
			op := ops[v]
			fmt.Fprintf(&b, "[process %d %s %s %d..%d]", op.Process, op.Kind, op.Outcome, op.Invoke, op.Complete)
		}
		if i+1 < len(cycle) {
			k, w := g.out[v][cycle[i+1]], g.where[[2]int{v, cycle[i+1]}]
			fmt.Fprintf(&b, " -%s %s@%d-> ", edgeName(k), w.part, w.offset)
		}
	}
	return b.String()
}

func edgeName(k edgeKind) string {
	var names []string
	for _, e := range []struct {
		k edgeKind
		n string
	}{{ww, "ww"}, {wr, "wr"}, {rw, "rw"}, {rt, "rt"}, {co, "co"}} {
		if k&e.k != 0 {
			names = append(names, e.n)
		}
	}
	return strings.Join(names, "/")
}

func (k Kind) String() string {
	if int(k) >= 4 {
		return "?"
	}
	return [...]string{"?", "send", "txn", "poll"}[k]
}

func (o Outcome) String() string {
	if int(o) >= 4 {
		return "?"
	}
	return [...]string{"?", "ok", "fail", "info"}[o]
}
