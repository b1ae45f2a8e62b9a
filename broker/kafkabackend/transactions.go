package kafkabackend

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/txncoord"
)

// Transactions. Transactional id T's coordinator is the leader of
// partition metadata.TxnPartition(T, n) of the internal topic
// __transaction_state, which the cluster creates the first time a client
// looks for a transaction coordinator. Its partitions are Raft groups like
// any other; their FSMs feed a materialised view of transaction metadata
// (txncoord.View), so a new leader coordinates at once.

// txnPartition returns the partition of __transaction_state that holds a
// transactional id, creating the topic on first need (until then
// COORDINATOR_NOT_AVAILABLE, which clients retry).
func (b *Backend) txnPartition(ctx context.Context, id string) (int32, error) {
	n, err := b.internalPartitions(ctx, metadata.TransactionStateTopic, b.cfg.TxnTopicPartitions, b.cfg.TxnTopicReplicationFactor)
	if err != nil {
		return -1, err
	}
	return metadata.TxnPartition(id, n), nil
}

// internalPartitions is the partition count of the internal topic name,
// which it creates on first need with parts partitions and replication
// factor rf; COORDINATOR_NOT_AVAILABLE until the topic exists.
func (b *Backend) internalPartitions(ctx context.Context, name string, parts int32, rf int16) (int32, error) {
	if n, ok := b.deps.Meta.State().TopicPartitions(name); ok {
		return n, nil
	}
	if err := b.createInternalTopic(ctx, name, parts, rf); err != nil {
		return -1, fmt.Errorf("%w: creating %s: %w", kerr.CoordinatorNotAvailable, name, err)
	}
	n, ok := b.deps.Meta.State().TopicPartitions(name)
	if !ok {
		return -1, fmt.Errorf("%w: %s is being created", kerr.CoordinatorNotAvailable, name)
	}
	return n, nil
}

// createInternalTopic creates an internal topic with parts partitions and
// replication factor rf capped by the brokers alive now. A concurrent
// creation by another request or node is success.
func (b *Backend) createInternalTopic(ctx context.Context, name string, parts int32, rf int16) error {
	state := b.deps.Meta.State()
	rf = min(rf, int16(len(b.liveBrokers(state))))
	if rf < 1 {
		return fmt.Errorf("%w: no live brokers", kerr.CoordinatorNotAvailable)
	}
	cmd, err := b.placeTopic(state, name, parts, rf)
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, b.cfg.MetaProposal)
		defer cancel()
		_, err = b.deps.Meta.Propose(pctx, cmd)
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return nil
	}
	return err
}

// TxnCoordinatorNode is the node that coordinates a transactional id now:
// the leader of its __transaction_state partition.
func (b *Backend) TxnCoordinatorNode(ctx context.Context, id string) (int32, error) {
	p, err := b.txnPartition(ctx, id)
	if err != nil {
		return -1, err
	}
	leader, _, ok := b.deps.PartitionLeader(metadata.TransactionStateTopic, p)
	if !ok {
		return -1, fmt.Errorf("%w: %s-%d has no leader yet", kerr.CoordinatorNotAvailable, metadata.TransactionStateTopic, p)
	}
	return leader, nil
}

// TxnCoordinator returns this node's coordinator of a transactional id.
func (b *Backend) TxnCoordinator(ctx context.Context, id string) (kafkaapi.TxnCoordinator, error) {
	c, err := b.txnCoordinator(ctx, id)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// txnCoordinator returns this node's coordinator of a transactional id:
// NOT_COORDINATOR if __transaction_state does not exist or another node
// leads the id's partition.
func (b *Backend) txnCoordinator(ctx context.Context, id string) (*txncoord.Coordinator, error) {
	parts, ok := b.deps.Meta.State().TopicPartitions(metadata.TransactionStateTopic)
	if !ok {
		return nil, fmt.Errorf("%w: %s does not exist yet", kerr.NotCoordinator, metadata.TransactionStateTopic)
	}
	return b.deps.Coordinators.Txn(ctx, metadata.TxnPartition(id, parts))
}

// InitProducerID allocates an idempotent producer's id from the metadata
// group; a transactional id's InitProducerId goes to its coordinator,
// which must be this node (else NOT_COORDINATOR, as in Kafka).
func (b *Backend) InitProducerID(ctx context.Context, req kafkaapi.InitProducerIDRequest) (kafkaapi.ProducerIdentity, error) {
	if req.TransactionalID == nil {
		r, err := b.deps.Meta.NewProducerID(ctx)
		if err != nil {
			return kafkaapi.ProducerIdentity{}, err
		}
		return kafkaapi.ProducerIdentity{ID: r.ProducerID, Epoch: r.Epoch}, nil
	}
	id := *req.TransactionalID
	c, err := b.txnCoordinator(ctx, id)
	if err != nil {
		return kafkaapi.ProducerIdentity{}, err
	}
	pid, epoch, err := c.InitProducerID(ctx, id, req.TransactionTimeout, req.ProducerID, req.ProducerEpoch)
	if err != nil {
		return kafkaapi.ProducerIdentity{}, err
	}
	return kafkaapi.ProducerIdentity{ID: pid, Epoch: epoch}, nil
}

// TxnCoordinators returns every transaction coordinator this node runs.
func (b *Backend) TxnCoordinators() ([]kafkaapi.TxnCoordinator, error) {
	return b.deps.Coordinators.Txns()
}
