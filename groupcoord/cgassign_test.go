package groupcoord

import (
	"maps"
	"slices"
	"testing"
)

func topicMap() map[string]TopicInfo {
	out := make(map[string]TopicInfo)
	for _, t := range testTopics() {
		out[t.Name] = t
	}
	return out
}

// checkOnce fails unless every partition of the subscribed topics is
// assigned exactly once, each to a member subscribed to its topic.
func checkOnce(t *testing.T, members []assignMember, out map[string]Assignment) {
	t.Helper()
	seen := make(map[tp]string)
	for _, m := range members {
		for id, ps := range out[m.id] {
			name := map[TopicID]string{tID: "t", uID: "u"}[id]
			if !slices.Contains(m.topics, name) {
				t.Fatalf("%s got %s, which it does not subscribe to", m.id, name)
			}
			for _, p := range ps {
				if other, dup := seen[tp{name, p}]; dup {
					t.Fatalf("%s-%d assigned to %s and %s", name, p, other, m.id)
				}
				seen[tp{name, p}] = m.id
			}
		}
	}
	want := 0
	for _, name := range []string{"t", "u"} {
		if slices.ContainsFunc(members, func(m assignMember) bool { return slices.Contains(m.topics, name) }) {
			want += int(topicMap()[name].Partitions)
		}
	}
	if len(seen) != want {
		t.Fatalf("%d partitions assigned, want %d: %v", len(seen), want, out)
	}
}

// The uniform assignor balances (no two members differ by more than one
// when they subscribe alike), respects subscriptions, and is sticky: a
// member joining takes partitions only from the others' surplus.
func TestConsumerAssignorUniform(t *testing.T) {
	both := []string{"t", "u"}
	members := []assignMember{{id: "a", topics: both}, {id: "b", topics: both}, {id: "c", topics: both}}
	out := assign(AssignorUniform, members, topicMap())
	checkOnce(t, members, out)
	var counts []int
	for _, m := range members {
		counts = append(counts, count(out[m.id]))
	}
	slices.Sort(counts)
	if !slices.Equal(counts, []int{2, 2, 3}) {
		t.Fatalf("7 partitions over 3 members: %v", counts)
	}
	if again := assign(AssignorUniform, members, topicMap()); !maps.EqualFunc(out, again, sameAssignment) {
		t.Fatalf("not deterministic: %v then %v", out, again)
	}

	// Sticky: d joins; every partition that moves goes to d.
	for i := range members {
		members[i].current = out[members[i].id]
	}
	members = append(members, assignMember{id: "d", topics: both})
	next := assign(AssignorUniform, members, topicMap())
	checkOnce(t, members, next)
	for _, m := range members[:3] {
		if !isSubset(next[m.id], out[m.id]) {
			t.Fatalf("%s went from %v to %v: it gained a partition when d joined", m.id, out[m.id], next[m.id])
		}
	}
	if n := count(next["d"]); n != 1 {
		t.Fatalf("d got %d partitions, want 1 (7 over 4: 2,2,2,1)", n)
	}

	// Mixed subscriptions: a reads t only, b reads t and u.
	mixed := []assignMember{{id: "a", topics: []string{"t"}}, {id: "b", topics: both}}
	out = assign(AssignorUniform, mixed, topicMap())
	checkOnce(t, mixed, out)
	if count(out["a"]) < 3 || count(out["b"]) < 3 {
		t.Fatalf("mixed subscriptions unbalanced: %v", out)
	}
}

// The range assignor gives, topic by topic, ranges of consecutive
// partitions to the subscribed members in id order, the first ones one
// more.
func TestConsumerAssignorRange(t *testing.T) {
	members := []assignMember{{id: "b", topics: []string{"t", "u"}}, {id: "c", topics: []string{"t"}}}
	slices.SortFunc(members, func(x, y assignMember) int { return cmpString(x.id, y.id) })
	out := assign(AssignorRange, members, topicMap())
	checkOnce(t, members, out)
	want := map[string]Assignment{
		"b": {tID: {0, 1}, uID: {0, 1, 2}},
		"c": {tID: {2, 3}},
	}
	if !maps.EqualFunc(out, want, sameAssignment) {
		t.Fatalf("range: %v, want %v", out, want)
	}
	three := []assignMember{{id: "a", topics: []string{"u"}}, {id: "b", topics: []string{"u"}}}
	if out := assign(AssignorRange, three, topicMap()); !sameAssignment(out["a"], Assignment{uID: {0, 1}}) || !sameAssignment(out["b"], Assignment{uID: {2}}) {
		t.Fatalf("3 partitions over 2 members: %v", out)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
