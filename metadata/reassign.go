package metadata

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Reassignment is a partition's move in progress (Kafka's
// AlterPartitionReassignments). While it lasts, the partition's Replicas
// are Target followed by the Original replicas not in Target, so that
// every node that must run the group during the move does; the partition
// leader changes the Raft group's members to Target (reassign.go in
// broker) and proposes CompleteReassignment.
type Reassignment struct {
	Original []int32 // the replicas before the move
	Target   []int32 // the replicas after it, preferred leader first
}

// Adding are the target replicas that were not replicas before.
func (r Reassignment) Adding() []int32 { return without(r.Target, r.Original) }

// Removing are the original replicas that the move takes away.
func (r Reassignment) Removing() []int32 { return without(r.Original, r.Target) }

// without returns the elements of a not in b, in a's order.
func without(a, b []int32) []int32 {
	var out []int32
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func (r Reassignment) clone() Reassignment {
	return Reassignment{Original: slices.Clone(r.Original), Target: slices.Clone(r.Target)}
}

func (r Reassignment) equal(o Reassignment) bool {
	return slices.Equal(r.Original, o.Original) && slices.Equal(r.Target, o.Target)
}

// PartitionReassignment is one partition's move, as Reassignments lists it.
type PartitionReassignment struct {
	TopicPartition
	Reassignment
	Replicas []int32 // the partition's Replicas now
}

// Reassignment returns a partition's move in progress.
func (s *Snapshot) Reassignment(topic string, partition int32) (Reassignment, bool) {
	r, ok := s.reassign[TopicPartition{topic, partition}]
	return r.clone(), ok
}

// Reassignments returns every move in progress, by topic then partition.
func (s *Snapshot) Reassignments() []PartitionReassignment {
	keys := make([]TopicPartition, 0, len(s.reassign))
	for k := range s.reassign {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareTopicPartitions)
	out := make([]PartitionReassignment, 0, len(keys))
	for _, k := range keys {
		p, _ := s.Partition(k.Topic, k.Partition)
		out = append(out, PartitionReassignment{TopicPartition: k, Reassignment: s.reassign[k].clone(), Replicas: p.Replicas})
	}
	return out
}

func compareTopicPartitions(a, b TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// Reassignment errors, next to the sentinels of errors.go.
var (
	// ErrNoReassignment: a cancellation, or a completion, of a partition
	// that is not being moved. [NO_REASSIGNMENT_IN_PROGRESS]
	ErrNoReassignment = errors.New("metadata: no reassignment in progress")
	// ErrReassignmentChanged: a CompleteReassignment for a target that is
	// no longer the partition's (the move was changed or cancelled since).
	ErrReassignmentChanged = errors.New("metadata: the reassignment's target changed")
)

// AlterReassignment starts, changes or (with Target nil) cancels the move
// of one partition. As in Kafka, changing a move in progress keeps its
// Original, a target equal to the current replicas with no move in
// progress changes nothing, and cancelling returns the partition to its
// Original replicas. The target must be as long as the topic's
// replication factor (this cluster does not change it by reassignment),
// with distinct registered brokers: an *AssignmentError otherwise.
//
// Result: the partition's Reassignment after the command (zero when none
// is left).
type AlterReassignment struct {
	Topic     string
	Partition int32
	Target    []int32
}

// CompleteReassignment ends a move whose Raft group now has exactly
// Target as voters; the partition's leader proposes it. A Target other
// than the move's fails with ErrReassignmentChanged.
//
// Result: nil.
type CompleteReassignment struct {
	Topic     string
	Partition int32
	Target    []int32
}

// Type implements Command.
func (AlterReassignment) Type() CommandType { return TypeAlterReassignment }

// Type implements Command.
func (CompleteReassignment) Type() CommandType { return TypeCompleteReassignment }

func (c AlterReassignment) appendBody(b []byte) []byte {
	b = appendString(b, c.Topic)
	b = appendI32(b, c.Partition)
	b = appendBool(b, c.Target != nil)
	return appendInt32s(b, c.Target)
}

func (c CompleteReassignment) appendBody(b []byte) []byte {
	b = appendString(b, c.Topic)
	b = appendI32(b, c.Partition)
	return appendInt32s(b, c.Target)
}

func decodeAlterReassignment(r *reader) AlterReassignment {
	c := AlterReassignment{Topic: r.str("topic"), Partition: r.i32("partition")}
	present := r.boolean("target present")
	target := readInt32s(r, "target")
	if present {
		c.Target = target
		if c.Target == nil {
			c.Target = []int32{}
		}
	}
	return c
}

// partitionOf returns a topic and its partition, or the error for either
// missing.
func (s *Snapshot) partitionOf(topic string, partition int32) (*Topic, error) {
	t, ok := s.topics[topic]
	if !ok {
		return nil, &UnknownTopicError{Topic: topic, Partition: -1}
	}
	if partition < 0 || int(partition) >= len(t.Partitions) {
		return nil, &UnknownTopicError{Topic: topic, Partition: partition}
	}
	return t, nil
}

// targetReplicas is where a partition's replicas are going: its move's
// Target, else its Replicas.
func (s *Snapshot) targetReplicas(topic string, t *Topic, partition int32) []int32 {
	if r, ok := s.reassign[TopicPartition{topic, partition}]; ok {
		return r.Target
	}
	return t.Partitions[partition].Replicas
}

func (s *Snapshot) alterReassignment(c AlterReassignment) (Reassignment, error) {
	t, err := s.partitionOf(c.Topic, c.Partition)
	if err != nil {
		return Reassignment{}, err
	}
	key := TopicPartition{c.Topic, c.Partition}
	cur, moving := s.reassign[key]
	original := t.Partitions[c.Partition].Replicas
	if moving {
		original = cur.Original
	}
	target := c.Target
	if target == nil {
		if !moving {
			return Reassignment{}, fmt.Errorf("%w: %s[%d]", ErrNoReassignment, c.Topic, c.Partition)
		}
		target = original
	}
	rf := len(s.targetReplicas(c.Topic, t, c.Partition))
	if err := s.checkReplicas([][]int32{target}, rf, c.Partition); err != nil {
		return Reassignment{}, err
	}
	replicas := slices.Concat(target, without(original, target))
	next := Reassignment{Original: slices.Clone(original), Target: slices.Clone(target)}
	done := slices.Equal(target, original)
	s.setReplicas(t, c.Partition, replicas)
	s.reassign = cloneMap(s.reassign)
	if done {
		delete(s.reassign, key)
		return Reassignment{}, nil
	}
	s.reassign[key] = next
	return next.clone(), nil
}

func (s *Snapshot) completeReassignment(c CompleteReassignment) (any, error) {
	t, err := s.partitionOf(c.Topic, c.Partition)
	if err != nil {
		return nil, err
	}
	key := TopicPartition{c.Topic, c.Partition}
	cur, ok := s.reassign[key]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: %s[%d]", ErrNoReassignment, c.Topic, c.Partition)
	case !slices.Equal(cur.Target, c.Target):
		return nil, fmt.Errorf("%w: %s[%d] is moving to %v, not %v", ErrReassignmentChanged, c.Topic, c.Partition, cur.Target, c.Target)
	}
	s.setReplicas(t, c.Partition, cur.Target)
	s.reassign = cloneMap(s.reassign)
	delete(s.reassign, key)
	return nil, nil
}

// setReplicas replaces a partition's replicas in a copy of its topic. A
// recorded leader that is no longer a replica is forgotten (its epoch
// stays, so that only a later term can report a leader).
func (s *Snapshot) setReplicas(t *Topic, partition int32, replicas []int32) {
	nt := *t
	nt.Partitions = slices.Clone(t.Partitions)
	p := &nt.Partitions[partition]
	p.Replicas = slices.Clone(replicas)
	if p.Leader != NoLeader && !slices.Contains(replicas, p.Leader) {
		p.Leader = NoLeader
	}
	s.topics = cloneMap(s.topics)
	s.topics[t.Name] = &nt
}

// dropReassignments forgets the moves of a deleted topic.
func (s *Snapshot) dropReassignments(topic string) {
	var gone []TopicPartition
	for k := range s.reassign {
		if k.Topic == topic {
			gone = append(gone, k)
		}
	}
	if len(gone) == 0 {
		return
	}
	s.reassign = cloneMap(s.reassign)
	for _, k := range gone {
		delete(s.reassign, k)
	}
}

// checkReassignments verifies that every move names a partition whose
// Replicas are its Target then the rest of its Original.
func (s *Snapshot) checkReassignments() error {
	for k, r := range s.reassign {
		p, ok := s.Partition(k.Topic, k.Partition)
		if !ok {
			return fmt.Errorf("reassignment of unknown partition %s[%d]", k.Topic, k.Partition)
		}
		if len(r.Target) == 0 || slices.Equal(r.Target, r.Original) ||
			!slices.Equal(p.Replicas, slices.Concat(r.Target, without(r.Original, r.Target))) {
			return fmt.Errorf("reassignment of %s[%d] %v does not match replicas %v", k.Topic, k.Partition, r, p.Replicas)
		}
	}
	return nil
}

// appendReassignments encodes the moves sorted by topic then partition.
func (s *Snapshot) appendReassignments(b []byte) []byte {
	rs := s.Reassignments()
	b = appendLen(b, len(rs))
	for _, r := range rs {
		b = appendString(b, r.Topic)
		b = appendI32(b, r.Partition)
		b = appendInt32s(b, r.Original)
		b = appendInt32s(b, r.Target)
	}
	return b
}

// readReassignments reads what appendReassignments wrote.
func readReassignments(r *reader) map[TopicPartition]Reassignment {
	n := r.length("reassignments", 16)
	if n == 0 {
		return nil
	}
	m := make(map[TopicPartition]Reassignment, n)
	var prev TopicPartition
	for i := range n {
		k := TopicPartition{Topic: r.str("topic"), Partition: r.i32("partition")}
		ra := Reassignment{Original: readInt32s(r, "original replicas"), Target: readInt32s(r, "target replicas")}
		if r.err != nil {
			break
		}
		if i > 0 && compareTopicPartitions(k, prev) <= 0 {
			r.fail("reassignment %v not after %v", k, prev)
		}
		m[k], prev = ra, k
	}
	return m
}
