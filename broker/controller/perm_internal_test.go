package controller

import (
	"errors"
	"fmt"
	"testing"

	"github.com/minikafka/minikafka-go/metadata"
)

// unknownCommand is a command peers never send.
type unknownCommand struct{ metadata.Command }

// Each command a peer may forward, about itself (node 2) and about another
// node (3), from node 2 and from a peer without a certificate.
func TestPeerMayPropose(t *testing.T) {
	tid := "tx"
	cases := []struct {
		cmd         metadata.Command
		node2OK     bool // allowed from the peer whose certificate names node 2
		unsecuredOK bool // allowed from a peer without a certificate (no mutual TLS)
	}{
		{metadata.InitCluster{ClusterID: "c"}, true, true},
		{metadata.AllocateProducerID{}, true, true},
		{metadata.AllocateProducerID{TransactionalID: &tid}, true, true},
		{metadata.CreateTopic{Name: "t", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{3}}}, true, true},
		{metadata.CreatePartitions{Topic: "t", Count: 2, Assignment: [][]int32{{3}}}, true, true},
		{metadata.DeleteTopic{Name: "t"}, true, true},
		{metadata.AlterConfigs{Resource: metadata.ConfigTopic, Topic: "t"}, true, true},
		{metadata.AlterScramCredentials{}, true, true},
		{metadata.RegisterBroker{ID: 2, KafkaAddr: "h:1", RaftAddr: "h:2"}, true, true},
		{metadata.RegisterBroker{ID: 3, KafkaAddr: "h:1", RaftAddr: "h:2"}, false, true},
		{metadata.SetPartitionLeader{Topic: "t", Leader: 2, Epoch: 1}, true, true},
		{metadata.SetPartitionLeader{Topic: "t", Leader: 3, Epoch: 1}, false, true},
		{metadata.SetPartitionLeaders{Reports: []metadata.SetPartitionLeader{{Topic: "t", Leader: 2, Epoch: 1}, {Topic: "u", Leader: 2}}}, true, true},
		{metadata.SetPartitionLeaders{Reports: []metadata.SetPartitionLeader{{Topic: "t", Leader: 2, Epoch: 1}, {Topic: "u", Leader: 3}}}, false, true},
		{metadata.CreateACLs{}, true, true},
		{metadata.DeleteACLs{}, true, true},
		{metadata.AlterReassignment{Topic: "t", Target: []int32{3, 4, 5}}, true, true},
		{metadata.CompleteReassignment{Topic: "t", Target: []int32{4, 2, 5}}, true, true},
		{metadata.CompleteReassignment{Topic: "t", Target: []int32{3, 4, 5}}, false, true},
		{metadata.ReplicasRemoved{Broker: 2}, true, true},
		{metadata.ReplicasRemoved{Broker: 3}, false, true},
		{metadata.SetProducerIDKey{Key: make([]byte, metadata.ProducerIDKeySize)}, false, false},
		{metadata.CreateDelegationToken{}, true, true},
		{metadata.UpdateDelegationToken{TokenID: "x"}, true, true},
		{metadata.ExpireDelegationTokens{NowMs: 1}, false, false}, // the leader's own clock only
		{metadata.AlterClientQuotas{}, true, true},
		{unknownCommand{}, false, false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%T%+v", c.cmd, c.cmd), func(t *testing.T) {
			if err := peerMayPropose(2, c.cmd); (err == nil) != c.node2OK {
				t.Errorf("from node 2: %v", err)
			} else if err != nil && !errors.Is(err, ErrPeerNotPermitted) {
				t.Errorf("from node 2: %v does not wrap ErrPeerNotPermitted", err)
			}
			if err := peerMayPropose(0, c.cmd); (err == nil) != c.unsecuredOK {
				t.Errorf("from an unauthenticated peer: %v", err)
			}
		})
	}
}
