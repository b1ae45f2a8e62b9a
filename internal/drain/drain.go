// Package drain plans the moves that take every replica off one broker,
// for decommissioning it (the CLI) or replacing it after it is gone for
// good (the metadata leader).
package drain

import (
	"errors"
	"fmt"
	"slices"
)

// Partition is one partition and its replicas, preferred leader first.
type Partition struct {
	Topic     string
	Partition int32
	Replicas  []int32
}

// ErrNoTarget means some partition has no live broker left to take the
// replica.
var ErrNoTarget = errors.New("no live broker can take the replica")

// Plan returns, for each partition of parts that names node, its replicas
// with node replaced by the live broker not yet a replica that holds the
// fewest replicas, counting the moves planned so far (ties go to the
// lowest id). The replacement takes node's place, so the preferred
// leaderships node had are spread the same way. parts are visited in the
// order given.
func Plan(parts []Partition, live []int32, node int32) ([]Partition, error) {
	load := map[int32]int{}
	for _, id := range live {
		if id != node {
			load[id] = 0
		}
	}
	for _, p := range parts {
		for _, r := range p.Replicas {
			if _, ok := load[r]; ok {
				load[r]++
			}
		}
	}
	var out []Partition
	for _, p := range parts {
		i := slices.Index(p.Replicas, node)
		if i < 0 {
			continue
		}
		best := int32(-1)
		for id, n := range load {
			if slices.Contains(p.Replicas, id) {
				continue
			}
			if best < 0 || n < load[best] || n == load[best] && id < best {
				best = id
			}
		}
		if best < 0 {
			return nil, fmt.Errorf("%w: %s[%d] has replicas %v", ErrNoTarget, p.Topic, p.Partition, p.Replicas)
		}
		load[best]++
		replicas := slices.Clone(p.Replicas)
		replicas[i] = best
		out = append(out, Partition{Topic: p.Topic, Partition: p.Partition, Replicas: replicas})
	}
	return out, nil
}
