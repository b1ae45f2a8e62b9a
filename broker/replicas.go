package broker

import (
	"github.com/minikafka/minikafka-go/broker/replicas"
	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/partition"
	"github.com/minikafka/minikafka-go/txncoord"
)

// tp names a partition.
type tp struct {
	topic     string
	partition int32
}

// localReplica is one of the node's partition replicas (broker/replicas),
// with what the coordinators keep of it.
type localReplica = replicas.Replica[replicaState]

// replicaState is the node's own state of a replica, filled as it opens
// (attachReplica).
type replicaState struct {
	// view is the materialised view of a __consumer_offsets replica's
	// records (nil for other topics), which its coordinator serves from.
	view *groupcoord.View
	// txnView is the materialised view of a __transaction_state
	// replica's records (nil for other topics).
	txnView *txncoord.View
	// txnVerified remembers, while this node leads, the transactions
	// verified to hold the partition (txnverified.go).
	txnVerified txnVerified
}

// PartitionGroup is the name of the Raft group of partition p of the topic
// whose id is topicID (metadata.TopicID's String form).
func PartitionGroup(topicID string, p int32) string { return replicas.PartitionGroup(topicID, p) }

// newReplicaSet makes the node's replica host, wired to the node's parts.
func (n *Node) newReplicaSet() *replicas.Set[replicaState] {
	c := n.cfg
	return replicas.New(n.ctx, replicas.Config{
		NodeID: c.NodeID, Dir: n.partitionsDir(), Raft: c.PartitionRaft, LogStore: c.PartitionLogStore,
		SegmentBytes: c.SegmentBytes, FS: c.PartitionFS, MaxOpenFiles: c.PartitionMaxOpenFiles,
		ProducerWindow: c.ProducerWindow, MaxProducers: c.MaxProducers,
		Tuning: replicas.Tuning{ReconcileRetry: c.Tuning.ReconcileRetry, OpenParallelism: c.Tuning.OpenParallelism,
			ReassignInterval: c.Tuning.ReassignInterval, ReassignStep: c.Tuning.ReassignStep,
			Proposal: c.Tuning.ProduceEnqueue},
	}, replicas.Deps[replicaState]{
		Host:         n.host,
		Meta:         n.meta,
		TopicConfig:  n.TopicConfig,
		Resolve:      n.addrs.resolve,
		Attach:       attachReplica,
		OnLeader:     n.onReplicaLeader,
		Admit:        n.admitBatch,
		SnapshotRoom: n.disk.Admit,
		OnFsync:      n.metrics.ObserveFsync,
		Logger:       n.logger,
	})
}

// attachReplica gives a replica of an internal topic the view its records
// build, and returns the sink that feeds it.
func attachReplica(lr *localReplica) partition.RecordSink {
	st := lr.Extra()
	switch topic, _ := lr.TopicPartition(); topic {
	case metadata.ConsumerOffsetsTopic:
		st.view = groupcoord.NewView()
		return viewSink{view: st.view, logger: lr.Logger()}
	case metadata.TransactionStateTopic:
		st.txnView = txncoord.NewView()
		return txnViewSink{view: st.txnView, logger: lr.Logger()}
	}
	return nil
}

// onReplicaLeader hands a change of this node's leadership of an internal
// topic's replica to its coordinators; it runs on the replica's goroutine.
func (n *Node) onReplicaLeader(lr *localReplica, leader bool, term uint64) {
	if lr.Extra().view != nil {
		n.coords.leadership(lr, leader, term)
	}
	if lr.Extra().txnView != nil {
		n.txns.leadership(lr, leader, term)
	}
}
