package controller

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/membership"
)

func metas(ids ...int32) []membership.NodeMeta {
	var ms []membership.NodeMeta
	for _, id := range ids {
		ms = append(ms, membership.NodeMeta{ID: id, RaftAddr: fmt.Sprintf("127.0.0.1:%d", 9000+id)})
	}
	return ms
}

// Five nodes started together, bootstrap_expect 3, as make e2e saw them:
// node 1 counted nodes 4 and 5 before 2 and 3 had joined it, nodes 2 and
// 3 saw 1, 2 and 3 first. Each node checks its view every millisecond and
// bootstraps when choose says so; all that bootstrap must choose the same
// voters. Without the settle (bootstrapping at once), node 1 chose
// {1,4,5} and nodes 2 and 3 {1,2,3}: two metadata groups with a quorum each.
func TestBootstrapVotersSettleAcrossNodes(t *testing.T) {
	start := time.Unix(0, 0)
	// Each node's view: the members it sees from each time on.
	views := map[int32][]struct {
		at      time.Duration
		members []membership.NodeMeta
	}{
		1: {{0, metas(1, 4, 5)}, {15 * time.Millisecond, metas(1, 2, 3, 4, 5)}},
		2: {{0, metas(1, 2, 3)}, {5 * time.Millisecond, metas(1, 2, 3, 4, 5)}},
		3: {{0, metas(1, 2, 3)}, {9 * time.Millisecond, metas(1, 2, 3, 4, 5)}},
		4: {{0, metas(1, 4, 5)}, {12 * time.Millisecond, metas(1, 2, 3, 4, 5)}},
		5: {{0, metas(1, 4, 5)}, {14 * time.Millisecond, metas(1, 2, 3, 4, 5)}},
	}
	chosen := map[int32][]int32{}
	for id, view := range views {
		var b bootstrapper
		for now := time.Duration(0); now < bootstrapSettle+time.Second; now += time.Millisecond {
			members := view[0].members
			for _, v := range view {
				if now >= v.at {
					members = v.members
				}
			}
			voters, wait, ok := b.choose(members, 3, start.Add(now))
			if _, self := voters[id]; ok && self && wait == 0 {
				chosen[id] = slices.Sorted(maps.Keys(voters))
				break
			}
		}
	}
	want := []int32{1, 2, 3}
	for _, id := range want {
		if !slices.Equal(chosen[id], want) {
			t.Fatalf("node %d bootstrapped with %v, want %v (all choices: %v)", id, chosen[id], want, chosen)
		}
	}
	for _, id := range []int32{4, 5} {
		if chosen[id] != nil {
			t.Fatalf("node %d, not among the lowest three, bootstrapped with %v", id, chosen[id])
		}
	}
}

// Fewer members than bootstrap_expect: nothing to choose, and the memory
// of an earlier choice is dropped.
func TestBootstrapNeedsExpectMembers(t *testing.T) {
	var b bootstrapper
	now := time.Unix(0, 0)
	if _, _, ok := b.choose(metas(1, 2), 3, now); ok {
		t.Fatal("chose voters from 2 members with bootstrap_expect 3")
	}
	if _, wait, ok := b.choose(metas(1, 2, 3), 3, now); !ok || wait != bootstrapSettle {
		t.Fatalf("first choice: wait %v, ok %v; want the whole settle", wait, ok)
	}
	if _, wait, _ := b.choose(metas(1, 2, 3), 3, now.Add(bootstrapSettle)); wait != 0 {
		t.Fatalf("after the settle: wait %v, want 0", wait)
	}
}

// Any order in which nodes started together (within 100 ms) see each other
// join: every node that bootstraps chooses the same voters.
func TestBootstrapVotersAgreeForAnyJoinOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 40 {
		n, expect := 3+rng.IntN(5), 1+rng.IntN(3)
		// seen[a][b]: when node a sees node b (itself at once).
		seen := make([][]time.Duration, n+1)
		for a := 1; a <= n; a++ {
			seen[a] = make([]time.Duration, n+1)
			for b := 1; b <= n; b++ {
				if a != b {
					seen[a][b] = time.Duration(2*rng.IntN(50)) * time.Millisecond
				}
			}
		}
		chosen := map[int32][]int32{}
		for a := 1; a <= n; a++ {
			var b bootstrapper
			for now := time.Duration(0); now < bootstrapSettle+time.Second; now += 2 * time.Millisecond {
				var ids []int32
				for x := 1; x <= n; x++ {
					if now >= seen[a][x] {
						ids = append(ids, int32(x))
					}
				}
				voters, wait, ok := b.choose(metas(ids...), expect, time.Unix(0, 0).Add(now))
				if _, self := voters[int32(a)]; ok && self && wait == 0 {
					chosen[int32(a)] = slices.Sorted(maps.Keys(voters))
					break
				}
			}
		}
		var first []int32
		for _, v := range chosen {
			if first == nil {
				first = v
			} else if !slices.Equal(v, first) {
				t.Fatalf("round %d (%d nodes, bootstrap_expect %d): choices %v", round, n, expect, chosen)
			}
		}
	}
}
