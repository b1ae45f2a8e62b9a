package groupcoord

import (
	"cmp"
	"maps"
	"slices"
)

// Server-side assignors of KIP-848 consumer groups (Kafka's names).
const (
	AssignorUniform = "uniform"
	AssignorRange   = "range"
)

// assignMember is one member as an assignor sees it.
type assignMember struct {
	id      string
	topics  []string   // subscribed topics that exist, sorted
	current Assignment // its target assignment so far
}

type tp struct {
	topic     string
	partition int32
}

// assign computes a target assignment of topics' partitions to members
// (sorted by id) with the named assignor. Each result is deterministic
// given its inputs.
func assign(assignor string, members []assignMember, topics map[string]TopicInfo) map[string]Assignment {
	var owned map[string][]tp
	if assignor == AssignorRange {
		owned = assignRange(members, topics)
	} else {
		owned = assignUniform(members, topics)
	}
	out := make(map[string]Assignment, len(members))
	for _, m := range members {
		a := make(Assignment)
		for _, p := range owned[m.id] {
			id := topics[p.topic].ID
			a[id] = append(a[id], p.partition)
		}
		for id := range a {
			slices.Sort(a[id])
		}
		out[m.id] = a
	}
	return out
}

// assignRange gives each member, topic by topic, a range of consecutive
// partitions: the members subscribed to the topic, by id, take
// partitions/members each, the first ones one more.
func assignRange(members []assignMember, topics map[string]TopicInfo) map[string][]tp {
	subs := make(map[string][]string) // topic → member ids, in id order
	for _, m := range members {
		for _, t := range m.topics {
			subs[t] = append(subs[t], m.id)
		}
	}
	owned := make(map[string][]tp, len(members))
	for _, t := range slices.Sorted(maps.Keys(subs)) {
		ids, n := subs[t], topics[t].Partitions
		per, extra := n/int32(len(ids)), n%int32(len(ids))
		next := int32(0)
		for i, id := range ids {
			k := per
			if int32(i) < extra {
				k++
			}
			for p := next; p < next+k; p++ {
				owned[id] = append(owned[id], tp{t, p})
			}
			next += k
		}
	}
	return owned
}

// assignUniform balances partitions over members, stickily: a member
// keeps the partitions of its current assignment it still subscribes to,
// the others go to the least loaded subscribed member, and then
// partitions move from the most to the least loaded members (that
// subscribe to them) until no two differ by more than one where a move
// can help.
func assignUniform(members []assignMember, topics map[string]TopicInfo) map[string][]tp {
	byID := make(map[string]*assignMember, len(members))
	subscribed := make(map[string]map[string]bool, len(members))
	for i := range members {
		m := &members[i]
		byID[m.id] = m
		subscribed[m.id] = make(map[string]bool, len(m.topics))
		for _, t := range m.topics {
			subscribed[m.id][t] = true
		}
	}
	names := make(map[TopicID]string, len(topics))
	for name, t := range topics {
		names[t.ID] = name
	}
	owned := make(map[string][]tp, len(members))
	taken := make(map[tp]bool)
	for _, m := range members { // stickiness: keep what is still valid
		for _, id := range m.current.sortedIDs() {
			name, ok := names[id]
			if !ok || !subscribed[m.id][name] {
				continue
			}
			for _, p := range m.current[id] {
				k := tp{name, p}
				if p < topics[name].Partitions && !taken[k] {
					taken[k] = true
					owned[m.id] = append(owned[m.id], k)
				}
			}
		}
	}
	for _, t := range slices.Sorted(maps.Keys(topics)) {
		for p := range topics[t].Partitions {
			k := tp{t, p}
			if taken[k] {
				continue
			}
			if best := leastLoaded(members, owned, subscribed, t, -1); best != "" {
				taken[k] = true
				owned[best] = append(owned[best], k)
			}
		}
	}
	balance(members, owned, subscribed, len(taken))
	return owned
}

// leastLoaded is the member subscribed to topic with the fewest
// partitions (below limit, if limit is not -1), the lowest id among
// equals; "" if none.
func leastLoaded(members []assignMember, owned map[string][]tp, subscribed map[string]map[string]bool, topic string, limit int) string {
	best := ""
	for _, m := range members {
		n := len(owned[m.id])
		if !subscribed[m.id][topic] || (limit >= 0 && n >= limit) {
			continue
		}
		if best == "" || n < len(owned[best]) {
			best = m.id
		}
	}
	return best
}

// balance moves partitions from more to less loaded members, at most
// budget moves, while one can narrow a gap of two or more.
func balance(members []assignMember, owned map[string][]tp, subscribed map[string]map[string]bool, budget int) {
	order := make([]string, len(members))
	for i, m := range members {
		order[i] = m.id
	}
	for range budget {
		slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(len(owned[b]), len(owned[a])) })
		if !moveOne(order, members, owned, subscribed) {
			return
		}
	}
}

// moveOne moves one partition of the most loaded member that can give
// one to a member with at least two fewer; order is by load, descending.
func moveOne(order []string, members []assignMember, owned map[string][]tp, subscribed map[string]map[string]bool) bool {
	for _, from := range order {
		ps := owned[from]
		for i := len(ps) - 1; i >= 0; i-- {
			to := leastLoaded(members, owned, subscribed, ps[i].topic, len(ps)-1)
			if to == "" || to == from {
				continue
			}
			owned[to] = append(owned[to], ps[i])
			owned[from] = slices.Delete(ps, i, i+1)
			return true
		}
	}
	return false
}
