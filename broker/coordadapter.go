package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker/kafkabackend"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metrics"
	"github.com/minikafka/minikafka-go/partition"
	"github.com/minikafka/minikafka-go/topicconfig"
	"github.com/minikafka/minikafka-go/txncoord"
)

// coordAdapter gives the Kafka backend the node's coordinators
// (kafkabackend.Coordinators). It is replaced by coordhost.Host, which has
// these methods, when coordinator hosting leaves broker.
type coordAdapter struct {
	coords *coordinators
	txns   *txnCoordinators
}

var _ kafkabackend.Coordinators = coordAdapter{}

func (a coordAdapter) Group(ctx context.Context, p int32) (kafkaapi.GroupCoordinator, error) {
	c, err := a.coords.get(ctx, p)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (a coordAdapter) Groups() ([]kafkaapi.GroupCoordinator, error) { return a.coords.all() }

func (a coordAdapter) Txn(ctx context.Context, p int32) (*txncoord.Coordinator, error) {
	return a.txns.get(ctx, p)
}

func (a coordAdapter) Txns() ([]kafkaapi.TxnCoordinator, error) { return a.txns.all() }

func (a coordAdapter) NodeClient(node int32) (*kgo.Client, error) { return a.txns.markers.client(node) }

// backendReplica looks up a replica for the Kafka backend
// (kafkabackend.Deps.Replica).
func (n *Node) backendReplica(topic string, p int32) (kafkabackend.Replica, bool) {
	lr, ok := n.reps.Get(topic, p)
	if !ok {
		return nil, false
	}
	return replicaAdapter{lr}, true
}

// replicaAdapter gives the Kafka backend a replica with its transaction
// verifications (kafkabackend.Replica). It is replaced by coordhost's
// per-replica state, which has these methods, when coordinator hosting
// leaves broker.
type replicaAdapter struct{ lr *localReplica }

var _ kafkabackend.Replica = replicaAdapter{}

func (r replicaAdapter) Partition() *partition.Replica { return r.lr.Partition() }
func (r replicaAdapter) Config() topicconfig.Config    { return r.lr.Config() }
func (r replicaAdapter) Traffic() *metrics.Traffic     { return r.lr.Traffic() }
func (r replicaAdapter) Verified() kafkabackend.Verified {
	return verifiedAdapter{&r.lr.Extra().txnVerified}
}

// verifiedAdapter is a replica's txnVerified as kafkabackend.Verified.
type verifiedAdapter struct{ v *txnVerified }

var _ kafkabackend.Verified = verifiedAdapter{}

func (a verifiedAdapter) Check(leaderEpoch int32, pid int64, epoch int16) (bool, kafkaapi.TxnGuard) {
	return a.v.check(leaderEpoch, pid, epoch)
}

func (a verifiedAdapter) Produce(leaderEpoch int32, pid int64, epoch int16, guard kafkaapi.TxnGuard, propose func()) error {
	return a.v.produce(leaderEpoch, pid, epoch, guard, propose)
}

func (a verifiedAdapter) Marker(pid int64, propose func()) { a.v.marker(pid, propose) }
