package groupcoord

import "slices"

// Reconciliation of a member's current assignment towards its target, as
// Kafka's CurrentAssignmentBuilder does it: a member first revokes the
// partitions it must give up (staying in its epoch, state
// UNREVOKED_PARTITIONS), then moves to the target epoch and is given the
// target's partitions that no other member still holds; those it must
// wait for leave it UNRELEASED_PARTITIONS until their owner lets go.

// ownerEpochs maps each partition held (assigned or being revoked) by a
// member of g other than except to that member's epoch.
func ownerEpochs(g *ConsumerGroup, except string) map[TopicID]map[int32]int32 {
	out := make(map[TopicID]map[int32]int32)
	add := func(a Assignment, epoch int32) {
		for id, ps := range a {
			if out[id] == nil {
				out[id] = make(map[int32]int32)
			}
			for _, p := range ps {
				out[id][p] = epoch
			}
		}
	}
	for id, m := range g.Members {
		if id != except {
			add(m.Assigned, m.Epoch)
			add(m.Revoking, m.Epoch)
		}
	}
	return out
}

// reconcile returns m's next current assignment (a changed copy, or m
// itself) given the group's target epoch and the partitions the member
// says it owns (nil: it did not say).
func reconcile(g *ConsumerGroup, m *ConsumerMember, owned Assignment) *ConsumerMember {
	switch m.State {
	case memberUnrevokedPartitions:
		if ownsAny(owned, m.Revoking) {
			return m
		}
		return nextAssignment(g, m, min(m.Epoch+1, g.TargetEpoch), owned)
	case memberUnreleasedPartitions:
		return nextAssignment(g, m, m.Epoch, owned)
	default:
		if m.Epoch != g.TargetEpoch {
			return nextAssignment(g, m, m.Epoch, owned)
		}
		return m
	}
}

// nextAssignment is CurrentAssignmentBuilder.computeNextAssignment.
func nextAssignment(g *ConsumerGroup, m *ConsumerMember, epoch int32, owned Assignment) *ConsumerMember {
	owners := ownerEpochs(g, m.ID)
	assigned, revoking, pending := make(Assignment), make(Assignment), make(Assignment)
	unreleased := false
	topics := make(map[TopicID]bool)
	for id := range m.Target {
		topics[id] = true
	}
	for id := range m.Assigned {
		topics[id] = true
	}
	for id := range topics {
		target, cur := m.Target[id], m.Assigned[id]
		for _, p := range cur {
			if slices.Contains(target, p) {
				assigned[id] = append(assigned[id], p)
			} else {
				revoking[id] = append(revoking[id], p)
			}
		}
		for _, p := range target {
			if slices.Contains(cur, p) {
				continue
			}
			if _, held := owners[id][p]; held {
				unreleased = true
			} else {
				pending[id] = append(pending[id], p)
			}
		}
	}
	next := m.clone()
	next.Revoking = nil
	switch {
	case len(revoking) > 0 && ownsAny(owned, revoking):
		next.State, next.Epoch = memberUnrevokedPartitions, epoch
		next.Assigned, next.Revoking = assigned, revoking
	default:
		for id, ps := range pending {
			assigned[id] = append(assigned[id], ps...)
			slices.Sort(assigned[id])
		}
		next.State = memberStable
		if unreleased {
			next.State = memberUnreleasedPartitions
		}
		next.Epoch, next.Assigned = g.TargetEpoch, assigned
	}
	if next.Epoch != m.Epoch {
		next.PrevEpoch = m.Epoch
	}
	return next
}

// ownsAny reports whether a member that says it owns owned (nil: did not
// say, so assumed to own everything) still holds any of revoked.
func ownsAny(owned, revoked Assignment) bool {
	if owned == nil {
		return len(revoked) > 0
	}
	for id, ps := range revoked {
		for _, p := range ps {
			if slices.Contains(owned[id], p) {
				return true
			}
		}
	}
	return false
}

// sameAssignment reports whether a and b hold the same partitions.
func sameAssignment(a, b Assignment) bool {
	n := 0
	for id, ps := range a {
		if len(ps) == 0 {
			continue
		}
		n++
		if !slices.Equal(ps, b[id]) {
			return false
		}
	}
	for _, ps := range b {
		if len(ps) > 0 {
			n--
		}
	}
	return n == 0
}

// isSubset reports whether every partition of a is in b.
func isSubset(a, b Assignment) bool {
	for id, ps := range a {
		for _, p := range ps {
			if !slices.Contains(b[id], p) {
				return false
			}
		}
	}
	return true
}

// sameMember reports whether two current assignments are equal.
func sameCurrent(a, b *ConsumerMember) bool {
	return a.Epoch == b.Epoch && a.PrevEpoch == b.PrevEpoch && a.State == b.State &&
		sameAssignment(a.Assigned, b.Assigned) && sameAssignment(a.Revoking, b.Revoking)
}
