package groupcoord

import (
	"maps"
	"slices"
)

// AssignorSimple is the share group assignor's name (Kafka's
// SimpleAssignor, the only one share groups have).
const AssignorSimple = "simple"

// shareAssign is the simple assignor as Kafka 4.1 runs it: topic by
// topic, every partition goes to at least one subscriber and to
// ceil(subscribers/partitions) of them when there are more subscribers
// than partitions (share groups may share a partition), the subscribers'
// counts differing by at most one; partitions a member already holds
// stay with it where the balance allows. members are sorted by id and
// the result depends on nothing else: no map order, no randomness.
func shareAssign(members []assignMember, all map[string]TopicInfo) map[string]Assignment {
	out := make(map[string]Assignment, len(members))
	for _, m := range members {
		out[m.id] = make(Assignment)
	}
	subs := make(map[string][]assignMember)
	for _, m := range members {
		for _, t := range m.topics {
			subs[t] = append(subs[t], m)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(subs)) {
		t := all[name]
		if t.Partitions <= 0 {
			continue
		}
		for id, ps := range assignTopic(subs[name], t) {
			if len(ps) > 0 {
				slices.Sort(ps)
				out[id][t.ID] = ps
			}
		}
	}
	return out
}

// assignTopic shares one topic's partitions among its subscribers.
func assignTopic(subs []assignMember, t TopicInfo) map[string][]int32 {
	n, k := int(t.Partitions), len(subs)
	share := (k + n - 1) / n // members per partition
	slots := share * n
	quota := make([]int, k) // cumulative ceilings: counts differ by at most one
	for i := range subs {
		quota[i] = ceilDiv((i+1)*slots, k) - ceilDiv(i*slots, k)
	}
	owners := make([]map[string]bool, n)
	for p := range owners {
		owners[p] = make(map[string]bool)
	}
	got := make(map[string][]int32, k)
	for i, m := range subs { // keep what each member holds, within bounds
		for _, p := range m.current[t.ID] {
			if int(p) < n && len(got[m.id]) < quota[i] && len(owners[p]) < share && !owners[p][m.id] {
				owners[p][m.id] = true
				got[m.id] = append(got[m.id], p)
			}
		}
	}
	next := 0
	for p := range n { // fill the rest round robin over members with room
		for len(owners[p]) < share {
			i, ok := nextWithRoom(subs, quota, got, owners[p], next)
			if !ok {
				break
			}
			owners[p][subs[i].id] = true
			got[subs[i].id] = append(got[subs[i].id], int32(p))
			next = (i + 1) % k
		}
	}
	return got
}

// nextWithRoom is the first member from start on (wrapping) that is
// below its quota and does not hold the partition yet.
func nextWithRoom(subs []assignMember, quota []int, got map[string][]int32, holders map[string]bool, start int) (int, bool) {
	for j := range subs {
		i := (start + j) % len(subs)
		if len(got[subs[i].id]) < quota[i] && !holders[subs[i].id] {
			return i, true
		}
	}
	return 0, false
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
