package metadata

import (
	"errors"
	"slices"
	"testing"
)

// moving is cluster3 plus broker 4 and a topic whose partition 0 is on
// 1, 2, 3 with leader 1.
func moving(t *testing.T) *Snapshot {
	t.Helper()
	return must(t, cluster3(t), broker(4),
		CreateTopic{Name: "t", Partitions: 2, ReplicationFactor: 3, Assignment: [][]int32{{1, 2, 3}, {2, 3, 1}}},
		SetPartitionLeader{Topic: "t", Partition: 0, Leader: 1, Epoch: 2})
}

func TestAlterReassignment(t *testing.T) {
	s := moving(t)
	next, res, err := step(t, s, AlterReassignment{Topic: "t", Partition: 0, Target: []int32{4, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.(Reassignment)
	if !slices.Equal(r.Original, []int32{1, 2, 3}) || !slices.Equal(r.Target, []int32{4, 2, 3}) ||
		!slices.Equal(r.Adding(), []int32{4}) || !slices.Equal(r.Removing(), []int32{1}) {
		t.Fatalf("result %+v adding %v removing %v", r, r.Adding(), r.Removing())
	}
	p, _ := next.Partition("t", 0)
	if !slices.Equal(p.Replicas, []int32{4, 2, 3, 1}) || p.Leader != 1 {
		t.Fatalf("replicas during the move %v leader %d, want [4 2 3 1] leader 1", p.Replicas, p.Leader)
	}
	if !slices.Contains(next.PartitionsOn(4), (TopicPartition{"t", 0})) || !slices.Contains(next.PartitionsOn(1), (TopicPartition{"t", 0})) {
		t.Fatal("both the adding and the removing broker must run the group during the move")
	}
	if got := next.Reassignments(); len(got) != 1 || got[0].TopicPartition != (TopicPartition{"t", 0}) {
		t.Fatalf("Reassignments() = %+v", got)
	}

	// Changing the target keeps the original; going back to it ends the move.
	changed := must(t, next, AlterReassignment{Topic: "t", Partition: 0, Target: []int32{2, 4, 1}})
	if r, _ := changed.Reassignment("t", 0); !slices.Equal(r.Original, []int32{1, 2, 3}) {
		t.Fatalf("original after a change %v", r.Original)
	}
	if p, _ := changed.Partition("t", 0); !slices.Equal(p.Replicas, []int32{2, 4, 1, 3}) {
		t.Fatalf("replicas after a change %v", p.Replicas)
	}
	back := must(t, changed, AlterReassignment{Topic: "t", Partition: 0, Target: []int32{1, 2, 3}})
	if _, ok := back.Reassignment("t", 0); ok {
		t.Fatal("a target equal to the original replicas left a move")
	}

	// Cancelling restores the original replicas.
	cancelled := must(t, next, AlterReassignment{Topic: "t", Partition: 0})
	if p, _ := cancelled.Partition("t", 0); !slices.Equal(p.Replicas, []int32{1, 2, 3}) || len(cancelled.Reassignments()) != 0 {
		t.Fatalf("after cancel: replicas %v, moves %v", p.Replicas, cancelled.Reassignments())
	}

	// Completing sets the target and forgets a leader that left.
	done := must(t, next, CompleteReassignment{Topic: "t", Partition: 0, Target: []int32{4, 2, 3}})
	p, _ = done.Partition("t", 0)
	if !slices.Equal(p.Replicas, []int32{4, 2, 3}) || p.Leader != NoLeader || p.LeaderEpoch != 2 || len(done.Reassignments()) != 0 {
		t.Fatalf("after completion: %+v, moves %v", p, done.Reassignments())
	}
	if slices.Contains(done.PartitionsOn(1), (TopicPartition{"t", 0})) {
		t.Fatal("broker 1 still runs the group after the move")
	}
	// A later leader report works; one for the forgotten leader's epoch by another node conflicts no more than before.
	must(t, done, SetPartitionLeader{Topic: "t", Partition: 0, Leader: 4, Epoch: 3})
}

func TestAlterReassignmentErrors(t *testing.T) {
	s := moving(t)
	inMove := must(t, s, AlterReassignment{Topic: "t", Partition: 0, Target: []int32{4, 2, 3}})
	for _, tc := range []struct {
		name  string
		state *Snapshot
		cmd   Command
		want  error
	}{
		{"unknown topic", s, AlterReassignment{Topic: "x", Target: []int32{1, 2, 3}}, ErrUnknownTopicOrPartition},
		{"unknown partition", s, AlterReassignment{Topic: "t", Partition: 2, Target: []int32{1, 2, 3}}, ErrUnknownTopicOrPartition},
		{"negative partition", s, AlterReassignment{Topic: "t", Partition: -1, Target: []int32{1, 2, 3}}, ErrUnknownTopicOrPartition},
		{"unknown broker", s, AlterReassignment{Topic: "t", Target: []int32{1, 2, 9}}, ErrUnknownBroker},
		{"duplicate", s, AlterReassignment{Topic: "t", Target: []int32{1, 2, 2}}, ErrDuplicateReplica},
		{"other replication factor", s, AlterReassignment{Topic: "t", Target: []int32{1, 2, 3, 4}}, ErrReplicaCount},
		{"empty", s, AlterReassignment{Topic: "t", Target: []int32{}}, ErrInvalidReplicaAssignment},
		{"cancel without a move", s, AlterReassignment{Topic: "t"}, ErrNoReassignment},
		{"complete without a move", s, CompleteReassignment{Topic: "t", Target: []int32{1, 2, 3}}, ErrNoReassignment},
		{"complete another target", inMove, CompleteReassignment{Topic: "t", Target: []int32{1, 2, 4}}, ErrReassignmentChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := step(t, tc.state, tc.cmd); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestReassignmentsOfDeletedTopicGo(t *testing.T) {
	s := must(t, moving(t), AlterReassignment{Topic: "t", Partition: 1, Target: []int32{2, 3, 4}}, DeleteTopic{Name: "t"})
	if len(s.Reassignments()) != 0 {
		t.Fatalf("moves of a deleted topic: %v", s.Reassignments())
	}
}

// CreatePartitions keeps the topic's replication factor while partition 0
// moves, and the snapshot of a state in the middle of moves reads back.
func TestReassignmentKeepsReplicationFactor(t *testing.T) {
	s := must(t, moving(t), AlterReassignment{Topic: "t", Partition: 0, Target: []int32{4, 2, 3}},
		CreatePartitions{Topic: "t", Count: 3, Assignment: [][]int32{{3, 4, 1}}})
	if _, _, err := step(t, s, CreatePartitions{Topic: "t", Count: 4, Assignment: [][]int32{{3, 4, 1, 2}}}); !errors.Is(err, ErrReplicaCount) {
		t.Fatalf("4 replicas while the topic has 3: err = %v", err)
	}
	b, _ := s.MarshalBinary()
	got, err := DecodeSnapshot(b)
	if err != nil || !got.Equal(s) {
		t.Fatalf("round trip: %v", err)
	}
}
