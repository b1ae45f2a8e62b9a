package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker/coordhost"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/topicconfig"
)

// newCoordHost makes the node's coordinator host (coordhost.New) with the
// narrow parts of the node it needs.
func (n *Node) newCoordHost() *coordhost.Host {
	c := n.cfg
	return coordhost.New(n.ctx, coordhost.Config{
		NodeID:                         c.NodeID,
		GroupMinSessionTimeout:         c.GroupMinSessionTimeout,
		GroupMaxSessionTimeout:         c.GroupMaxSessionTimeout,
		GroupInitialRebalanceDelay:     c.GroupInitialRebalanceDelay,
		GroupConsumer:                  c.GroupConsumer,
		GroupShare:                     c.GroupShare,
		TxnMaxTimeout:                  c.TxnMaxTimeout,
		TxnAbortInterval:               c.TxnAbortInterval,
		TxnPartitionVerification:       c.TxnPartitionVerification,
		TxnPendingOffsetsCheckInterval: c.TxnPendingOffsetsCheckInterval,
		OffsetsRetention:               c.OffsetsRetention,
		Tuning: coordhost.Tuning{Proposal: c.Tuning.ProduceEnqueue, Request: c.Tuning.MetaProposal,
			LoadWait: c.Tuning.CoordinatorLoadWait, SettleRetry: c.Tuning.LeaderReportRetry},
	}, coordhost.Deps{
		Meta:            n.meta,
		PartitionLeader: n.PartitionLeader,
		// The replica host is made after the coordinators, whose
		// callbacks it takes; the coordinators reach it only once it runs.
		Replica: func(topic string, p int32) (*localReplica, bool) { return n.reps.Get(topic, p) },
		// The backend is made right after the coordinators, whose
		// coordinators it looks up; these run once a coordinator does.
		Verifier:                  lateVerifier(func() kafkaapi.TxnVerifier { return n.backend }),
		OffsetsPartition:          func(ctx context.Context, group string) (int32, error) { return n.backend.OffsetsPartition(ctx, group) },
		TransactionalIDExpiration: n.TransactionalIDExpiration,
		ClientOpts:                func() []kgo.Opt { return n.cfg.Security.interBrokerOpts() },
		Logger:                    n.logger,
	})
}

// TransactionalIDExpiration is transactional.id.expiration.ms: the cluster
// -wide dynamic default, else the node's static value, else Kafka's.
func (n *Node) TransactionalIDExpiration() time.Duration {
	return time.Duration(topicconfig.TransactionalIDExpirationMs(n.clusterConfigs(), n.static)) * time.Millisecond
}

// lateVerifier is a kafkaapi.TxnVerifier made before the one it calls: the
// node's backend, which needs the coordinators first.
type lateVerifier func() kafkaapi.TxnVerifier

func (v lateVerifier) VerifyTxnPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []kafkaapi.TopicPartition) []error {
	return v().VerifyTxnPartitions(ctx, id, pid, epoch, parts)
}
