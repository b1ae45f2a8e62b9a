package client

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// jm builds a joined member subscribed to topics that claims owned at
// generation gen.
func jm(id string, topics []string, gen int32, owned map[string][]int32) *joinedMember {
	if owned == nil {
		owned = map[string][]int32{}
	}
	return &joinedMember{id: id, topics: topics, owned: owned, generation: gen}
}

// counts returns how many partitions each member got, by member id.
func counts(plan map[string]map[string][]int32) map[string]int {
	out := map[string]int{}
	for id, a := range plan {
		for _, ps := range a {
			out[id] += len(ps)
		}
	}
	return out
}

// everyPartitionOnce fails unless plan assigns each partition of parts
// exactly once.
func everyPartitionOnce(t *testing.T, plan map[string]map[string][]int32, parts map[string]int32) {
	t.Helper()
	seen := map[tp]string{}
	for id, a := range plan {
		for topic, ps := range a {
			for _, p := range ps {
				if prev, dup := seen[tp{topic, p}]; dup {
					t.Fatalf("%s[%d] given to %s and %s", topic, p, prev, id)
				}
				seen[tp{topic, p}] = id
			}
		}
	}
	for topic, n := range parts {
		for p := range n {
			if _, ok := seen[tp{topic, p}]; !ok {
				t.Fatalf("%s[%d] not assigned: %v", topic, p, plan)
			}
		}
	}
}

func TestAssignRange(t *testing.T) {
	t1 := []string{"a", "b"}
	members := []*joinedMember{jm("m1", t1, -1, nil), jm("m2", t1, -1, nil), jm("m3", []string{"a"}, -1, nil)}
	plan := assign(RangeAssign, members, map[string]int32{"a": 7, "b": 3}, false)
	want := map[string]string{
		"m1": "map[a:[0 1 2] b:[0 1]]",
		"m2": "map[a:[3 4] b:[2]]",
		"m3": "map[a:[5 6]]",
	}
	for id, w := range want {
		if got := fmt.Sprint(plan[id]); got != w {
			t.Errorf("%s got %s, want %s", id, got, w)
		}
	}
}

func TestMemberOrderStaticFirst(t *testing.T) {
	ms := []*joinedMember{
		{id: "a"}, {id: "z", instanceID: "i2"}, {id: "b"}, {id: "y", instanceID: "i1"},
	}
	slices.SortFunc(ms, (*joinedMember).before)
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.id)
	}
	if want := []string{"y", "z", "a", "b"}; !slices.Equal(ids, want) {
		t.Fatalf("order %v, want %v", ids, want)
	}
}

func TestAssignStickyDeterministicAndBalanced(t *testing.T) {
	parts := map[string]int32{"a": 5, "b": 4}
	mk := func() []*joinedMember {
		t2 := []string{"a", "b"}
		return []*joinedMember{jm("m1", t2, -1, nil), jm("m2", t2, -1, nil), jm("m3", t2, -1, nil)}
	}
	first := assign(CooperativeStickyAssign, mk(), parts, true)
	for range 20 {
		if again := assign(CooperativeStickyAssign, mk(), parts, true); fmt.Sprint(again) != fmt.Sprint(first) {
			t.Fatalf("plans differ:\n%v\n%v", first, again)
		}
	}
	everyPartitionOnce(t, first, parts)
	for id, n := range counts(first) {
		if n != 3 {
			t.Fatalf("%s got %d partitions, want 3: %v", id, n, first)
		}
	}
}

// TestAssignStickyKeepsOwned: a third member joining two that own three
// partitions each takes one from each; everything else stays put.
func TestAssignStickyKeepsOwned(t *testing.T) {
	ts := []string{"t"}
	members := []*joinedMember{
		jm("m1", ts, 4, map[string][]int32{"t": {0, 2, 4}}),
		jm("m2", ts, 4, map[string][]int32{"t": {1, 3, 5}}),
		jm("m3", ts, -1, nil),
	}
	parts := map[string]int32{"t": 6}
	plan := assign(CooperativeStickyAssign, members, parts, false)
	everyPartitionOnce(t, plan, parts)
	for _, m := range members[:2] {
		kept := 0
		for _, p := range plan[m.id]["t"] {
			if slices.Contains(m.owned["t"], p) {
				kept++
			}
		}
		if kept != 2 || len(plan[m.id]["t"]) != 2 {
			t.Fatalf("%s owned %v, got %v: want to keep 2 of them", m.id, m.owned["t"], plan[m.id]["t"])
		}
	}
	if got := len(plan["m3"]["t"]); got != 2 {
		t.Fatalf("m3 got %v", plan["m3"])
	}

	// Cooperative: the two partitions moving to m3 are withheld this
	// round; their owners revoke them first.
	coop := assign(CooperativeStickyAssign, members, parts, true)
	if len(coop["m3"]) != 0 {
		t.Fatalf("m3 got %v in the first cooperative round, want nothing", coop["m3"])
	}
	for _, id := range []string{"m1", "m2"} {
		if fmt.Sprint(coop[id]) != fmt.Sprint(plan[id]) {
			t.Fatalf("%s got %v, want what it keeps: %v", id, coop[id], plan[id])
		}
	}
	// The next round, with the owners' new claims, hands them over.
	members[0].owned, members[1].owned = coop["m1"], coop["m2"]
	members[0].generation, members[1].generation = 5, 5
	next := assign(CooperativeStickyAssign, members, parts, true)
	if fmt.Sprint(next) != fmt.Sprint(plan) {
		t.Fatalf("second round %v, want %v", next, plan)
	}
}

