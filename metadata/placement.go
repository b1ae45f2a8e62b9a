package metadata

import "slices"

// BrokerLoad is one broker's share of the existing partitions.
type BrokerLoad struct {
	Replicas int // partitions the broker holds a replica of
	Leaders  int // partitions the broker is the preferred (first) replica of
}

// Load maps broker ids to their load; a broker not in the map has none.
// Snapshot.Load computes it from the topics.
type Load map[int32]BrokerLoad

// Place assigns replicas for a new topic: partitions lists of rf distinct
// brokers each, first = preferred leader. It is pure and deterministic: the
// same arguments give the same assignment, whatever the order of brokers
// (which is sorted and deduplicated first).
//
// Partitions are placed one at a time, greedily on top of existing:
//   - the preferred leader is the broker with the fewest leaderships, then
//     the fewest replicas, then the lowest id;
//   - each follower is the broker with the fewest replicas among those not
//     yet in the partition, ties going to the first after the leader in id
//     order (cyclically), so that the followers of different leaders differ
//     and a failed broker's load spreads over the others.
//
// On an empty cluster this gives leaderships that differ by at most one, and
// on an unbalanced one new partitions go to the least loaded brokers first.
//
// Errors: *InvalidPartitionsError for partitions outside 1..MaxPartitions,
// *ReplicationFactorError for rf < 1 or rf > number of brokers.
func Place(brokers []int32, existing Load, partitions int32, rf int16) ([][]int32, error) {
	ids := slices.Compact(slices.Sorted(slices.Values(brokers)))
	if partitions < 1 || partitions > MaxPartitions {
		return nil, &InvalidPartitionsError{Partitions: partitions}
	}
	if rf < 1 || int(rf) > len(ids) {
		return nil, &ReplicationFactorError{ReplicationFactor: rf, Brokers: len(ids)}
	}

	n := len(ids)
	leaders := make([]int, n) // by position in ids
	replicas := make([]int, n)
	for i, id := range ids {
		leaders[i], replicas[i] = existing[id].Leaders, existing[id].Replicas
	}

	out := make([][]int32, partitions)
	used := make([]bool, n) // positions already in the current partition
	for p := range out {
		l := 0
		for i := 1; i < n; i++ {
			if leaders[i] < leaders[l] || leaders[i] == leaders[l] && replicas[i] < replicas[l] {
				l = i
			}
		}
		clear(used)
		used[l] = true
		leaders[l]++
		replicas[l]++
		assigned := make([]int32, 1, rf)
		assigned[0] = ids[l]
		for len(assigned) < int(rf) {
			f := -1
			for d := 1; d < n; d++ {
				i := (l + d) % n
				if !used[i] && (f < 0 || replicas[i] < replicas[f]) {
					f = i
				}
			}
			used[f] = true
			replicas[f]++
			assigned = append(assigned, ids[f])
		}
		out[p] = assigned
	}
	return out, nil
}
