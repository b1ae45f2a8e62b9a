package broker

import (
	"github.com/minikafka/minikafka-go/broker/coordhost"
	"github.com/minikafka/minikafka-go/broker/kafkabackend"
)

// backendReplica looks up a replica for the Kafka backend
// (kafkabackend.Deps.Replica).
func (n *Node) backendReplica(topic string, p int32) (kafkabackend.Replica, bool) {
	lr, ok := n.reps.Get(topic, p)
	if !ok {
		return nil, false
	}
	return backendReplica{lr}, true
}

// backendReplica is a replica with its partition-verification memory, as
// the Kafka backend sees it (kafkabackend.Replica).
type backendReplica struct{ *coordhost.Replica }

var _ kafkabackend.Replica = backendReplica{}

// Verified is the replica's memory of verified transactions.
func (r backendReplica) Verified() kafkabackend.Verified { return r.Extra().Verified() }