// TestAssignStickyClaimConflict: two members claim the same partition (one
// missed a rebalance); the higher generation keeps it, and the other's
// stale claim does not withhold it.
func TestAssignStickyClaimConflict(t *testing.T) {
	ts := []string{"t"}
	members := []*joinedMember{
		jm("m1", ts, 3, map[string][]int32{"t": {0, 1}}),
		jm("m2", ts, 4, map[string][]int32{"t": {1, 2, 3}}),
	}
	parts := map[string]int32{"t": 4}
	// m2 keeps 1 (generation 4 beats 3); balancing moves 3 from m2 to
	// m1, withheld this round since m2 still owns it.
	if got := fmt.Sprint(assign(CooperativeStickyAssign, members, parts, false)); got != "map[m1:map[t:[0 3]] m2:map[t:[1 2]]]" {
		t.Fatalf("eager plan %s", got)
	}
	if got := fmt.Sprint(assign(CooperativeStickyAssign, members, parts, true)); got != "map[m1:map[t:[0]] m2:map[t:[1 2]]]" {
		t.Fatalf("cooperative plan %s", got)
	}
}

// TestAssignStickyUnevenSubscriptions: members subscribed to different
// topics get only those, balanced where they overlap.
func TestAssignStickyUnevenSubscriptions(t *testing.T) {
	members := []*joinedMember{
		jm("m1", []string{"a"}, -1, nil),
		jm("m2", []string{"a", "b"}, -1, nil),
		jm("m3", []string{"b"}, -1, nil),
	}
	parts := map[string]int32{"a": 4, "b": 4, "c": 2}
	plan := assign(CooperativeStickyAssign, members, parts, false)
	everyPartitionOnce(t, plan, map[string]int32{"a": 4, "b": 4})
	for id, a := range plan {
		for topic := range a {
			if !slices.ContainsFunc(members, func(m *joinedMember) bool { return m.id == id && m.subscribes(topic) }) {
				t.Fatalf("%s got unsubscribed topic %s", id, topic)
			}
		}
	}
	c := counts(plan)
	if c["m1"] < 2 || c["m3"] < 2 || max(c["m1"], c["m2"], c["m3"])-min(c["m1"], c["m2"], c["m3"]) > 1 {
		t.Fatalf("unbalanced: %v", plan)
	}
}

// TestConsumerProtocolRoundTrip: subscriptions and assignments decode as
// they were encoded.
func TestConsumerProtocolRoundTrip(t *testing.T) {
	owned := map[string][]int32{"b": {1}, "a": {0, 2}}
	meta := memberMetadata(CooperativeStickyAssign, []string{"b", "a"}, owned, 7)
	ms, err := parseMembers([]kmsg.JoinGroupResponseMember{{MemberID: "m", ProtocolMetadata: meta}})
	if err != nil {
		t.Fatal(err)
	}
	m := ms[0]
	if !slices.Equal(m.topics, []string{"a", "b"}) || m.generation != 7 || !maps.EqualFunc(m.owned, owned, slices.Equal) {
		t.Fatalf("decoded %+v", m)
	}
	a := map[string][]int32{"x": {3, 1}, "y": {0}}
	got, err := decodeAssignment(encodeAssignment(a))
	if err != nil || fmt.Sprint(got) != "map[x:[1 3] y:[0]]" {
		t.Fatalf("assignment round trip: %v, %v", got, err)
	}
	if got, err := decodeAssignment(nil); err != nil || len(got) != 0 {
		t.Fatalf("empty assignment: %v, %v", got, err)
	}
}
