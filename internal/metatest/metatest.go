// Package metatest builds metadata states for tests: three registered
// brokers and topics whose replicas rotate over them, without a
// controller.
package metatest

import (
	"testing"

	"github.com/minikafka/minikafka-go/metadata"
)

// Topic is a topic to create: its name and partition count.
type Topic struct {
	Name       string
	Partitions int
}

// State is a state with brokers 1-3 registered, the topics created in
// order (partition i's replicas i%3+1 and the next two), then more
// applied.
func State(t testing.TB, topics []Topic, more ...metadata.Command) *metadata.Snapshot {
	t.Helper()
	cmds := []metadata.Command{
		metadata.InitCluster{ClusterID: "c"},
		metadata.RegisterBroker{ID: 1, KafkaAddr: "127.0.0.1:1", RaftAddr: "127.0.0.1:2"},
		metadata.RegisterBroker{ID: 2, KafkaAddr: "127.0.0.1:3", RaftAddr: "127.0.0.1:4"},
		metadata.RegisterBroker{ID: 3, KafkaAddr: "127.0.0.1:5", RaftAddr: "127.0.0.1:6"},
	}
	for _, tp := range topics {
		assignment := make([][]int32, tp.Partitions)
		for i := range assignment {
			assignment[i] = []int32{int32(i%3 + 1), int32((i+1)%3 + 1), int32((i+2)%3 + 1)}
		}
		cmds = append(cmds, metadata.CreateTopic{Name: tp.Name, Partitions: int32(tp.Partitions), ReplicationFactor: 3,
			Assignment: assignment})
	}
	s := &metadata.Snapshot{}
	for i, c := range append(cmds, more...) {
		var err error
		if s, _, err = s.Apply(uint64(i+1), c); err != nil {
			t.Fatalf("Apply(%#v): %v", c, err)
		}
	}
	return s
}
