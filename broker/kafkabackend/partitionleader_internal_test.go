package kafkabackend

import (
	"context"
	"testing"

	"github.com/minikafka/minikafka-go/broker/controller"
	"github.com/minikafka/minikafka-go/internal/metatest"
	"github.com/minikafka/minikafka-go/membership"
	"github.com/minikafka/minikafka-go/metadata"
)

// stateMeta is a Metadata that only holds a state.
type stateMeta struct{ s *metadata.Snapshot }

func (m stateMeta) State() *metadata.Snapshot { return m.s }
func (m stateMeta) LeaderID() int32           { return 1 }
func (m stateMeta) Propose(context.Context, metadata.Command) (controller.Reply, error) {
	return controller.Reply{}, nil
}
func (m stateMeta) WaitFor(context.Context, func(*metadata.Snapshot) bool) (*metadata.Snapshot, error) {
	return m.s, nil
}
func (m stateMeta) NewProducerID(context.Context) (metadata.ProducerIdentity, error) {
	return metadata.ProducerIdentity{}, nil
}

// leaderBackend is a Backend on a three-broker state with topic "big" of
// n partitions, partition i led by broker i%4 (0: none reported), and
// brokers 1 and 2 alive.
func leaderBackend(t testing.TB, n int) *Backend {
	t.Helper()
	var leaders []metadata.Command
	for i := range n {
		if l := int32(i % 4); l > 0 {
			leaders = append(leaders, metadata.SetPartitionLeader{Topic: "big", Partition: int32(i), Leader: l, Epoch: int32(i + 1)})
		}
	}
	s := metatest.State(t, []metatest.Topic{{Name: "big", Partitions: n}}, leaders...)
	return New(Config{NodeID: 1}, Deps{
		Meta:    stateMeta{s},
		Members: func() []membership.NodeMeta { return []membership.NodeMeta{{ID: 1}, {ID: 2}} },
		Replica: func(string, int32) (Replica, bool) { return nil, false },
	})
}

// PartitionLeader answers what Cluster shows for every partition: the
// reported leader while gossip sees it alive, none for a dead leader, an
// unreported one, a partition out of range or an unknown topic.
func TestPartitionLeaderAgreesWithCluster(t *testing.T) {
	const n = 40
	b := leaderBackend(t, n)
	shown := map[int32][2]int32{}
	for _, tv := range b.Cluster().Topics {
		for _, pv := range tv.Partitions {
			shown[pv.Partition] = [2]int32{pv.Leader, pv.LeaderEpoch}
		}
	}
	for i := range int32(n) {
		leader, epoch, ok := b.PartitionLeader("big", i)
		want := shown[i]
		if ok != (want[0] >= 0) || (ok && (leader != want[0] || epoch != want[1])) {
			t.Errorf("partition %d: %d epoch %d ok %v; Cluster shows %d epoch %d", i, leader, epoch, ok, want[0], want[1])
		}
		if wantOK := i%4 == 1 || i%4 == 2; ok != wantOK {
			t.Errorf("partition %d (leader %d reported, 1 and 2 alive): ok %v", i, i%4, ok)
		}
	}
	for _, c := range []struct {
		topic string
		p     int32
	}{{"big", -1}, {"big", n}, {"nope", 0}} {
		if l, _, ok := b.PartitionLeader(c.topic, c.p); ok || l != -1 {
			t.Errorf("%s/%d: leader %d ok %v, want -1 false", c.topic, c.p, l, ok)
		}
	}
}

// Coordinators look up a partition's leader for each transaction's
// verification and markers and each group request: the lookup must not
// build every partition's view (it did, through Cluster, and cost 2.6% of
// the servers' CPU at the transactional peak with 17 partitions).
func TestPartitionLeaderCostDoesNotGrowWithPartitions(t *testing.T) {
	small, big := leaderBackend(t, 8), leaderBackend(t, 2000)
	allocs := func(b *Backend) float64 {
		return testing.AllocsPerRun(50, func() { b.PartitionLeader("big", 5) })
	}
	if s, l := allocs(small), allocs(big); l > s {
		t.Fatalf("%v allocations per lookup at 2000 partitions, %v at 8", l, s)
	}
}

// BenchmarkPartitionLeader: the lookup against finding the partition in
// Cluster's view, at 2000 partitions.
func BenchmarkPartitionLeader(b *testing.B) {
	be := leaderBackend(b, 2000)
	b.Run("cluster-view", func(b *testing.B) {
		for b.Loop() {
			for _, tv := range be.Cluster().Topics {
				for _, pv := range tv.Partitions {
					if pv.Partition == 5 {
						break
					}
				}
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			be.PartitionLeader("big", 5)
		}
	})
}
